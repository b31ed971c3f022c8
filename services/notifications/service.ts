/**
 * NotificationsService: the RPCs, thin — presentation here (request shapes are the
 * .proto's rules, checked before a handler runs: services/kit/rpc/validation.ts), the
 * behaviour in registration.ts, delivery-list.ts, delivery-replay.ts,
 * deletion-requests.ts, and for the partners' sandbox tools test-events.ts,
 * delivery-log.ts and delivery-resend.ts.
 */
import { listEvents } from './event-feed';
import type { EndpointChecks } from './endpoint-checks';
import { create } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Client, ServiceImpl } from '@connectrpc/connect';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import {
  BreakerStateSchema,
  DeletionRequestSchema,
  DeletionRequestStateSchema,
  DeliveryAttemptSchema,
  DeliverySchema,
  DeliveryStateSchema,
  EndpointHealthSchema,
  EndpointSchema,
  EndpointStatus,
  EndpointStatusSchema,
  type BreakerState,
  type DeletionRequestState,
  type DeliveryState,
  NotificationsService,
} from '../../gen/psync/notifications/v1/notifications_pb';
import type { Sql } from '../kit/db';
import { EnumNames } from '../kit/base';
import type { Logger } from '../kit/base';
import { DeletionRequests, stateOf } from './deletion-requests';
import { listDeliveries, type DeliveryListRow, type DeliveryStateName } from './delivery-list';
import { deliveryByEventId, deliveryLogPage, type DeliveryLogEntry } from './delivery-log';
import { replayDeliveries, replaySelection } from './delivery-replay';
import { resendDelivery } from './delivery-resend';
import { readEndpointHealth, type BreakerState as BreakerName, type EndpointHealthView } from './endpoint-health';
import { kindEnum, subscribableKind } from './envelope';
import type { EndpointRegistry, EndpointStatus as StatusName } from './registration';
import { triggerTestEvent } from './test-events';

/** The stored spellings (`pending_verification`, `half_open`, …) ↔ the protobuf enums, from their descriptors. */
const endpointStatuses = new EnumNames<EndpointStatus, StatusName>(EndpointStatusSchema);
const breakerStates = new EnumNames<BreakerState, BreakerName>(BreakerStateSchema);
const deliveryStates = new EnumNames<DeliveryState, DeliveryStateName>(DeliveryStateSchema);
const deletionStates = new EnumNames<DeletionRequestState, 'open' | 'acknowledged' | 'escalated'>(DeletionRequestStateSchema);

const ts = (d: Date | null) => (d ? timestampFromDate(d) : undefined);

/** An endpoint's delivery health as the EndpointHealth message. */
function healthMessage(h: EndpointHealthView) {
  return create(EndpointHealthSchema, {
    breaker: breakerStates.value(h.breaker),
    consecutiveFailures: h.consecutive_failures,
    notBefore: ts(h.not_before),
    holdReason: h.hold_reason ?? undefined,
    openedAt: ts(h.opened_at),
    lastFailureAt: ts(h.last_failure_at),
    lastFailureStatus: h.last_status ?? undefined,
    lastFailureError: h.last_error ?? undefined,
    lastSuccessAt: ts(h.last_success_at),
    pending: h.pending,
    due: h.due,
  });
}

const deliveryStateName = (s: DeliveryState): DeliveryStateName | undefined => deliveryStates.nameOf(s);

/** A delivery row as the Delivery message (ListDeliveries, ReplayDeliveries). */
function deliveryMessage(d: DeliveryListRow) {
  return create(DeliverySchema, {
    eventId: d.event_id,
    workspaceId: d.workspace_id,
    eventType: kindEnum(d.event_type),
    state: deliveryStates.value(d.state),
    attempts: d.attempts,
    lastStatus: d.last_status ?? undefined,
    lastError: d.last_error ?? undefined,
    nextAttemptAt: d.next_attempt_at ? timestampFromDate(d.next_attempt_at) : undefined,
    occurredAt: timestampFromDate(d.occurred_at),
    createdAt: timestampFromDate(d.created_at),
  });
}

/** A delivery with its attempts as the Delivery message (the partners' delivery log). */
function deliveryLogMessage(d: DeliveryLogEntry) {
  const m = deliveryMessage(d);
  m.test = d.test;
  m.attemptLogTotal = d.attempt_log_total;
  m.attemptLog = d.attempt_log.map((a) =>
    create(DeliveryAttemptSchema, {
      attemptedAt: timestampFromDate(a.attempted_at),
      responseStatus: a.response_status ?? undefined,
      durationMs: a.duration_ms ?? undefined,
      outcome: a.outcome,
      nextAttemptAt: ts(a.next_attempt_at),
    }),
  );
  return m;
}

export interface ServiceDeps {
  sql: Sql;
  /** The service's logger (replays log one line per delivery). */
  log: Logger;
  /** Undefined until the module has started (the RPCs then answer UNAVAILABLE). */
  registry: () => EndpointRegistry;
  deletionRequests: () => DeletionRequests;
  endpointChecks: () => EndpointChecks;
  /** The catalog (test events are about one of the workspace's listings). */
  catalog: () => Client<typeof CatalogService>;
  /** Wakes the dispatcher after a test event or resend was committed. */
  deliveriesQueued: () => void;
}

