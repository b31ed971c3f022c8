/**
 * What a partner receives: the public event kinds and the delivery envelope built
 * from the calendar's records of bookings and erasures (spec "Events"; data fields per
 * docs/contract-gaps.md, "`booking.confirmed` data" and the rows after it).
 *
 * The envelope's `event_id` is the domain event's id (stable across retries and
 * replicas); `occurred_at` is when the change happened as the calendar recorded it,
 * never when it is sent. The
 * body is built once, stored, and sent byte for byte on every attempt.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { WebhookEventType, WebhookEventTypeSchema, type WebhookEventTypeJson } from '../../gen/psync/notifications/v1/notifications_pb';
import { dottedKind, EnumNames, type DottedEnumName } from '../kit/base';
import { CancellationInitiator } from '../../gen/psync/calendar/v1/events_pb';
import type { Booking, GetErasureResponse } from '../../gen/psync/calendar/v1/calendar_pb';

export const CHALLENGE_KIND = 'endpoint.challenge';
/** A kind a partner can subscribe to (spec "Webhook endpoint", `events`): every kind of the enum but the challenge. */
export type EventKind = Exclude<DottedEnumName<WebhookEventTypeJson, 'WEBHOOK_EVENT_TYPE_'>, typeof CHALLENGE_KIND>;

/** Event kinds ↔ WebhookEventType, from its descriptor: BOOKING_CONFIRMED → `booking.confirmed`. */
const kinds = new EnumNames<WebhookEventType, EventKind | typeof CHALLENGE_KIND>(WebhookEventTypeSchema, { spell: dottedKind });

/** The public name of a subscribable enum value, or undefined (UNSPECIFIED, challenge, unknown). */
export function subscribableKind(e: WebhookEventType): EventKind | undefined {
  const k = kinds.nameOf(e);
  return k === CHALLENGE_KIND ? undefined : k;
}

/** The enum value of a public kind name (stored as text). */
export function kindEnum(kind: string): WebhookEventType {
  return kinds.find(kind) ?? WebhookEventType.UNSPECIFIED;
}

/** The envelope every delivery carries (spec "Envelope fields"). */
export interface Envelope {
  event_id: string;
  event_type: EventKind | typeof CHALLENGE_KIND;
  occurred_at: string;
  data: Record<string, unknown>;
  /**
   * Only on a synthetic test event (test-events.ts, docs/partners/sandbox.md): `true`.
   * Absent on every real delivery, whose bytes stay exactly the spec's four fields.
   */
  test?: true;
}

/** The exact body sent: the envelope as compact JSON, keys in the spec's order (then `test`, when set). */
export function envelopeBody(e: Envelope): string {
  const base = { event_id: e.event_id, event_type: e.event_type, occurred_at: e.occurred_at, data: e.data };
  return JSON.stringify(e.test ? { ...base, test: true } : base);
}

function iso(ts: Timestamp | undefined): string {
  if (!ts) throw new Error('a record without its timestamp');
  return timestampDate(ts).toISOString();
}

/** A delivery to create from one domain event. */
export interface DeliverySource {
  kind: EventKind;
  eventId: string;
  workspaceId: string;
  occurredAt: string;
  /** booking.confirmed / booking.cancelled only. */
  bookingReference?: string;
  body: string;
}

/** The delivery of event `eventId`: what the log keeps of it and the envelope body sent. */
function deliverySource(kind: EventKind, eventId: string, workspaceId: string, occurredAt: string, data: Record<string, unknown>, bookingReference?: string): DeliverySource {
  return {
    kind,
    eventId,
    workspaceId,
    occurredAt,
    ...(bookingReference === undefined ? {} : { bookingReference }),
    body: envelopeBody({ event_id: eventId, event_type: kind, occurred_at: occurredAt, data }),
  };
}

/**
 * The booking.confirmed of event `eventId`: every field as the calendar holds the booking
 * `b` (its read-back, event-proof.ts), never as the event said; `occurred_at` is when it
 * was confirmed. The guest's name is null once the guest was erased.
 */
export function confirmedDelivery(eventId: string, b: Booking): DeliverySource {
  const data = {
    booking_reference: b.bookingReference,
    listing_id: b.listingId,
    provider_id: b.providerId ?? null,
    check_in: b.checkIn,
    check_out: b.checkOut,
    check_in_time: b.checkInTime,
    check_out_time: b.checkOutTime,
    party_size: b.partySize,
    guest_name: b.guestName || null,
    amount_paid: { value: b.amountPaid?.value ?? '0', currency: b.amountPaid?.currency ?? '' },
  };
  return deliverySource('booking.confirmed', eventId, b.workspaceId.toLowerCase(), iso(b.confirmedAt), data, b.bookingReference);
}

/** The booking.cancelled of event `eventId`, from the cancelled booking `b`; `occurred_at` is its `cancelled_at`. */
export function cancelledDelivery(eventId: string, b: Booking): DeliverySource {
  const cancelledAt = iso(b.cancelledAt);
  const data = {
    booking_reference: b.bookingReference,
    listing_id: b.listingId,
    cancelled_at: cancelledAt,
    initiated_by: b.initiatedBy === CancellationInitiator.HOST ? 'host' : 'guest',
  };
  return deliverySource('booking.cancelled', eventId, b.workspaceId.toLowerCase(), cancelledAt, data, b.bookingReference);
}

/** The user.erased of event `eventId`: what the erasure `r` erased in `workspaceId`, as the calendar reads it back. */
export function erasedDelivery(eventId: string, workspaceId: string, r: GetErasureResponse): DeliverySource {
  const data = { booking_references: [...r.bookingReferences], provider_ids: [...r.providerIds] };
  return deliverySource('user.erased', eventId, workspaceId.toLowerCase(), iso(r.erasedAt), data);
}

/** A challenge: a fresh opaque single-use string and the signed body that carries it. */
export function challengeEnvelope(now: Date = new Date()): { challenge: string; eventId: string; body: string } {
  const challenge = randomBytes(32).toString('base64url');
  const eventId = randomUUID();
  return {
    challenge,
    eventId,
    body: envelopeBody({ event_id: eventId, event_type: CHALLENGE_KIND, occurred_at: now.toISOString(), data: { challenge } }),
  };
}

/** Replaces `data.guest_name` with null in a stored booking.confirmed body (erasure). */
export function scrubGuestName(body: string): string {
  const parsed = JSON.parse(body) as Envelope;
  if (parsed.data && 'guest_name' in parsed.data) parsed.data.guest_name = null;
  return envelopeBody(parsed);
}
