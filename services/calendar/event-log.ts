/**
 * How calendar events leave a transaction: each event is written, in the transaction
 * of the change that caused it, to
 *  - `calendar.events`, the ordered log WatchEvents streams (calendar and booking
 *    events; see the migration for why it is read in (xid, seq) order), and
 *  - `calendar.outbox`, relayed to the bus by the kit (outbox.ts) under the same id.
 *
 * A transaction that writes `calendar.events` must have registered as an event writer
 * before its first write (SQL `calendar.lock_listing`, which every writer calls first,
 * or `calendar.begin_event_write`; migration 0005): the stream's horizon is computed
 * from the registered writers (event-horizon.ts), and the database refuses an event
 * from a transaction that did not register.
 *
 * Bus subjects (below BUS_PREFIX) are the event message's full name, as events.proto
 * suggests: `psync.calendar.v1.CalendarChanged`, `psync.calendar.v1.BookingConfirmed`,
 * `psync.calendar.v1.BookingCancelled`, `psync.calendar.v1.UserErased`. The payload is
 * the message in protobuf binary.
 */
import { randomUUID } from 'node:crypto';
import { currentTraceHeaders } from '../kit/telemetry';
import { create, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  BookingCancelledSchema,
  BookingConfirmedSchema,
  CalendarChangedSchema,
  UserErasedSchema,
  type BookingCancelled,
  type BookingConfirmed,
  type CalendarChangeKind,
  type NightHolderKind,
  type UserErased,
} from '../../gen/psync/calendar/v1/events_pb';
import type { DescMessage, MessageInitShape, MessageShape } from '@bufbuild/protobuf';

/** The plain-object form of a message's init shape, without its event id (set here). */
type EventInit<D extends DescMessage> = Omit<Exclude<MessageInitShape<D>, MessageShape<D>>, 'eventId' | '$typeName'>;
import type { Tx } from '../kit/database';

/** The bus subjects of calendar events (below BUS_PREFIX). */
export const CalendarSubjects = {
  calendarChanged: CalendarChangedSchema.typeName,
  bookingConfirmed: BookingConfirmedSchema.typeName,
  bookingCancelled: BookingCancelledSchema.typeName,
  userErased: UserErasedSchema.typeName,
} as const;

/** Which WatchEventsResponse field an event fills; null for bus-only events. */
export type StreamType = 'calendar_changed' | 'booking_confirmed' | 'booking_cancelled';

/** An event ready to be appended. */
export interface PendingEvent {
  id: string;
  subject: string;
  stream: StreamType | null;
  workspaceId: string;
  listingId: string;
  bookingReference: string | null;
  data: Uint8Array;
}

/** A night range for an event, or undefined for none. */
export interface Range {
  checkIn: string;
  checkOut: string;
}

/** Builds a CalendarChanged: the nights of one holder changed on a listing. */
export function calendarChanged(p: {
  at: Date;
  workspaceId: string;
  listingId: string;
  kind: CalendarChangeKind;
  holder: { kind: NightHolderKind; id: string };
  released?: Range;
  held?: Range;
}): PendingEvent {
  const id = randomUUID();
  const msg = create(CalendarChangedSchema, {
    eventId: id,
    occurredAt: timestampFromDate(p.at),
    workspaceId: p.workspaceId,
    listingId: p.listingId,
    kind: p.kind,
    holder: p.holder,
    released: p.released,
    held: p.held,
  });
  return {
    id,
    subject: CalendarSubjects.calendarChanged,
    stream: 'calendar_changed',
    workspaceId: p.workspaceId,
    listingId: p.listingId,
    bookingReference: null,
    data: toBinary(CalendarChangedSchema, msg),
  };
}

/** Builds a BookingConfirmed (spec `booking.confirmed`). */
export function bookingConfirmed(init: EventInit<typeof BookingConfirmedSchema>): PendingEvent {
  const id = randomUUID();
  const msg: BookingConfirmed = create(BookingConfirmedSchema, { ...init, eventId: id });
  return {
    id,
    subject: CalendarSubjects.bookingConfirmed,
    stream: 'booking_confirmed',
    workspaceId: msg.workspaceId,
    listingId: msg.listingId,
    bookingReference: msg.bookingReference,
    data: toBinary(BookingConfirmedSchema, msg),
  };
}

/** Builds a BookingCancelled (spec `booking.cancelled`). */
export function bookingCancelled(init: EventInit<typeof BookingCancelledSchema>): PendingEvent {
  const id = randomUUID();
  const msg: BookingCancelled = create(BookingCancelledSchema, { ...init, eventId: id });
  return {
    id,
    subject: CalendarSubjects.bookingCancelled,
    stream: 'booking_cancelled',
    workspaceId: msg.workspaceId,
    listingId: msg.listingId,
    bookingReference: msg.bookingReference,
    data: toBinary(BookingCancelledSchema, msg),
  };
}

/** Builds a UserErased (spec `user.erased`): bus only, not part of the WatchEvents stream. */
export function userErased(init: EventInit<typeof UserErasedSchema>): PendingEvent {
  const id = randomUUID();
  const msg: UserErased = create(UserErasedSchema, { ...init, eventId: id });
  return {
    id,
    subject: CalendarSubjects.userErased,
    stream: null,
    workspaceId: msg.workspaceId,
    listingId: '',
    bookingReference: null,
    data: toBinary(UserErasedSchema, msg),
  };
}

const bytes = (d: Uint8Array) => Buffer.from(d.buffer, d.byteOffset, d.byteLength);

/**
 * The writes of `events` as extra data-modifying CTEs, to put right after the first
 * CTE of a `with` statement that also makes the change: one round trip for the change
 * and its events. Empty when there are no events.
 */
export function eventWrites(tx: Tx, events: PendingEvent[]) {
  if (events.length === 0) return tx``;
  // Headers as an object through tx.json: a JSON.stringify'd string would be stored as
  // a jsonb string scalar, and its trace context would never reach the consumers.
  const outbox = events.map((e) => ({
    id: e.id,
    subject: e.subject,
    data: bytes(e.data),
    headers: tx.json({ ...currentTraceHeaders(), workspace_id: e.workspaceId }),
  }));
  const stream = events
    .filter((e) => e.stream !== null)
    .map((e) => ({
      id: e.id,
      workspace_id: e.workspaceId,
      listing_id: e.listingId,
      type: e.stream as string,
      booking_reference: e.bookingReference,
      data: bytes(e.data),
    }));
  const relayed = tx`relayed_events as (insert into calendar.outbox ${tx(outbox, 'id', 'subject', 'data', 'headers')})`;
  if (stream.length === 0) return tx`, ${relayed}`;
  return tx`, logged_events as (
      insert into calendar.events ${tx(stream, 'id', 'workspace_id', 'listing_id', 'type', 'booking_reference', 'data')}
    ), ${relayed}`;
}

/**
 * Appends `events` inside `tx`: stream events to calendar.events, all of them to the
 * outbox, in one statement. The caller nudges the relay and the watchers after commit.
 */
export async function appendEvents(tx: Tx, events: PendingEvent[]): Promise<void> {
  if (events.length === 0) return;
  await tx`with nothing as (select) ${eventWrites(tx, events)} select 1`;
}