export function notificationsService(deps: ServiceDeps): Partial<ServiceImpl<typeof NotificationsService>> {
  return {
    async putEndpoint(req) {
      const r = await deps.registry().put(req.workspaceId, req.url, req.events);
      return { url: r.url, events: r.events.map(kindEnum), status: endpointStatuses.value(r.status), signingSecret: r.signingSecret };
    },

    async getEndpoint(req) {
      const e = await deps.registry().get(req.workspaceId);
      return {
        endpoint: create(EndpointSchema, {
          workspaceId: e.workspace_id,
          url: e.url,
          events: e.events.map(kindEnum),
          status: endpointStatuses.value(e.status),
          previousValidUntil: e.previous_valid_until ? timestampFromDate(e.previous_valid_until) : undefined,
          createdAt: timestampFromDate(e.created_at),
          updatedAt: timestampFromDate(e.updated_at),
        }),
        health: healthMessage(await readEndpointHealth(deps.sql, e.workspace_id)),
      };
    },

    async rotateSecret(req) {
      const r = await deps.registry().rotate(req.workspaceId, req.overlapSeconds);
      return { signingSecret: r.signingSecret, previousValidUntil: timestampFromDate(r.previousValidUntil) };
    },

    async listDeliveries(req) {
      const rows = await listDeliveries(deps.sql, req.workspaceId, req.state === undefined ? undefined : deliveryStateName(req.state));
      return { items: rows.map(deliveryMessage) };
    },

    async replayDeliveries(req) {
      const r = await replayDeliveries(deps.sql, deps.log, req.workspaceId, replaySelection(req.selection));
      return {
        items: r.items.map(deliveryMessage),
        notReplayable: r.notReplayable,
        endpointStatus: r.endpointStatus ? endpointStatuses.value(r.endpointStatus) : EndpointStatus.UNSPECIFIED,
      };
    },

    async triggerTestEvent(req) {
      const entry = await triggerTestEvent(
        { sql: deps.sql, log: deps.log, catalog: deps.catalog, queued: deps.deliveriesQueued },
        {
          workspaceId: req.workspaceId,
          listingId: req.listingId,
          eventType: req.eventType,
          bookingReference: req.bookingReference,
          checkIn: req.checkIn,
          checkOut: req.checkOut,
          initiatedBy: req.initiatedBy,
        },
      );
      return { delivery: deliveryLogMessage(entry) };
    },

    async listDeliveryLog(req) {
      // The filters' values and the paging bounds are the .proto's rules, checked before this runs.
      const kind = req.eventType === undefined ? undefined : subscribableKind(req.eventType);
      const state = req.state === undefined ? undefined : deliveryStateName(req.state);
      const page = await deliveryLogPage(deps.sql, req.workspaceId, { page: req.page, pageSize: req.pageSize, state, kind });
      return { items: page.items.map(deliveryLogMessage), hasMore: page.hasMore };
    },

    async startEndpointCheck(req) {
      return { run: await deps.endpointChecks().start(req.workspaceId) };
    },

    async getEndpointCheck(req) {
      return { run: await deps.endpointChecks().get(req.workspaceId, req.id) };
    },

    async listEvents(req) {
      // The paging bounds are the .proto's rules, checked before this runs.
      return listEvents(deps.sql, req);
    },

    async getDelivery(req) {
      return { delivery: deliveryLogMessage(await deliveryByEventId(deps.sql, req.workspaceId, req.eventId)) };
    },

    async resendDelivery(req) {
      const entry = await resendDelivery(deps.sql, deps.log, req.workspaceId, req.eventId);
      deps.deliveriesQueued();
      return { delivery: deliveryLogMessage(entry) };
    },

    async acknowledgeDeletion(req) {
      const r = await deps.deletionRequests().acknowledge(req.workspaceId, req.eventId, req.completedAt ? timestampDate(req.completedAt) : undefined);
      return { eventId: r.eventId, acknowledgedAt: timestampFromDate(r.acknowledgedAt), completedAt: timestampFromDate(r.completedAt) };
    },

    async listDeletionRequests(req) {
      const state = req.state === undefined ? undefined : deletionStates.nameOf(req.state);
      const rows = await deps.deletionRequests().list(req.workspaceId, state);
      return {
        items: rows.map((r) =>
          create(DeletionRequestSchema, {
            eventId: r.event_id,
            workspaceId: r.workspace_id,
            state: deletionStates.value(stateOf(r)),
            bookingReferences: r.booking_references,
            providerIds: r.provider_ids,
            occurredAt: timestampFromDate(r.occurred_at),
            createdAt: timestampFromDate(r.created_at),
            acknowledgedAt: r.acknowledged_at ? timestampFromDate(r.acknowledged_at) : undefined,
            completedAt: r.completed_at ? timestampFromDate(r.completed_at) : undefined,
            escalatedAt: r.escalated_at ? timestampFromDate(r.escalated_at) : undefined,
            test: r.test,
          }),
        ),
      };
    },
  };
}
