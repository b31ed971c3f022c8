/**
 * Events are proven by their owner before they become deliveries (house rule 15;
 * docs/notifications.md, "Events are proven by their owner").
 *
 * Anyone who can publish on the bus could otherwise make notifications sign a webhook
 * for any workspace. So an event that leads to a partner delivery is believed only
 * when the calendar, which owns bookings and erasures, says the same thing when asked
 * over the authenticated internal API:
 * - BookingConfirmed: the booking exists, in that workspace and environment, on that
 *   listing, confirmed at the event's time, with the event's stay, party and amount;
 * - BookingCancelled: the booking exists there and was cancelled at the event's
 *   `cancelled_at`, by the event's initiator;
 * - UserErased: the erasure exists, happened at the event's time, and erased every
 *   booking (and provider id) the event names in that workspace.
 * Anything else is refused: the caller drops it (acknowledged, never redelivered) and
 * counts it. A failed read-back (calendar unavailable) is not a refusal: it throws, so
 * the bus redelivers the event later.
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

/** Why an event was refused (psync_bus_events_refused_total `reason`). */
export type RefusalReason = 'undecodable' | 'malformed' | 'unknown_booking' | 'unknown_erasure' | 'mismatch';

export type Proof<T> = { ok: true; value: T } | { ok: false; reason: RefusalReason };

const refuse = (reason: RefusalReason): { ok: false; reason: RefusalReason } => ({ ok: false, reason });

const ms = (t: Timestamp | undefined): number | undefined => (t ? timestampMs(t) : undefined);

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

/** The calendar's booking if it proves `e`; its guest name is the delivery's. */
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
    b.amountPaid?.currency === e.amountPaid?.currency;
  return same ? { ok: true, value: b } : refuse('mismatch');
}

/** Whether the calendar's booking proves the cancellation `e`. */
export async function proveBookingCancelled(owner: EventOwner, e: BookingCancelled): Promise<Proof<Booking>> {
  if (e.bookingReference === '') return refuse('malformed');
  const b = await owner.booking(e.bookingReference);
  if (!b) return refuse('unknown_booking');
  const same =
    sameBooking(e, b) &&
    b.status === BookingStatus.CANCELLED &&
    ms(b.cancelledAt) !== undefined &&
    ms(b.cancelledAt) === ms(e.cancelledAt ?? e.occurredAt) &&
    b.initiatedBy === e.initiatedBy;
  return same ? { ok: true, value: b } : refuse('mismatch');
}

/** Whether the calendar's erasure proves `e`: every booking and provider id it names was erased there by it. */
export async function proveUserErased(owner: EventOwner, e: UserErased): Promise<Proof<GetErasureResponse>> {
  if (!isUuid(e.erasureId) || e.bookingReferences.length === 0) return refuse('malformed');
  const r = await owner.erasure(e.erasureId, e.workspaceId);
  if (r.bookingReferences.length === 0) return refuse('unknown_erasure');
  const refs = new Set(r.bookingReferences);
  const providers = new Set(r.providerIds);
  const same =
    r.environment === e.environment && ms(r.erasedAt) === ms(e.occurredAt) && e.bookingReferences.every((x) => refs.has(x)) && e.providerIds.every((x) => providers.has(x));
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
