/**
 * The partners' sandbox tools: public JSON of POST /v1/sandbox/events and of the
 * delivery log (GET /v1/webhooks/deliveries, GET /v1/webhooks/deliveries/{event_id},
 * POST /v1/webhooks/deliveries/{event_id}/resend) ↔ notifications protobuf
 * (docs/partners/sandbox.md).
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import {
  type Delivery,
  type DeliveryAttempt,
  type ListDeliveryLogRequestSchema,
  type ListDeliveryLogResponse,
  type TriggerTestEventRequestSchema,
} from '../../gen/psync/notifications/v1/notifications_pb';
import type { DeliveriesQueryInput as DeliveriesQuery, TestEventInput as TestEventBody } from '../contract/sandbox';
import { cancellationInitiators as initiators, deliveryStates, webhookEvents } from '../public-enums';
import type { DeliveryAttemptJson, DeliveryJson, DeliveryListJson } from '../contract/sandbox';

export { deliveryStates } from '../public-enums';

/** The largest page number passed on (the internal field is an int32); any page that far is past the end. */
const MAX_PAGE = 2_147_483_647;

/** The validated body as a TriggerTestEvent request. */
export function triggerTestEventRequest(workspaceId: string, body: TestEventBody): MessageInitShape<typeof TriggerTestEventRequestSchema> {
  return {
    workspaceId,
    listingId: body.listing_id,
    eventType: webhookEvents.value(body.event_type),
    bookingReference: body.booking_reference,
    checkIn: body.check_in,
    checkOut: body.check_out,
    initiatedBy: body.initiated_by === undefined ? undefined : initiators.value(body.initiated_by),
  };
}

/** The validated query as a ListDeliveryLog request (defaults already filled by validation). */
export function listDeliveryLogRequest(workspaceId: string, q: DeliveriesQuery): MessageInitShape<typeof ListDeliveryLogRequestSchema> {
  return {
    workspaceId,
    page: Math.min(q.page ?? 1, MAX_PAGE),
    pageSize: q.page_size ?? 50,
    state: q.state === undefined ? undefined : deliveryStates.value(q.state),
    eventType: q.event_type === undefined ? undefined : webhookEvents.value(q.event_type),
  };
}

function iso(ts: Timestamp | undefined, what: string): string {
  if (!ts) throw new Error(`Delivery.${what} is missing`);
  return timestampDate(ts).toISOString();
}

const isoOrNull = (ts: Timestamp | undefined) => (ts ? timestampDate(ts).toISOString() : null);

function presentAttempt(a: DeliveryAttempt): DeliveryAttemptJson {
  return {
    attempted_at: iso(a.attemptedAt, 'attempt_log.attempted_at'),
    response_status: a.responseStatus ?? null,
    latency_ms: a.durationMs ?? null,
    outcome: a.outcome,
    next_attempt_at: isoOrNull(a.nextAttemptAt),
  };
}

export function presentDelivery(d: Delivery | undefined): DeliveryJson {
  if (!d) throw new Error('the response has no delivery');
  return {
    event_id: d.eventId,
    event_type: webhookEvents.name(d.eventType),
    test: d.test,
    state: deliveryStates.name(d.state),
    occurred_at: iso(d.occurredAt, 'occurred_at'),
    queued_at: iso(d.createdAt, 'created_at'),
    next_attempt_at: isoOrNull(d.nextAttemptAt),
    attempts_total: d.attemptLogTotal,
    attempts: d.attemptLog.map(presentAttempt),
  };
}

export function presentDeliveryList(res: ListDeliveryLogResponse): DeliveryListJson {
  return { items: res.items.map(presentDelivery), has_more: res.hasMore };
}
