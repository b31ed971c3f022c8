/**
 * Marketplace bookings (docs/calendar.md "Holds and bookings").
 *
 * - ConfirmBooking converts a live hold (its nights change holder in place, so nothing
 *   else can slip in) or books free nights directly, and emits BookingConfirmed with
 *   the property's check-in/out times and provider_id, read fresh from the catalog.
 * - CancelBooking by the guest frees the nights (they can be re-sold). By the host —
 *   the property withdrew — the nights stay closed to marketplace holds and bookings
 *   for good (a `withdrawn` claim), while the partner may still place its own blocks
 *   on them, as on its other blocks (docs/calendar.md).
 * - Sandbox listings refuse anything that would end in a real charge.
 */
import { randomBytes } from 'node:crypto';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  BookingSchema,
  BookingStatus,
  CancelBookingRequestSchema,
  ConfirmBookingRequestSchema,
  type Booking,
  type CancelBookingRequest,
  type CancelBookingResponseSchema,
  type ConfirmBookingRequest,
  type ConfirmBookingResponseSchema,
  type GetBookingRequest,
  type GetBookingResponseSchema,
} from '../../gen/psync/calendar/v1/calendar_pb';
import { CancellationInitiator } from '../../gen/psync/calendar/v1/events_pb';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { checkRange, type NightSpan } from '../domain';
import { notFound, type Violation } from '../kit/rpc';
import { conflict, failedPrecondition, invalidArgument } from './errors';
import { bookingCancelled, bookingConfirmed, calendarChanged } from './event-log';
import { scanConflicts, withRetries } from './claims';
import { isHoldId, refuseSandboxPayment } from './holds';
import type { CalendarDeps } from './calendar-deps';
import type { Caller } from '../kit/rpc';
import { findIdempotentResult, idempotencyScope, keyArguments, resultOfKeyFound, type KeyFound } from './idempotency';
import { currentTraceHeaders } from '../kit/telemetry';

/** Crockford base32: no I, L, O, U, so references survive being read aloud. */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A new booking reference: "BK" and 10 random base32 characters (50 bits). */
export function newBookingReference(): string {
  const bytes = randomBytes(10);
  let out = 'BK';
  for (const b of bytes) out += ALPHABET[b & 31];
  return out;
}

/** What `calendar.confirm_booking` answers (services/calendar/functions/confirm_booking.sql). */
interface ConfirmBookingResult extends KeyFound {
  outcome: 'confirmed' | 'conflict' | 'hold_not_live' | 'key_found';
  conflicts: string[];
}

/** What `calendar.cancel_booking` answers (services/calendar/functions/cancel_booking.sql). */
interface CancelBookingResult extends KeyFound {
  outcome: 'cancelled' | 'already_cancelled' | 'key_found';
  cancelled_at: Date | null;
  events: number;
}

/** A booking row as read back. */
interface BookingRow {
  booking_reference: string;
  listing_id: string;
  workspace_id: string;
  environment: 'sandbox' | 'production';
  provider_id: string | null;
  check_in: string;
  check_out: string;
  party_size: number;
  guest_name: string | null;
  amount_value: string;
  amount_currency: string;
  status: 'confirmed' | 'cancelled';
  hold_id: string | null;
  confirmed_at: Date;
  cancelled_at: Date | null;
  cancelled_by: 'guest' | 'host' | null;
  /** Null for a booking confirmed before the calendar kept them (migration 0013). */
  check_in_time: string | null;
  check_out_time: string | null;
}

/** What CancelBooking reads of a booking before its statement: where it is and the events' fields. */
type CancelledRow = Pick<BookingRow, 'listing_id' | 'workspace_id' | 'environment' | 'provider_id' | 'check_in' | 'check_out' | 'status' | 'cancelled_at'>;

const BOOKING_COLUMNS =
  'booking_reference, listing_id, workspace_id, environment, provider_id, check_in::text, check_out::text, party_size, guest_name, amount_value, amount_currency, status, hold_id, confirmed_at, cancelled_at, cancelled_by, check_in_time, check_out_time';

