/**
 * How calendar events leave a transaction: each event is written, in the transaction
 * of the change that caused it, by the SQL function `calendar.append_event` (migration
 * 0008; put_block and expire_holds call it too) to
 *  - `calendar.events`, the ordered log WatchEvents streams (calendar and booking
 *    events; see migration 0001 for why it is read in (xid, seq) order), and
 *  - `calendar.outbox`, relayed to the bus by the kit (outbox-relay.ts) under the same id.
 * Events are stored as plain rows, a type and a body of fields (event-codec.ts, which
 * alone turns them into protobuf messages when they are published or streamed).
 *
 * A transaction that writes `calendar.events` must have registered as an event writer
 * before its first write (SQL `calendar.lock_listing`, which every writer calls first,
 * or `calendar.begin_event_write`; migration 0005): the stream's horizon is computed
 * from the registered writers (event-horizon.ts), and the database refuses an event
 * from a transaction that did not register.
 */
import type { Tx } from '../kit/db';
import { currentTraceHeaders } from '../kit/telemetry';
import type { BookingCancelledBody, BookingConfirmedBody, CalendarChangedBody, ChangeKindWord, EventBodies, EventType, HolderKindWord, UserErasedBody } from './event-codec';

/** An event ready to be appended: what `calendar.append_events` takes for each. */
export type PendingEvent<T extends EventType = EventType> = {
  type: T;
  workspace_id: string;
  listing_id: string;
  booking_reference: string | null;
  body: EventBodies[T];
};

/** A night range for an event. */
export interface Range {
  checkIn: string;
  checkOut: string;
}

const range = (r?: Range) => (r ? { check_in: r.checkIn, check_out: r.checkOut } : null);

/** Builds a calendar_changed event: the nights of one holder changed on a listing. */
export function calendarChanged(p: {
  at: Date;
  workspaceId: string;
  listingId: string;
  kind: ChangeKindWord;
  holder: { kind: HolderKindWord; id: string };
  released?: Range;
  held?: Range;
}): PendingEvent<'calendar_changed'> {
  const body: CalendarChangedBody = {
    occurred_at: p.at.toISOString(),
    workspace_id: p.workspaceId,
    listing_id: p.listingId,
    kind: p.kind,
    holder_kind: p.holder.kind,
    holder_id: p.holder.id,
    released: range(p.released),
    held: range(p.held),
  };
  return { type: 'calendar_changed', workspace_id: p.workspaceId, listing_id: p.listingId, booking_reference: null, body };
}

/** Builds a booking_confirmed event (spec `booking.confirmed`). */
export function bookingConfirmed(body: BookingConfirmedBody): PendingEvent<'booking_confirmed'> {
  return { type: 'booking_confirmed', workspace_id: body.workspace_id, listing_id: body.listing_id, booking_reference: body.booking_reference, body };
}

/** Builds a booking_cancelled event (spec `booking.cancelled`). */
export function bookingCancelled(body: BookingCancelledBody): PendingEvent<'booking_cancelled'> {
  return { type: 'booking_cancelled', workspace_id: body.workspace_id, listing_id: body.listing_id, booking_reference: body.booking_reference, body };
}

/** Builds a user_erased event (spec `user.erased`): bus only, not part of the WatchEvents stream. */
export function userErased(body: UserErasedBody): PendingEvent<'user_erased'> {
  return { type: 'user_erased', workspace_id: body.workspace_id, listing_id: '', booking_reference: null, body };
}

/**
 * Appends `events` inside `tx`, in order, in one statement (`calendar.append_events`),
 * with the active trace context as their outbox headers. The caller nudges the relay
 * and the watchers after commit.
 */
export async function appendEvents(tx: Tx, events: PendingEvent[]): Promise<void> {
  if (events.length === 0) return;
  // Objects through tx.json: a JSON.stringify'd string would be stored as a jsonb string
  // scalar, and the headers' trace context would never reach the consumers.
  await tx`select calendar.append_events(${tx.json(events)}, ${tx.json(currentTraceHeaders())})`;
}
