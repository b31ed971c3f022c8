/**
 * NotificationsService: the RPCs, thin — validation and presentation here, the
 * behaviour in registration.ts, delivery-list.ts, delivery-replay.ts and
 * deletion-requests.ts.
 */
import { create } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import {
  BreakerState,
  DeletionRequestSchema,
  DeletionRequestState,
  DeliverySchema,
  DeliveryState,
  EndpointHealthSchema,
  EndpointSchema,
  EndpointStatus,
  NotificationsService,
} from '../../gen/psync/notifications/v1/notifications_pb';
import type { Sql } from '../kit/database';
import type { Logger } from '../kit/logger';
import { DeletionRequests, stateOf } from './deletion-requests';
import { listDeliveries, type DeliveryListRow, type DeliveryStateName } from './delivery-list';
import { replayDeliveries, replaySelection } from './delivery-replay';
import { readEndpointHealth, type BreakerState as BreakerName, type EndpointHealthView } from './endpoint-health';
import { kindEnum } from './envelope';
import type { EndpointRegistry, EndpointStatus as StatusName } from './registration';

const STATUS: Record<StatusName, EndpointStatus> = {
  pending_verification: EndpointStatus.PENDING_VERIFICATION,
  active: EndpointStatus.ACTIVE,
  suspended: EndpointStatus.SUSPENDED,
};

const BREAKER: Record<BreakerName, BreakerState> = {
  closed: BreakerState.CLOSED,
  open: BreakerState.OPEN,
  half_open: BreakerState.HALF_OPEN,
};

const ts = (d: Date | null) => (d ? timestampFromDate(d) : undefined);

/** An endpoint's delivery health as the EndpointHealth message. */
function healthMessage(h: EndpointHealthView) {
  return create(EndpointHealthSchema, {
    breaker: BREAKER[h.breaker],
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

const DELIVERY_STATE: Record<DeliveryStateName, DeliveryState> = {
  pending: DeliveryState.PENDING,
  delivered: DeliveryState.DELIVERED,
  abandoned: DeliveryState.ABANDONED,
};

function deliveryStateName(s: DeliveryState | undefined): DeliveryStateName | undefined {
  return (Object.entries(DELIVERY_STATE) as [DeliveryStateName, DeliveryState][]).find(([, v]) => v === s)?.[0];
}

const DELETION_STATE = {
  open: DeletionRequestState.OPEN,
  acknowledged: DeletionRequestState.ACKNOWLEDGED,
  escalated: DeletionRequestState.ESCALATED,
} as const;

/** A delivery row as the Delivery message (ListDeliveries, ReplayDeliveries). */
function deliveryMessage(d: DeliveryListRow) {
  return create(DeliverySchema, {
    eventId: d.event_id,
    workspaceId: d.workspace_id,
    eventType: kindEnum(d.event_type),
    state: DELIVERY_STATE[d.state],
    attempts: d.attempts,
    lastStatus: d.last_status ?? undefined,
    lastError: d.last_error ?? undefined,
    nextAttemptAt: d.next_attempt_at ? timestampFromDate(d.next_attempt_at) : undefined,
    occurredAt: timestampFromDate(d.occurred_at),
    createdAt: timestampFromDate(d.created_at),
  });
}

export interface ServiceDeps {
  sql: Sql;
  /** The service's logger (replays log one line per delivery). */
  log: Logger;
  /** Undefined until the module has started (the RPCs then answer UNAVAILABLE). */
  registry: () => EndpointRegistry;
  deletionRequests: () => DeletionRequests;
}

export function notificationsService(deps: ServiceDeps): Partial<ServiceImpl<typeof NotificationsService>> {
  return {
    async putEndpoint(req) {
      const r = await deps.registry().put(req.workspaceId, req.url, req.events);
      return { url: r.url, events: r.events.map(kindEnum), status: STATUS[r.status], signingSecret: r.signingSecret };
    },

    async getEndpoint(req) {
      const e = await deps.registry().get(req.workspaceId);
      return {
        endpoint: create(EndpointSchema, {
          workspaceId: e.workspace_id,
          url: e.url,
          events: e.events.map(kindEnum),
          status: STATUS[e.status],
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
        endpointStatus: r.endpointStatus ? STATUS[r.endpointStatus] : EndpointStatus.UNSPECIFIED,
      };
    },

    async acknowledgeDeletion(req) {
      const r = await deps.deletionRequests().acknowledge(req.workspaceId, req.eventId, req.completedAt ? timestampDate(req.completedAt) : undefined);
      return { eventId: r.eventId, acknowledgedAt: timestampFromDate(r.acknowledgedAt), completedAt: timestampFromDate(r.completedAt) };
    },

    async listDeletionRequests(req) {
      const state = req.state === undefined ? undefined : (Object.entries(DELETION_STATE).find(([, v]) => v === req.state)?.[0] as keyof typeof DELETION_STATE | undefined);
      const rows = await deps.deletionRequests().list(req.workspaceId, state);
      return {
        items: rows.map((r) =>
          create(DeletionRequestSchema, {
            eventId: r.event_id,
            workspaceId: r.workspace_id,
            state: DELETION_STATE[stateOf(r)],
            bookingReferences: r.booking_references,
            providerIds: r.provider_ids,
            occurredAt: timestampFromDate(r.occurred_at),
            createdAt: timestampFromDate(r.created_at),
            acknowledgedAt: r.acknowledged_at ? timestampFromDate(r.acknowledged_at) : undefined,
            completedAt: r.completed_at ? timestampFromDate(r.completed_at) : undefined,
            escalatedAt: r.escalated_at ? timestampFromDate(r.escalated_at) : undefined,
          }),
        ),
      };
    },
  };
}