function initiator(by: 'guest' | 'host'): CancellationInitiator {
  return by === 'host' ? CancellationInitiator.HOST : CancellationInitiator.GUEST;
}

function toBooking(r: BookingRow): Booking {
  return create(BookingSchema, {
    bookingReference: r.booking_reference,
    listingId: r.listing_id,
    workspaceId: r.workspace_id,
    providerId: r.provider_id ?? undefined,
    checkIn: r.check_in,
    checkOut: r.check_out,
    partySize: r.party_size,
    guestName: r.guest_name ?? '',
    amountPaid: { value: r.amount_value, currency: r.amount_currency },
    status: r.status === 'cancelled' ? BookingStatus.CANCELLED : BookingStatus.CONFIRMED,
    confirmedAt: timestampFromDate(r.confirmed_at),
    cancelledAt: r.cancelled_at ? timestampFromDate(r.cancelled_at) : undefined,
    initiatedBy: r.cancelled_by ? initiator(r.cancelled_by) : undefined,
    holdId: r.hold_id ?? undefined,
    environment: r.environment === 'production' ? Environment.PRODUCTION : Environment.SANDBOX,
    checkInTime: r.check_in_time ?? '',
    checkOutTime: r.check_out_time ?? '',
  });
}

/**
 * ConfirmBooking: from a live hold or directly on free nights. With an idempotency key
 * (idempotency.ts) a retry answers the booking the key made, as it is now.
 */
