/**
 * The calendar's one protobuf encoder of its events.
 *
 * Events are stored as plain rows: an event type (`calendar_changed`,
 * `booking_confirmed`, `booking_cancelled`, `user_erased`) and a jsonb body of the
 * fields below, in the calendar's own words (`hold_expired`, `block`, `sandbox`,
 * `guest` …: the proto enum value names without their prefix, lower case). The SQL
 * writers (calendar.append_event, calendar.append_calendar_changed, migration 0008)
 * and the TypeScript ones (event-log.ts) write those bodies; only this module knows
 * the wire format, and it is used where events leave the database:
 *  - the outbox relay publishes `encodeOutboxRow(row)` (the calendar module's
 *    OutboxRelay `encode` hook), subject = the message's full name;
 *  - WatchEvents streams `streamEvent(row)` for each row of calendar.events.
 *
 * Rows written before migration 0008 hold the encoded message in `data` and no body:
 * they are passed on (relay) or decoded (WatchEvents) as they are.
 *
 * Decoding a body is strict: a missing field, a value of the wrong type or an unknown
 * word throws, so a writer that disagrees with this module fails its tests instead of
 * publishing half an event.
 */
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import type { GenEnum } from '@bufbuild/protobuf/codegenv2';
import type { Timestamp } from '@bufbuild/protobuf/wkt';
import {
  BookingCancelledSchema,
  BookingConfirmedSchema,
  CalendarChangeKindSchema,
  CalendarChangedSchema,
  CancellationInitiatorSchema,
  NightHolderKindSchema,
  UserErasedSchema,
  type BookingCancelled,
  type BookingConfirmed,
  type CalendarChanged,
  type UserErased,
} from '../../gen/psync/calendar/v1/events_pb';
import type { CalendarChangeKind, CancellationInitiator, NightHolderKind } from '../../gen/psync/calendar/v1/events_pb';
import { EnvironmentSchema } from '../../gen/psync/common/v1/environment_pb';
import type { Environment } from '../../gen/psync/common/v1/environment_pb';
import type { OutboxMessage, OutboxRow } from '../kit/events';

/** An enum's values by word: the value name without its prefix, lower case (UNSPECIFIED left out). */
function wordsOf<E extends number>(schema: GenEnum<E>): ReadonlyMap<string, E> {
  return new Map(schema.values.filter((v) => v.number !== 0).map((v) => [v.localName.toLowerCase(), v.number as E]));
}

const CHANGE_KINDS = wordsOf<CalendarChangeKind>(CalendarChangeKindSchema);
const HOLDER_KINDS = wordsOf<NightHolderKind>(NightHolderKindSchema);
const ENVIRONMENTS = wordsOf<Environment>(EnvironmentSchema);
const INITIATORS = wordsOf<CancellationInitiator>(CancellationInitiatorSchema);

/** An enum's words as a type: 'UNSPECIFIED' | 'HOLD_EXPIRED' | … → 'hold_expired' | …. */
type Words<E> = Exclude<Lowercase<keyof E & string>, 'unspecified'>;

/** What happened to a holder's nights: block_created, block_moved, …, booking_cancelled. */
export type ChangeKindWord = Words<typeof CalendarChangeKind>;
/** What holds nights: block, hold, booking, withdrawn (calendar.claims.holder_kind). */
export type HolderKindWord = Words<typeof NightHolderKind>;
export type EnvironmentWord = Words<typeof Environment>;
export type InitiatorWord = Words<typeof CancellationInitiator>;

/** Nights [check_in, check_out), "YYYY-MM-DD". */
export type NightRangeBody = {
  check_in: string;
  check_out: string;
};

/**
 * The bodies (types, not interfaces, so they are JSON values to postgres.js). Times are
 * ISO 8601 in UTC ("2031-05-06T07:08:09.123Z"; up to 9 fraction digits).
 */
export type CalendarChangedBody = {
  occurred_at: string;
  workspace_id: string;
  listing_id: string;
  kind: ChangeKindWord;
  holder_kind: HolderKindWord;
  holder_id: string;
  released: NightRangeBody | null;
  held: NightRangeBody | null;
};

/** The fields every body of an event scoped to a workspace's environment opens with. */
type EnvironmentEventBody = {
  occurred_at: string;
  workspace_id: string;
  environment: EnvironmentWord;
};

/** The fields every booking event's body opens with. */
type BookingEventBody = EnvironmentEventBody & {
  booking_reference: string;
  listing_id: string;
  provider_id: string | null;
};

export type BookingConfirmedBody = BookingEventBody & {
  check_in: string;
  check_out: string;
  check_in_time: string;
  check_out_time: string;
  party_size: number;
  /**
   * Never written: events carry no personal data (docs/decisions.md, "No guest data on
   * the bus"). A body written by an earlier release may still hold the name (EraseGuest
   * empties it); it is never encoded.
   */
  guest_name?: never;
  amount_paid: { value: string; currency: string };
};

