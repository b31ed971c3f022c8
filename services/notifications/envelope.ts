/**
 * What a partner receives: the public event kinds and the delivery envelope built
 * from the calendar's domain events (spec "Events"; data fields per
 * docs/contract-gaps.md, "`booking.confirmed` data" and the rows after it).
 *
 * The envelope's `event_id` is the domain event's id (stable across retries and
 * replicas); `occurred_at` is when the event happened, never when it is sent. The
 * body is built once, stored, and sent byte for byte on every attempt.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { WebhookEventType, WebhookEventTypeSchema } from '../../gen/psync/notifications/v1/notifications_pb';
import { dottedKind, EnumNames } from '../kit/enum-names';
import { CancellationInitiator, type BookingCancelled, type BookingConfirmed, type UserErased } from '../../gen/psync/calendar/v1/events_pb';

/** The kinds a partner can subscribe to (spec "Webhook endpoint", `events`). */
export const SUBSCRIBABLE_KINDS = ['booking.confirmed', 'booking.cancelled', 'user.erased'] as const;
export type EventKind = (typeof SUBSCRIBABLE_KINDS)[number];
export const CHALLENGE_KIND = 'endpoint.challenge';

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

function iso(ts: Timestamp | undefined, fallback?: Timestamp): string {
  const t = ts ?? fallback;
  if (!t) throw new Error('event without a timestamp');
  return timestampDate(t).toISOString();
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

/** The delivery of one domain event: what the log keeps of it and the envelope body sent. */
function deliverySource(
  kind: EventKind,
  e: { eventId: string; workspaceId: string; occurredAt?: Timestamp },
  data: Record<string, unknown>,
  bookingReference?: string,
): DeliverySource {
  const occurredAt = iso(e.occurredAt);
  return {
    kind,
    eventId: e.eventId,
    workspaceId: e.workspaceId,
    occurredAt,
    ...(bookingReference === undefined ? {} : { bookingReference }),
    body: envelopeBody({ event_id: e.eventId, event_type: kind, occurred_at: occurredAt, data }),
  };
}

/**
 * The booking.confirmed of `e`. The event carries no personal data: `guestName` is read
 * from the calendar (null once the guest was erased).
 */
export function fromBookingConfirmed(e: BookingConfirmed, guestName: string | null): DeliverySource {
  const data = {
    booking_reference: e.bookingReference,
    listing_id: e.listingId,
    provider_id: e.providerId ?? null,
    check_in: e.checkIn,
    check_out: e.checkOut,
    check_in_time: e.checkInTime,
    check_out_time: e.checkOutTime,
    party_size: e.partySize,
    guest_name: guestName,
    amount_paid: { value: e.amountPaid?.value ?? '0', currency: e.amountPaid?.currency ?? '' },
  };
  return deliverySource('booking.confirmed', e, data, e.bookingReference);
}

export function fromBookingCancelled(e: BookingCancelled): DeliverySource {
  const data = {
    booking_reference: e.bookingReference,
    listing_id: e.listingId,
    cancelled_at: iso(e.cancelledAt, e.occurredAt),
    initiated_by: e.initiatedBy === CancellationInitiator.HOST ? 'host' : 'guest',
  };
  return deliverySource('booking.cancelled', e, data, e.bookingReference);
}

export function fromUserErased(e: UserErased): DeliverySource {
  const data = { booking_references: [...e.bookingReferences], provider_ids: [...e.providerIds] };
  return deliverySource('user.erased', e, data);
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