export async function confirmBooking(deps: CalendarDeps, req: ConfirmBookingRequest, caller?: Caller): Promise<MessageInitShape<typeof ConfirmBookingResponseSchema>> {
  // The fields (guest, party size, amount, dates when sent, the key) were checked against
  // calendar.proto's rules before this runs; what depends on the hold is checked here.
  const idempotency = idempotencyScope('ConfirmBooking', ConfirmBookingRequestSchema, req, caller);
  if (idempotency) {
    const first = await findIdempotentResult(deps.sql, idempotency);
    if (first) return { booking: await readBooking(deps, first) };
  }

  // Where the booking lands: the hold's listing and nights, or the request's.
  let hold: { listing_id: string; check_in: string; check_out: string } | undefined;
  let span: NightSpan | undefined;
  const violations: Violation[] = [];
  if (req.holdId !== undefined) {
    if (!isHoldId(req.holdId)) throw notFound(ErrorReason.HOLD_NOT_FOUND, 'no such hold');
    [hold] = await deps.sql<{ listing_id: string; check_in: string; check_out: string }[]>`
      select listing_id, check_in::text, check_out::text from calendar.holds where hold_id = ${req.holdId}
    `;
    if (!hold) throw notFound(ErrorReason.HOLD_NOT_FOUND, 'no such hold');
    // Fields sent along with hold_id must match the hold.
    if (req.listingId !== '' && req.listingId !== hold.listing_id) violations.push({ field: 'listing_id', code: 'invalid' });
    if (req.checkIn !== '' && req.checkIn !== hold.check_in) violations.push({ field: 'check_in', code: 'invalid' });
    if (req.checkOut !== '' && req.checkOut !== hold.check_out) violations.push({ field: 'check_out', code: 'invalid' });
    span = checkRange(hold.check_in, hold.check_out).span;
  } else {
    if (req.listingId === '') violations.push({ field: 'listing_id', code: 'required' });
    const checked = checkRange(req.checkIn, req.checkOut);
    violations.push(...checked.problems);
    span = checked.span;
  }
  if (violations.length > 0 || !span) throw invalidArgument(violations);
  const nights = span;
  const listingId = hold ? hold.listing_id : req.listingId;

  // Fresh: check-in/out times and provider_id go into booking.confirmed.
  const listing = await deps.listings.resolve(listingId, { fresh: true });
  refuseSandboxPayment(listing.environment, req.requiresPayment);

  const at = new Date();
  const amount = req.amountPaid!;
  const holdId = req.holdId ?? null;
  // One statement, in its implicit transaction: the key, the listing's lock, hold
  // expiry, the hold's conversion or the conflict scan, the booking with its claim and
  // events, the key's record (SQL `calendar.confirm_booking`). A refusal writes nothing.
  const out = await withRetries(
    async () => {
      // Drawn per attempt: a retry after a (vanishingly rare) clash of references draws anew.
      const reference = newBookingReference();
      const events = [
        calendarChanged({
          at,
          workspaceId: listing.workspaceId,
          listingId,
          kind: 'booking_confirmed',
          holder: { kind: 'booking', id: reference },
          held: { checkIn: nights.checkIn, checkOut: nights.checkOut },
        }),
        bookingConfirmed({
          occurred_at: at.toISOString(),
          workspace_id: listing.workspaceId,
          environment: listing.environment,
          booking_reference: reference,
          listing_id: listingId,
          provider_id: listing.providerId ?? null,
          check_in: nights.checkIn,
          check_out: nights.checkOut,
          check_in_time: listing.checkInTime,
          check_out_time: listing.checkOutTime,
          party_size: req.partySize,
          amount_paid: { value: amount.value, currency: amount.currency },
        }),
      ];
      const sql = deps.sql;
      const [r] = await sql<ConfirmBookingResult[]>`
        select * from calendar.confirm_booking(${reference}, ${listingId}, ${holdId}::uuid, ${nights.checkIn}::date, ${nights.checkOut}::date,
          ${listing.workspaceId}, ${listing.environment}, ${listing.providerId ?? null}, ${req.partySize}, ${req.guestId}, ${req.guestName},
          ${amount.value}, ${amount.currency}, ${req.requiresPayment}, ${at}, ${sql.json(events)}, ${sql.json(currentTraceHeaders())},
          ${keyArguments(sql, idempotency)}, null)
      `;
      return { result: r!, reference };
    },
    () => scanConflicts(deps.sql, listingId, nights.checkIn, nights.checkOut, 'all'),
  );
  const { result, reference } = out;
  switch (result.outcome) {
    case 'key_found':
      // The key was used before: the same request answers that booking; another one fails.
      return { booking: await readBooking(deps, resultOfKeyFound(idempotency, result)) };
    case 'conflict':
      throw conflict(result.conflicts);
    case 'hold_not_live':
      throw failedPrecondition(ErrorReason.HOLD_NOT_LIVE, 'the hold expired, was released or was already converted');
    case 'confirmed':
      break;
  }
  deps.eventsCommitted();
  return {
    booking: toBooking({
      booking_reference: reference,
      listing_id: listingId,
      workspace_id: listing.workspaceId,
      environment: listing.environment,
      provider_id: listing.providerId ?? null,
      check_in: nights.checkIn,
      check_out: nights.checkOut,
      party_size: req.partySize,
      guest_name: req.guestName,
      amount_value: amount.value,
      amount_currency: amount.currency,
      status: 'confirmed',
      hold_id: holdId,
      confirmed_at: at,
      cancelled_at: null,
      cancelled_by: null,
      check_in_time: listing.checkInTime,
      check_out_time: listing.checkOutTime,
    }),
  };
}

/** The booking `reference` as it is now (an idempotent retry's answer). */
async function readBooking(deps: CalendarDeps, reference: string): Promise<Booking> {
  const sql = deps.sql;
  const [row] = await sql<BookingRow[]>`
    select ${sql.unsafe(BOOKING_COLUMNS)} from calendar.bookings where booking_reference = ${reference}
  `;
  if (!row) throw notFound(ErrorReason.BOOKING_NOT_FOUND, 'the booking this idempotency key made no longer exists');
  return toBooking(row);
}

/**
 * CancelBooking: guest → nights freed; host → nights kept closed to the marketplace.
 * Idempotent: cancelling again answers the first cancellation and emits nothing. With
 * an idempotency key (idempotency.ts) the key is recorded with the cancellation (or
 * with the answer naming an earlier one), so reusing it for another booking fails.
 */
