/**
 * Events are proven by their owner before they become deliveries (house rule 15;
 * docs/notifications.md, "Events are proven by their owner").
 *
 * An event on the bus is a trigger, not a source. Anyone who can publish on the bus
 * could otherwise make notifications sign a webhook for any workspace, or alter what a
 * partner is told. So an event that leads to a partner delivery is believed only when
 * the calendar, which owns bookings and erasures, holds exactly what it says when asked
 * over the authenticated internal API, every field of it:
 * - BookingConfirmed: the booking exists, in that workspace and environment, on that
 *   listing, confirmed at the event's time, with the event's stay, check-in and
 *   check-out times, party and amount, and the event carries no guest name;
 * - BookingCancelled: the booking exists there and was cancelled at the event's
 *   `occurred_at` and `cancelled_at`, by the event's initiator;
 * - UserErased: the erasure exists, happened at the event's time in that environment,
 *   and erased exactly the bookings (and provider ids) the event names in that workspace.
 * Anything else is refused: the caller drops it (acknowledged, never redelivered) and
 * counts it. A failed read-back (calendar unavailable) is not a refusal: it throws, so
 * the bus redelivers the event later. The delivery is then built from the record, not
 * from the event (envelope.ts), and made at most once per fact (intake.ts, the
 * `event_facts` table): a replay under a new event id proves, and is dropped there.
 *
 * The read-back also carries what a delivery needs but no event does: the guest's name
 * (empty once the guest was erased), which the bus never keeps.
 */
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { timestampMs, type Timestamp } from '@bufbuild/protobuf/wkt';
import { BookingStatus, type Booking, type CalendarService, type GetErasureResponse } from '../../gen/psync/calendar/v1/calendar_pb';
import type { BookingCancelled, BookingConfirmed, UserErased } from '../../gen/psync/calendar/v1/events_pb';
import { isUuid } from './errors';

/** What the owner of bookings and erasures (the calendar) answers. */
export interface EventOwner {
  /** The booking, or undefined if the calendar has none with that reference. */
  booking(reference: string): Promise<Booking | undefined>;
  /** What the erasure erased in the workspace (empty lists if nothing). */
  erasure(erasureId: string, workspaceId: string): Promise<GetErasureResponse>;
}

/**
 * Why an event was refused (psync_bus_events_refused_total `reason`; docs/notifications.md):
 * - undecodable, malformed: not an event the calendar writes;
 * - unknown_booking, unknown_erasure: the calendar has no such record;
 * - mismatch: the record says something else in some field;
 * - unprovable: the calendar answered a booking without its check-in/out times (a
 *   calendar of an earlier release, during an upgrade, or a booking confirmed before it
 *   kept them); retried a few times first (intake.ts);
 * - replayed: its fact (a booking's confirmation or cancellation, an erasure in a
 *   workspace) was delivered already, under another event id;
 * - after_cancellation: a confirmation of a booking whose cancellation the partner was
 *   already told.
 */
export type RefusalReason = 'undecodable' | 'malformed' | 'unknown_booking' | 'unknown_erasure' | 'mismatch' | 'unprovable' | 'replayed' | 'after_cancellation';

export type Proof<T> = { ok: true; value: T } | { ok: false; reason: RefusalReason };

const refuse = (reason: RefusalReason): { ok: false; reason: RefusalReason } => ({ ok: false, reason });

const ms = (t: Timestamp | undefined): number | undefined => (t ? timestampMs(t) : undefined);

const sameList = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');

/** The facts every booking event states about its booking, as the calendar knows them. */
function sameBooking(e: BookingConfirmed | BookingCancelled, b: Booking): boolean {
  return (
    b.bookingReference === e.bookingReference &&
    b.workspaceId.toLowerCase() === e.workspaceId.toLowerCase() &&
    b.environment === e.environment &&
    b.listingId === e.listingId &&
    (b.providerId ?? '') === (e.providerId ?? '')
  );
}

/** The calendar's booking if it proves `e` in every field; the delivery is built from it. */
export async function proveBookingConfirmed(owner: EventOwner, e: BookingConfirmed): Promise<Proof<Booking>> {
  if (e.bookingReference === '') return refuse('malformed');
  const b = await owner.booking(e.bookingReference);
  if (!b) return refuse('unknown_booking');
  const same =
    sameBooking(e, b) &&
    ms(b.confirmedAt) === ms(e.occurredAt) &&
    b.checkIn === e.checkIn &&
    b.checkOut === e.checkOut &&
    b.partySize === e.partySize &&
    b.amountPaid?.value === e.amountPaid?.value &&
    b.amountPaid?.currency === e.amountPaid?.currency &&
    // The event never carries the guest's name (events.proto): one that does was not written by the calendar.
    e.guestName === '';
  if (!same) return refuse('mismatch');
  if (b.checkInTime === '' || b.checkOutTime === '') return refuse('unprovable');
  return b.checkInTime === e.checkInTime && b.checkOutTime === e.checkOutTime ? { ok: true, value: b } : refuse('mismatch');
}

/** The calendar's cancelled booking if it proves the cancellation `e` in every field. */
export async function proveBookingCancelled(owner: EventOwner, e: BookingCancelled): Promise<Proof<Booking>> {
  if (e.bookingReference === '') return refuse('malformed');
  const b = await owner.booking(e.bookingReference);
  if (!b) return refuse('unknown_booking');
  const cancelledAt = ms(b.cancelledAt);
  const same =
    sameBooking(e, b) &&
    b.status === BookingStatus.CANCELLED &&
    cancelledAt !== undefined &&
    cancelledAt === ms(e.cancelledAt) &&
    cancelledAt === ms(e.occurredAt) &&
    b.initiatedBy === e.initiatedBy;
  return same ? { ok: true, value: b } : refuse('mismatch');
}

/** The calendar's erasure if it proves `e`: erased exactly the bookings and provider ids it names, there, then. */
export async function proveUserErased(owner: EventOwner, e: UserErased): Promise<Proof<GetErasureResponse>> {
  if (!isUuid(e.erasureId) || e.bookingReferences.length === 0) return refuse('malformed');
  const r = await owner.erasure(e.erasureId, e.workspaceId);
  if (r.bookingReferences.length === 0) return refuse('unknown_erasure');
  const same =
    r.environment === e.environment && ms(r.erasedAt) === ms(e.occurredAt) && sameList(r.bookingReferences, e.bookingReferences) && sameList(r.providerIds, e.providerIds);
  return same ? { ok: true, value: r } : refuse('mismatch');
}

/** The calendar over its internal API as the owner of bookings and erasures. */
export function calendarOwner(calendar: () => Client<typeof CalendarService>): EventOwner {
  return {
    async booking(reference) {
      try {
        return (await calendar().getBooking({ bookingReference: reference })).booking;
      } catch (err) {
        if (ConnectError.from(err).code === Code.NotFound) return undefined;
        throw err;
      }
    },
    async erasure(erasureId, workspaceId) {
      return await calendar().getErasure({ erasureId, workspaceId });
    },
  };
}
