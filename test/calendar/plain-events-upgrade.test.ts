/**
 * Upgrading a database whose calendar events were written as protobuf bytes (by the
 * SQL encoder of migration 0003 and by the TypeScript of the time) to plain events
 * (kit migration 0004, calendar migration 0008), with those events neither relayed nor
 * streamed yet: the relay publishes the old rows exactly as stored and the new ones
 * encoded by event-codec.ts; WatchEvents streams both; EraseGuest scrubs the guest's
 * name from both forms. The upgrade replays the landed files (the baselines replace them
 * on a new schema only), then migrates from the tree. Real PostgreSQL with DATABASE_URL,
 * embedded PGlite otherwise.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import type { HandlerContext } from '@connectrpc/connect';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EraseGuestRequestSchema, WatchEventsRequestSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import {
  BookingConfirmedSchema,
  CalendarChangedSchema,
  CalendarChangeKind,
  NightHolderKind,
  type BookingConfirmed,
  type CalendarChanged,
} from '../../gen/psync/calendar/v1/events_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import type { CalendarDeps } from '../../services/calendar/calendar-deps';
import { eraseGuest } from '../../services/calendar/erasure';
import { encodeOutboxRow } from '../../services/calendar/event-codec';
import { appendEvents, bookingConfirmed } from '../../services/calendar/event-log';
import type { ListingDirectory } from '../../services/calendar/listings';
import { calendarModule } from '../../services/calendar/module';
import { WatchHub, watchEvents } from '../../services/calendar/watch';
import type { ReceivedEvent } from '../../services/kit/events';
import { createMemoryBus } from '../../services/kit/events';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS, type MigrationSource } from '../../services/kit/db';
import { OutboxRelay } from '../../services/kit/events';
import { testLogger } from '../support/bus';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { historySource } from '../support/migration-history';

jest.setTimeout(120_000);

const WS = '6f1c2a8e-0000-4000-8000-0000000000e1';
const LISTING = 'lst_upgrade';
const GUEST = 'guest-upgrade';
const OLD_AT = new Date('2031-05-06T07:08:09.123Z');
const NEW_AT = new Date('2031-05-07T08:09:10.456Z');

let db: TestDatabase;
let fixtures: string;

/** The landed files of `source` up to `last` (the migrations a database applied before the upgrade). */
const upTo = (source: MigrationSource, last: string) => historySource(join(fixtures, 'before'), source, { last });

async function insertBooking(reference: string): Promise<void> {
  await db.sql`
    insert into calendar.bookings (booking_reference, listing_id, workspace_id, environment, check_in, check_out, party_size,
      guest_id, guest_name, amount_value, amount_currency, requires_payment, status, confirmed_at)
    values (${reference}, ${LISTING}, ${WS}, 'sandbox', '2031-03-01', '2031-03-03', 2, ${GUEST}, 'Ada Lovelace', '120.00', 'EUR', false, 'confirmed', now())`;
}

/** The events as stored, in stream order. */
async function stored() {
  return db.sql<{ id: string; type: string; data: Buffer | null; body: Record<string, unknown> | null; outbox_data: Buffer | null; outbox_body: unknown }[]>`
    select e.id::text, e.type, e.data, e.body, o.data as outbox_data, o.body as outbox_body
    from calendar.events e join calendar.outbox o on o.id = e.id
    order by e.xid, e.seq`;
}

/** An old-style BookingConfirmed, as the TypeScript before migration 0008 encoded and wrote it. */
const oldBooking = (eventId: string): BookingConfirmed =>
  create(BookingConfirmedSchema, {
    eventId,
    occurredAt: { seconds: BigInt(Math.floor(OLD_AT.getTime() / 1000)), nanos: 123_000_000 },
    workspaceId: WS,
    environment: Environment.SANDBOX,
    bookingReference: 'BKOLD0000001',
    listingId: LISTING,
    checkIn: '2031-03-01',
    checkOut: '2031-03-03',
    checkInTime: '15:00',
    checkOutTime: '10:00',
    partySize: 2,
    guestName: 'Ada Lovelace',
    amountPaid: { value: '120.00', currency: 'EUR' },
  });

let applied: string[];