export async function cancelBooking(deps: CalendarDeps, req: CancelBookingRequest, caller?: Caller): Promise<MessageInitShape<typeof CancelBookingResponseSchema>> {
  // booking_reference, initiated_by (guest or host) and the key were checked against calendar.proto's rules.
  const by: 'guest' | 'host' = req.initiatedBy === CancellationInitiator.HOST ? 'host' : 'guest';
  const idempotency = idempotencyScope('CancelBooking', CancelBookingRequestSchema, req, caller);
  if (idempotency) {
    const first = await findIdempotentResult(deps.sql, idempotency);
    if (first) return readCancellation(deps, first);
  }

  const [found] = await deps.sql<CancelledRow[]>`
    select listing_id, workspace_id, environment, provider_id, check_in::text, check_out::text, status, cancelled_at
    from calendar.bookings where booking_reference = ${req.bookingReference}
  `;
  if (!found) throw notFound(ErrorReason.BOOKING_NOT_FOUND, 'no such booking');
  // Without a key, an already cancelled booking is answered at once; with one, the
  // statement below answers it too and records the key.
  if (found.status === 'cancelled' && !idempotency) {
    return { bookingReference: req.bookingReference, cancelled: true, cancelledAt: timestampFromDate(found.cancelled_at!) };
  }

  const at = new Date();
  // Written only if the statement cancels the booking (a booking's listing, nights and
  // workspace never change).
  const range = { checkIn: found.check_in, checkOut: found.check_out };
  const events = [
    calendarChanged({
      at,
      workspaceId: found.workspace_id,
      listingId: found.listing_id,
      kind: 'booking_cancelled',
      ...(by === 'guest'
        ? { holder: { kind: 'booking' as const, id: req.bookingReference }, released: range }
        : { holder: { kind: 'withdrawn' as const, id: req.bookingReference }, held: range }),
    }),
    bookingCancelled({
      occurred_at: at.toISOString(),
      workspace_id: found.workspace_id,
      environment: found.environment,
      booking_reference: req.bookingReference,
      listing_id: found.listing_id,
      provider_id: found.provider_id,
      cancelled_at: at.toISOString(),
      initiated_by: by,
    }),
  ];
  // One statement, in its implicit transaction: the key, the listing's lock, the key's
  // record, hold expiry, the cancellation with its claim and events (SQL `calendar.cancel_booking`).
  const sql = deps.sql;
  const out = await withRetries(async () => {
    const [r] = await sql<CancelBookingResult[]>`
      select * from calendar.cancel_booking(${req.bookingReference}, ${found.listing_id}, ${by}, ${at}, ${sql.json(events)},
        ${sql.json(currentTraceHeaders())}, ${keyArguments(sql, idempotency)})
    `;
    return r!;
  });
  if (out.outcome === 'key_found') return readCancellation(deps, resultOfKeyFound(idempotency, out));
  if (out.events > 0) deps.eventsCommitted();
  return { bookingReference: req.bookingReference, cancelled: true, cancelledAt: timestampFromDate(out.cancelled_at!) };
}

/** The cancellation of `reference` (an idempotent retry's answer). */
async function readCancellation(deps: CalendarDeps, reference: string): Promise<MessageInitShape<typeof CancelBookingResponseSchema>> {
  const [row] = await deps.sql<{ cancelled_at: Date | null }[]>`
    select cancelled_at from calendar.bookings where booking_reference = ${reference}
  `;
  if (!row?.cancelled_at) throw notFound(ErrorReason.BOOKING_NOT_FOUND, 'the booking this idempotency key cancelled no longer exists');
  return { bookingReference: reference, cancelled: true, cancelledAt: timestampFromDate(row.cancelled_at) };
}

/** GetBooking: one booking by reference. */
export async function getBooking(deps: CalendarDeps, req: GetBookingRequest): Promise<MessageInitShape<typeof GetBookingResponseSchema>> {
  const sql = deps.sql;
  const [row] = await sql<BookingRow[]>`
    select ${sql.unsafe(BOOKING_COLUMNS)} from calendar.bookings where booking_reference = ${req.bookingReference}
  `;
  if (!row) throw notFound(ErrorReason.BOOKING_NOT_FOUND, 'no such booking');
  return { booking: toBooking(row) };
}