export type BookingCancelledBody = BookingEventBody & {
  cancelled_at: string;
  initiated_by: InitiatorWord;
};

export type UserErasedBody = EnvironmentEventBody & {
  erasure_id: string;
  booking_references: string[];
  provider_ids: string[];
};

/** The body of each event type. */
export type EventBodies = {
  calendar_changed: CalendarChangedBody;
  booking_confirmed: BookingConfirmedBody;
  booking_cancelled: BookingCancelledBody;
  user_erased: UserErasedBody;
};
export type EventType = keyof EventBodies;

/** Event types streamed by WatchEvents (calendar.events.type); user_erased goes to the bus only. */
export type StreamType = Exclude<EventType, 'user_erased'>;

/** A body as stored: any JSON, checked while it is decoded. */
type Json = Record<string, unknown>;

class BodyError extends Error {}

function object(v: unknown, what: string): Json {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new BodyError(`${what}: not an object`);
  return v as Json;
}

function text(b: Json, key: string): string {
  const v = b[key];
  if (typeof v !== 'string') throw new BodyError(`${key}: not a string`);
  return v;
}

function optionalText(b: Json, key: string): string | undefined {
  const v = b[key];
  if (v === null || v === undefined) return undefined;
  if (typeof v !== 'string') throw new BodyError(`${key}: not a string or null`);
  return v;
}

function texts(b: Json, key: string): string[] {
  const v = b[key];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new BodyError(`${key}: not a list of strings`);
  return v;
}

function integer(b: Json, key: string): number {
  const v = b[key];
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new BodyError(`${key}: not an integer`);
  return v;
}

function word<E extends number>(words: ReadonlyMap<string, E>, b: Json, key: string): E {
  const v = words.get(text(b, key));
  if (v === undefined) throw new BodyError(`${key}: unknown value ${JSON.stringify(b[key])}`);
  return v;
}

const TIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$/;

/** A google.protobuf.Timestamp from an ISO 8601 UTC time, to the nanosecond. */
function timestamp(b: Json, key: string): Timestamp {
  const m = TIME.exec(text(b, key));
  const ms = m ? Date.parse(`${m[1]}Z`) : NaN;
  if (!m || Number.isNaN(ms)) throw new BodyError(`${key}: not an ISO 8601 UTC time`);
  return { $typeName: 'google.protobuf.Timestamp', seconds: BigInt(ms / 1000), nanos: Number((m[2] ?? '').padEnd(9, '0')) };
}

function nightRange(b: Json, key: string) {
  if (b[key] === null || b[key] === undefined) return undefined;
  const r = object(b[key], key);
  return { checkIn: text(r, 'check_in'), checkOut: text(r, 'check_out') };
}

/** The fields every event scoped to a workspace's environment opens with. */
function environmentFields(id: string, b: Json) {
  return {
    eventId: id,
    occurredAt: timestamp(b, 'occurred_at'),
    workspaceId: text(b, 'workspace_id'),
    environment: word(ENVIRONMENTS, b, 'environment'),
  };
}

/** The fields every booking event opens with. */
function bookingFields(id: string, b: Json) {
  return {
    ...environmentFields(id, b),
    bookingReference: text(b, 'booking_reference'),
    listingId: text(b, 'listing_id'),
    providerId: optionalText(b, 'provider_id'),
  };
}

/** Builds each message from its event id and body. */
const MESSAGES = {
  calendar_changed: {
    schema: CalendarChangedSchema,
    build: (id: string, b: Json): CalendarChanged =>
      create(CalendarChangedSchema, {
        eventId: id,
        occurredAt: timestamp(b, 'occurred_at'),
        workspaceId: text(b, 'workspace_id'),
        listingId: text(b, 'listing_id'),
        kind: word(CHANGE_KINDS, b, 'kind'),
        holder: { kind: word(HOLDER_KINDS, b, 'holder_kind'), id: text(b, 'holder_id') },
        released: nightRange(b, 'released'),
        held: nightRange(b, 'held'),
      }),
  },
  booking_confirmed: {
    schema: BookingConfirmedSchema,
    build: (id: string, b: Json): BookingConfirmed => {
      const amount = object(b.amount_paid, 'amount_paid');
      return create(BookingConfirmedSchema, {
        ...bookingFields(id, b),
        checkIn: text(b, 'check_in'),
        checkOut: text(b, 'check_out'),
        checkInTime: text(b, 'check_in_time'),
        checkOutTime: text(b, 'check_out_time'),
        partySize: integer(b, 'party_size'),
        amountPaid: { value: text(amount, 'value'), currency: text(amount, 'currency') },
      });
    },
  },
  booking_cancelled: {
    schema: BookingCancelledSchema,
    build: (id: string, b: Json): BookingCancelled =>
      create(BookingCancelledSchema, {
        ...bookingFields(id, b),
        cancelledAt: timestamp(b, 'cancelled_at'),
        initiatedBy: word(INITIATORS, b, 'initiated_by'),
      }),
  },
  user_erased: {
    schema: UserErasedSchema,
    build: (id: string, b: Json): UserErased =>
      create(UserErasedSchema, {
        ...environmentFields(id, b),
        erasureId: text(b, 'erasure_id'),
        bookingReferences: texts(b, 'booking_references'),
        providerIds: texts(b, 'provider_ids'),
      }),
  },
} as const;