beforeAll(async () => {
  fixtures = mkdtempSync(join(tmpdir(), 'psync-plain-events-'));
  db = await startTestDatabase();
  await runMigrations(db.sql, {
    schema: 'calendar',
    sources: [upTo(KIT_MIGRATIONS, '0003_processed_events_age.sql'), upTo(calendarModule.migrations, '0007_idempotency_keys.sql')],
  });

  // Before the upgrade: a block pushed through put_block (encoded in SQL) and a booking
  // confirmed by the TypeScript of the time (encoded there), neither relayed.
  await db.sql`select * from calendar.put_block(${WS}, 'old-block', ${LISTING}, '2031-01-01', '2031-01-03', 'reserved', ${OLD_AT}, '{"traceparent": "t-old"}'::jsonb)`;
  await insertBooking('BKOLD0000001');
  await db.sql.begin(async (tx) => {
    await tx`select calendar.begin_event_write()`;
    const id = '3d2c1b0a-0000-4000-8000-0000000000e1';
    const data = Buffer.from(toBinary(BookingConfirmedSchema, oldBooking(id)));
    await tx`insert into calendar.events (id, workspace_id, listing_id, type, booking_reference, data) values (${id}, ${WS}, ${LISTING}, 'booking_confirmed', 'BKOLD0000001', ${data})`;
    await tx`insert into calendar.outbox (id, subject, data, headers) values (${id}, 'psync.calendar.v1.BookingConfirmed', ${data}, ${tx.json({ workspace_id: WS })})`;
  });

  // The upgrade (the landed files, then the tree, whose baselines it skips), then the same kinds of events written by the new code.
  const landed = [KIT_MIGRATIONS, calendarModule.migrations].map((s) => historySource(join(fixtures, 'landed'), s, { functions: true }));
  applied = (await runMigrations(db.sql, { schema: 'calendar', sources: landed })).applied;
  expect((await runMigrations(db.sql, { schema: 'calendar', sources: [KIT_MIGRATIONS, calendarModule.migrations] })).applied).toEqual([]);
  await db.sql`select * from calendar.put_block(${WS}, 'new-block', ${LISTING}, '2031-02-01', '2031-02-04', 'reserved', ${NEW_AT}, '{"traceparent": "t-new"}'::jsonb)`;
  await insertBooking('BKNEW0000001');
  await db.sql.begin(async (tx) => {
    await tx`select calendar.begin_event_write()`;
    await appendEvents(tx, [
      bookingConfirmed({
        occurred_at: NEW_AT.toISOString(),
        workspace_id: WS,
        environment: 'sandbox',
        booking_reference: 'BKNEW0000001',
        listing_id: LISTING,
        provider_id: null,
        check_in: '2031-03-01',
        check_out: '2031-03-03',
        check_in_time: '15:00',
        check_out_time: '10:00',
        party_size: 2,
        amount_paid: { value: '120.00', currency: 'EUR' },
      }),
    ]);
  });
}, 120_000);

afterAll(async () => {
  await db?.stop();
  if (fixtures) rmSync(fixtures, { recursive: true, force: true });
});

test('the upgrade applies the outbox writer and plain events; old rows keep their bytes, new rows are plain', async () => {
  // The upgrade applies these two (and whatever later migrations exist, after them).
  expect(applied.slice(0, 2)).toEqual(['kit/0004_outbox_writer', 'calendar/0008_plain_events']);
  const rows = await stored();
  expect(rows.map((r) => [r.type, r.data !== null, r.body !== null])).toEqual([
    ['calendar_changed', true, false],
    ['booking_confirmed', true, false],
    ['calendar_changed', false, true],
    ['booking_confirmed', false, true],
  ]);
  for (const r of rows) expect([r.outbox_data, r.outbox_body]).toEqual([r.data, r.body]);
});