type Messages = typeof MESSAGES;

/** The bus subject of each event type: the message's full name (below BUS_PREFIX). */
export const CalendarSubjects: { readonly [T in EventType]: string } = {
  calendar_changed: CalendarChangedSchema.typeName,
  booking_confirmed: BookingConfirmedSchema.typeName,
  booking_cancelled: BookingCancelledSchema.typeName,
  user_erased: UserErasedSchema.typeName,
};

function isEventType(type: string): type is EventType {
  return Object.hasOwn(MESSAGES, type);
}

/** The message of one event, from its id and stored body; throws on a body this module does not understand. */
export function eventMessage<T extends EventType>(type: T, id: string, body: unknown): ReturnType<Messages[T]['build']> {
  try {
    return MESSAGES[type].build(id, object(body, 'body')) as ReturnType<Messages[T]['build']>;
  } catch (err) {
    if (err instanceof BodyError) throw new Error(`calendar event ${id} (${type}): malformed body: ${err.message}`, { cause: err });
    throw err;
  }
}

/** The protobuf binary of one event and the bus subject it goes to. */
export function encodeEvent(type: EventType, id: string, body: unknown): { subject: string; data: Uint8Array } {
  const schema: DescMessage = MESSAGES[type].schema;
  return { subject: CalendarSubjects[type], data: toBinary(schema, eventMessage(type, id, body) as MessageShape<DescMessage>) };
}

/**
 * The calendar's OutboxRelay `encode` hook: a plain row (its `subject` holds the event
 * type) becomes the message under its subject; an encoded row goes out as stored.
 */
export function encodeOutboxRow(row: OutboxRow): OutboxMessage {
  if (row.data !== null) return { subject: row.subject, data: withoutPersonalData(row.subject, row.data), headers: row.headers };
  if (!isEventType(row.subject)) throw new Error(`calendar outbox row ${row.id}: unknown event type ${JSON.stringify(row.subject)}`);
  return { ...encodeEvent(row.subject, row.id, row.body), headers: row.headers, orderKey: listingOrderKey(row.body) };
}

/**
 * The aggregate whose events keep commit order on the bus (OutboxRelay): a listing's
 * events within its workspace; an event of no listing (UserErased) orders against every
 * event of its workspace (the relay's default, from the `workspace_id` header).
 */
function listingOrderKey(body: unknown): readonly string[] | undefined {
  const b = body as { workspace_id?: unknown; listing_id?: unknown } | null;
  return typeof b?.workspace_id === 'string' && typeof b.listing_id === 'string' ? [b.workspace_id, b.listing_id] : undefined;
}

/** A row of calendar.events as WatchEvents reads it. */
export interface StreamRow {
  id: string;
  type: StreamType;
  data: Uint8Array | null;
  body: unknown;
}

/** The WatchEventsResponse `event` of one row of calendar.events. */
export type StreamEvent =
  { case: 'calendarChanged'; value: CalendarChanged } | { case: 'bookingConfirmed'; value: BookingConfirmed } | { case: 'bookingCancelled'; value: BookingCancelled };

/** Decodes (a row written before migration 0008) or builds (a plain row) the streamed message. */
export function streamEvent(row: StreamRow): StreamEvent {
  const message = <T extends StreamType>(type: T) =>
    row.data === null
      ? eventMessage(type, row.id, row.body)
      : (fromBinary(MESSAGES[type].schema, withoutPersonalData(CalendarSubjects[type], row.data)) as ReturnType<Messages[T]['build']>);
  switch (row.type) {
    case 'calendar_changed':
      return { case: 'calendarChanged', value: message('calendar_changed') };
    case 'booking_confirmed':
      return { case: 'bookingConfirmed', value: message('booking_confirmed') };
    case 'booking_cancelled':
      return { case: 'bookingCancelled', value: message('booking_cancelled') };
  }
}

/** An encoded BookingConfirmed (a row written before migration 0008) with the guest's name removed. */
export function withoutGuestName(data: Uint8Array): Uint8Array {
  const msg = fromBinary(BookingConfirmedSchema, data);
  msg.guestName = '';
  return toBinary(BookingConfirmedSchema, msg);
}

/**
 * An encoded event as stored (a row written before migration 0008) as it may leave the
 * calendar: a BookingConfirmed loses the guest's name, which no event carries.
 */
function withoutPersonalData(subject: string, data: Uint8Array): Uint8Array {
  return subject === CalendarSubjects.booking_confirmed ? withoutGuestName(data) : data;
}