test('the relay publishes every row not yet relayed: old ones as stored, new ones encoded, each under its message name', async () => {
  const bus = createMemoryBus({ log: testLogger() });
  const got: ReceivedEvent[] = [];
  const sub = await bus.subscribe({ durable: 'upgrade-test', subjects: ['psync.calendar.v1.>'], handler: async (e) => void got.push(e) });
  try {
    const relay = new OutboxRelay({ sql: db.sql, schema: 'calendar', bus, log: testLogger(), encode: encodeOutboxRow });
    expect(await relay.relayOnce()).toBe(4);
    for (let i = 0; got.length < 4 && i < 200; i++) await new Promise((r) => setTimeout(r, 25));
    const rows = await stored();
    const byId = new Map(got.map((e) => [e.id, e]));
    expect([...byId.keys()].sort()).toEqual(rows.map((r) => r.id).sort());

    const [oldBlock, oldBook, newBlock, newBook] = rows.map((r) => byId.get(r.id)!);
    // Old rows: the very bytes the old encoders stored.
    expect(oldBlock!.subject).toBe('psync.calendar.v1.CalendarChanged');
    expect(Buffer.from(oldBlock!.data).equals(rows[0]!.data!)).toBe(true);
    expect(oldBlock!.headers).toMatchObject({ traceparent: 't-old', workspace_id: WS });
    expect(oldBook!.subject).toBe('psync.calendar.v1.BookingConfirmed');
    // An old booking leaves without the guest's name the old encoder stored: no event carries it.
    expect(fromBinary(BookingConfirmedSchema, oldBook!.data)).toEqual({ ...fromBinary(BookingConfirmedSchema, rows[1]!.data!), guestName: '' });
    expect(fromBinary(BookingConfirmedSchema, rows[1]!.data!).guestName).toBe('Ada Lovelace');
    // New rows: the messages their bodies describe.
    expect(newBlock!.subject).toBe('psync.calendar.v1.CalendarChanged');
    expect(newBlock!.headers).toMatchObject({ traceparent: 't-new', workspace_id: WS });
    expect(fromBinary(CalendarChangedSchema, newBlock!.data)).toMatchObject({
      eventId: rows[2]!.id,
      occurredAt: { seconds: BigInt(Math.floor(NEW_AT.getTime() / 1000)), nanos: 456_000_000 },
      workspaceId: WS,
      listingId: LISTING,
      kind: CalendarChangeKind.BLOCK_CREATED,
      holder: { kind: NightHolderKind.BLOCK, id: 'new-block' },
      held: { checkIn: '2031-02-01', checkOut: '2031-02-04' },
    });
    expect(newBook!.subject).toBe('psync.calendar.v1.BookingConfirmed');
    // The same booking written both ways is the same message, but for its id and time.
    const fresh = fromBinary(BookingConfirmedSchema, newBook!.data);
    expect({ ...fresh, eventId: '', occurredAt: undefined }).toEqual({ ...oldBooking(''), occurredAt: undefined, bookingReference: 'BKNEW0000001', guestName: '' });
    expect(fresh.eventId).toBe(rows[3]!.id);
  } finally {
    await sub.stop();
    await bus.close();
  }
});

test('WatchEvents streams old and new rows in order, decoded or built', async () => {
  const hub = new WatchHub();
  const abort = new AbortController();
  const seen: { case: string | undefined; value: CalendarChanged | BookingConfirmed }[] = [];
  for await (const m of watchEvents(db.sql, hub, create(WatchEventsRequestSchema, {}), { signal: abort.signal } as HandlerContext)) {
    seen.push(m.event as (typeof seen)[number]);
    if (seen.length === 4) abort.abort();
  }
  hub.close();
  const rows = await stored();
  expect(seen.map((e) => [e.case, e.value.eventId])).toEqual([
    ['calendarChanged', rows[0]!.id],
    ['bookingConfirmed', rows[1]!.id],
    ['calendarChanged', rows[2]!.id],
    ['bookingConfirmed', rows[3]!.id],
  ]);
  expect((seen[0]!.value as CalendarChanged).holder).toMatchObject({ kind: NightHolderKind.BLOCK, id: 'old-block' });
  expect((seen[2]!.value as CalendarChanged).holder).toMatchObject({ kind: NightHolderKind.BLOCK, id: 'new-block' });
  // Streamed events carry no guest name either (GetBooking has it).
  expect((seen[1]!.value as BookingConfirmed).guestName).toBe('');
  expect((seen[3]!.value as BookingConfirmed).guestName).toBe('');
});

test("EraseGuest empties the guest's name in both forms, in the log and the outbox", async () => {
  const deps: CalendarDeps = {
    sql: db.sql,
    log: testLogger(),
    listings: {} as ListingDirectory,
    holdTtlSeconds: 900,
    eventsCommitted: () => undefined,
  };
  const res = await eraseGuest(deps, create(EraseGuestRequestSchema, { guestId: GUEST }));
  expect(res).toMatchObject({ bookingsErased: 2, workspacesNotified: 1 });
  const rows = (await stored()).filter((r) => r.type === 'booking_confirmed');
  expect(rows).toHaveLength(2);
  const [old, fresh] = rows;
  expect(fromBinary(BookingConfirmedSchema, old!.data!).guestName).toBe('');
  expect(fromBinary(BookingConfirmedSchema, old!.outbox_data!).guestName).toBe('');
  // A new row never held the name, and gets no such field.
  expect(fresh!.body).not.toHaveProperty('guest_name');
  expect(fresh!.outbox_body).not.toHaveProperty('guest_name');
  // The user_erased event is plain too, bus only (not in the log).
  const [erased] = await db.sql<{ subject: string; body: Record<string, unknown> }[]>`
    select subject, body from calendar.outbox where subject = 'user_erased'`;
  expect(erased!.body).toMatchObject({ workspace_id: WS, environment: 'sandbox', booking_references: ['BKNEW0000001', 'BKOLD0000001'], provider_ids: [] });
  expect(await db.sql`select 1 from calendar.events where type not in ('calendar_changed', 'booking_confirmed', 'booking_cancelled')`).toHaveLength(0);
});
