/**
 * The calendar's SQL write path (migrations 0003, 0008) against the test database (real
 * PostgreSQL with DATABASE_URL, embedded PGlite otherwise), below the service:
 *  - the calendar_changed bodies `append_calendar_changed` writes (put_block,
 *    expire_holds) encode, through event-codec.ts, to exactly the bytes of the bodies
 *    event-log.ts writes, so events from SQL and from TypeScript are indistinguishable;
 *  - `put_block`'s outcomes where the service-level tests cannot set the stage
 *    precisely: overdue holds, what a refused push leaves (nothing), event order.
 * The state table itself is covered through the service by blocks.test.ts.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { PutBlockRequestSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import {
  CalendarChangedSchema,
  CalendarChangeKind,
  CalendarChangeKindSchema,
  NightHolderKind,
  NightHolderKindSchema,
  type CalendarChanged,
} from '../../gen/psync/calendar/v1/events_pb';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { calendarChanged } from '../../services/calendar/event-log';
import { encodeEvent, encodeOutboxRow, eventMessage, streamEvent } from '../../services/calendar/event-codec';
import { calendarModule } from '../../services/calendar/module';
import { putBlock } from '../../services/calendar/blocks';
import { conflictDatesOf } from './support';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { directDeps } from './support/direct-deps';

jest.setTimeout(120_000);

let db: TestDatabase;

beforeAll(async () => {
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'calendar', sources: [KIT_MIGRATIONS, calendarModule.migrations] });
}, 120_000);

afterAll(async () => {
  await db?.stop();
});

interface PutRow {
  outcome: string;
  conflicts: string[];
  events: number;
  listing_id: string | null;
  check_in: string | null;
  check_out: string | null;
  reason: string | null;
  nights: number | null;
  created_at: Date | null;
  updated_at: Date | null;
}

const WS = '6f1c2a8e-0000-4000-8000-000000000001';
let n = 0;
const fresh = (label: string) => `${label}-${++n}`;

async function put(uid: string, listing: string, checkIn: string, checkOut: string, reason = 'reserved', at = new Date()): Promise<PutRow> {
  const sql = db.sql;
  const [row] = await sql<PutRow[]>`
    select * from calendar.put_block(${WS}, ${uid}, ${listing}, ${checkIn}::date, ${checkOut}::date, ${reason}, ${at},
                                     ${sql.json({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' })})`;
  return row!;
}

/** A live hold with its claim, expiring `expiresInSeconds` from now (negative: overdue). */
async function hold(listing: string, checkIn: string, checkOut: string, expiresInSeconds: number): Promise<string> {
  const sql = db.sql;
  const [h] = await sql<{ hold_id: string }[]>`
    with h as (
      insert into calendar.holds (hold_id, listing_id, workspace_id, check_in, check_out, requires_payment, status, expires_at)
      values (gen_random_uuid(), ${listing}, ${WS}, ${checkIn}::date, ${checkOut}::date, false, 'live',
              now() + make_interval(secs => ${expiresInSeconds}))
      returning hold_id, listing_id, check_in, check_out
    ), c as (
      insert into calendar.claims (listing_id, holder_kind, holder_id, nights)
      select listing_id, 'hold', hold_id::text, daterange(check_in, check_out) from h
    )
    select hold_id::text from h`;
  return h!.hold_id;
}

/** The events of `listings` in stream order, as WatchEvents builds them, with the outbox row of each. */
async function eventsOf(...listings: string[]) {
  const sql = db.sql;
  const rows = await sql<
    {
      id: string;
      xid: string;
      data: Buffer | null;
      body: unknown;
      subject: string | null;
      outbox_data: Buffer | null;
      outbox_body: unknown;
      headers: Record<string, string> | null;
    }[]
  >`
    select e.id::text, e.xid::text, e.data, e.body, o.subject, o.data as outbox_data, o.body as outbox_body, o.headers
    from calendar.events e left join calendar.outbox o on o.id = e.id
    where e.listing_id in ${sql(listings)}
    order by e.xid, e.seq`;
  return rows.map((r) => ({ ...r, msg: streamEvent({ ...r, type: 'calendar_changed' }).value as CalendarChanged }));
}

const summary = (e: Awaited<ReturnType<typeof eventsOf>>[number]) => ({
  listing: e.msg.listingId,
  kind: e.msg.kind,
  holder: [e.msg.holder?.kind, e.msg.holder?.id],
  released: e.msg.released ? [e.msg.released.checkIn, e.msg.released.checkOut] : null,
  held: e.msg.held ? [e.msg.held.checkIn, e.msg.held.checkOut] : null,
});

describe('calendar_changed bodies', () => {
  const cases: Parameters<typeof calendarChanged>[0][] = [
    {
      at: new Date('2031-05-06T07:08:09.123Z'),
      workspaceId: WS,
      listingId: 'lst_01',
      kind: 'block_created',
      holder: { kind: 'block', id: 'b-1' },
      held: { checkIn: '2031-01-01', checkOut: '2031-01-05' },
    },
    {
      at: new Date('2031-05-06T07:08:09.000Z'),
      workspaceId: WS,
      listingId: 'lst_01',
      kind: 'block_moved',
      holder: { kind: 'block', id: 'b-1' },
      released: { checkIn: '2031-01-01', checkOut: '2031-01-05' },
      held: { checkIn: '2031-02-01', checkOut: '2031-02-03' },
    },
    {
      at: new Date('2031-05-06T07:08:09.999Z'),
      workspaceId: WS,
      listingId: 'lst_02',
      kind: 'block_moved',
      holder: { kind: 'block', id: 'b-1' },
      released: { checkIn: '2031-01-01', checkOut: '2031-01-05' },
    },
    {
      at: new Date('2029-12-31T23:59:59.001Z'),
      workspaceId: WS,
      listingId: 'lst_03',
      kind: 'hold_expired',
      holder: { kind: 'hold', id: '1b4e28ba-2fa1-11d2-883f-0016d3cca427' },
      released: { checkIn: '2030-12-30', checkOut: '2031-12-30' },
    },
    {
      at: new Date('2031-05-06T07:08:09.5Z'),
      workspaceId: WS,
      listingId: 'lst_04',
      kind: 'booking_cancelled',
      holder: { kind: 'withdrawn', id: 'BK0123456789' },
      held: { checkIn: '2031-01-01', checkOut: '2031-01-02' },
    },
    // Multi-byte UTF-8, long strings, a time before the epoch.
    {
      at: new Date('1969-07-20T20:17:40.250Z'),
      workspaceId: '',
      listingId: 'l'.repeat(255),
      kind: 'block_created',
      holder: { kind: 'block', id: 'é✓😀'.repeat(40) },
      held: { checkIn: '2031-01-01', checkOut: '2033-01-01' },
    },
  ];

  test('every CalendarChangeKind and NightHolderKind of the proto has a word, and every word a value', () => {
    const words = (schema: typeof CalendarChangeKindSchema | typeof NightHolderKindSchema) => schema.values.filter((v) => v.number !== 0).map((v) => v.localName.toLowerCase());
    expect(words(CalendarChangeKindSchema)).toEqual([
      'block_created',
      'block_moved',
      'block_deleted',
      'hold_placed',
      'hold_released',
      'hold_expired',
      'booking_confirmed',
      'booking_cancelled',
    ]);
    // The holder kinds are calendar.claims' own words.
    expect(words(NightHolderKindSchema)).toEqual(['block', 'hold', 'booking', 'withdrawn']);
  });

  test.each(cases.map((c, i) => [i, c] as const))('case %i: SQL and TypeScript bodies encode to the same bytes', async (_i, c) => {
    const ts = calendarChanged(c);
    const range = (r?: { checkIn: string; checkOut: string }) => (r ? `[${r.checkIn},${r.checkOut})` : null);
    const [row] = await db.sql.begin(async (tx) => {
      await tx`select calendar.begin_event_write()`;
      await tx`
        select calendar.append_calendar_changed(${c.at}, '{}'::jsonb, ${c.workspaceId}, ${c.listingId}, ${c.kind}, ${c.holder.kind},
                                                ${c.holder.id}, ${range(c.released)}::daterange, ${range(c.held)}::daterange)`;
      return tx<{ id: string; data: Buffer | null; body: unknown }[]>`
        select id::text, data, body from calendar.events where listing_id = ${c.listingId} order by seq desc limit 1`;
    });
    expect(row!.data).toBeNull();
    const fromSql = encodeEvent('calendar_changed', row!.id, row!.body);
    const fromTs = encodeEvent('calendar_changed', row!.id, ts.body);
    expect(fromSql.subject).toBe('psync.calendar.v1.CalendarChanged');
    expect(Buffer.from(fromSql.data).toString('hex')).toBe(Buffer.from(fromTs.data).toString('hex'));
    // And both are the message the fields describe.
    const expected = create(CalendarChangedSchema, {
      eventId: row!.id,
      occurredAt: { seconds: BigInt(Math.floor(c.at.getTime() / 1000)), nanos: (((c.at.getTime() % 1000) + 1000) % 1000) * 1_000_000 },
      workspaceId: c.workspaceId,
      listingId: c.listingId,
      kind: CalendarChangeKindSchema.values.find((v) => v.localName.toLowerCase() === c.kind)!.number,
      holder: { kind: NightHolderKindSchema.values.find((v) => v.localName.toLowerCase() === c.holder.kind)!.number, id: c.holder.id },
      released: c.released,
      held: c.held,
    });
    expect(Buffer.from(fromTs.data).toString('hex')).toBe(Buffer.from(toBinary(CalendarChangedSchema, expected)).toString('hex'));
  });

  test('a body the encoder does not understand fails loudly, naming the event and the field', () => {
    const good = calendarChanged(cases[0]!).body;
    expect(() => eventMessage('calendar_changed', 'e-1', { ...good, kind: 'block_exploded' })).toThrow(/e-1.*kind: unknown value "block_exploded"/);
    expect(() => eventMessage('calendar_changed', 'e-2', { ...good, occurred_at: '2031-05-06 07:08:09' })).toThrow(/e-2.*occurred_at/);
    const { holder_id: _dropped, ...missing } = good;
    expect(() => eventMessage('calendar_changed', 'e-3', missing)).toThrow(/e-3.*holder_id: not a string/);
    expect(() => eventMessage('calendar_changed', 'e-4', null)).toThrow(/e-4.*not an object/);
    expect(() => encodeOutboxRow({ id: 'e-5', subject: 'calendar_exploded', data: null, body: good, headers: {} })).toThrow(/e-5.*unknown event type/);
  });
});

describe('put_block', () => {
  test('created: the block, its claim and BLOCK_CREATED with outbox row, trace headers and workspace_id', async () => {
    const listing = fresh('lst');
    const uid = fresh('b');
    const at = new Date('2031-05-06T07:08:09.123Z');
    const r = await put(uid, listing, '2031-01-01', '2031-01-05', 'maintenance', at);
    expect(r).toMatchObject({
      outcome: 'created',
      conflicts: [],
      events: 1,
      listing_id: listing,
      check_in: '2031-01-01',
      check_out: '2031-01-05',
      reason: 'maintenance',
      nights: 4,
    });
    expect(r.created_at).toEqual(at);
    const [claim] = await db.sql<{ nights: string }[]>`select nights::text from calendar.claims where listing_id = ${listing}`;
    expect(claim!.nights).toBe('[2031-01-01,2031-01-05)');
    const events = await eventsOf(listing);
    expect(events.map(summary)).toEqual([
      { listing, kind: CalendarChangeKind.BLOCK_CREATED, holder: [NightHolderKind.BLOCK, uid], released: null, held: ['2031-01-01', '2031-01-05'] },
    ]);
    const e = events[0]!;
    expect(e.msg.eventId).toBe(e.id);
    expect(e.msg.workspaceId).toBe(WS);
    expect(e.msg.occurredAt?.seconds).toBe(BigInt(Math.floor(at.getTime() / 1000)));
    expect(e.msg.occurredAt?.nanos).toBe(123_000_000);
    // Plain rows: no protobuf in the database; the outbox row carries the same body under the type.
    expect(e.data).toBeNull();
    expect(e.outbox_data).toBeNull();
    expect(e.subject).toBe('calendar_changed');
    expect(e.outbox_body).toEqual(e.body);
    expect(e.headers).toEqual({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', workspace_id: WS });
    // What the relay publishes for it: the message under its full name, the headers as stored.
    const published = encodeOutboxRow({ id: e.id, subject: e.subject!, data: null, body: e.outbox_body, headers: e.headers! });
    expect(published.subject).toBe('psync.calendar.v1.CalendarChanged');
    expect(Buffer.from(published.data).toString('hex')).toBe(Buffer.from(toBinary(CalendarChangedSchema, e.msg)).toString('hex'));
    expect(published.headers).toEqual(e.headers);
  });

  test('unchanged (identical) and reason-only change write no event; a move writes BLOCK_MOVED', async () => {
    const listing = fresh('lst');
    const uid = fresh('b');
    const first = await put(uid, listing, '2031-01-01', '2031-01-05');
    const same = await put(uid, listing, '2031-01-01', '2031-01-05');
    expect(same).toMatchObject({ outcome: 'unchanged', events: 0, nights: 4 });
    expect(same.updated_at).toEqual(first.updated_at);
    const reason = await put(uid, listing, '2031-01-01', '2031-01-05', 'owner_stay');
    expect(reason).toMatchObject({ outcome: 'updated', events: 0, reason: 'owner_stay' });
    const moved = await put(uid, listing, '2031-01-03', '2031-01-09', 'owner_stay');
    expect(moved).toMatchObject({ outcome: 'updated', events: 1, check_in: '2031-01-03', check_out: '2031-01-09', nights: 6 });
    const [claim] = await db.sql<{ nights: string }[]>`select nights::text from calendar.claims where listing_id = ${listing}`;
    expect(claim!.nights).toBe('[2031-01-03,2031-01-09)');
    expect((await eventsOf(listing)).map(summary)).toEqual([
      { listing, kind: CalendarChangeKind.BLOCK_CREATED, holder: [NightHolderKind.BLOCK, uid], released: null, held: ['2031-01-01', '2031-01-05'] },
      { listing, kind: CalendarChangeKind.BLOCK_MOVED, holder: [NightHolderKind.BLOCK, uid], released: ['2031-01-01', '2031-01-05'], held: ['2031-01-03', '2031-01-09'] },
    ]);
  });

  test('moved to another listing: the claim follows, one event per listing, old listing first, one transaction', async () => {
    const a = fresh('lst');
    const b = fresh('lst');
    const uid = fresh('b');
    await put(uid, a, '2031-01-01', '2031-01-03');
    const moved = await put(uid, b, '2031-01-01', '2031-01-03');
    expect(moved).toMatchObject({ outcome: 'updated', events: 2, listing_id: b });
    const claims = await db.sql<{ listing_id: string }[]>`select listing_id from calendar.claims where holder_kind = 'block' and listing_id in (${a}, ${b})`;
    expect(claims.map((c) => c.listing_id)).toEqual([b]);
    const events = await eventsOf(a, b);
    expect(events.map(summary).slice(1)).toEqual([
      { listing: a, kind: CalendarChangeKind.BLOCK_MOVED, holder: [NightHolderKind.BLOCK, uid], released: ['2031-01-01', '2031-01-03'], held: null },
      { listing: b, kind: CalendarChangeKind.BLOCK_MOVED, holder: [NightHolderKind.BLOCK, uid], released: null, held: ['2031-01-01', '2031-01-03'] },
    ]);
    expect(events[1]!.xid).toBe(events[2]!.xid);
  });

  test('conflict: every colliding night of live holds and bookings, untruncated; nothing written, an overdue hold not expired', async () => {
    const listing = fresh('lst');
    const uid = fresh('b');
    await put(uid, listing, '2031-01-01', '2031-01-03');
    await hold(listing, '2031-01-10', '2031-01-13', 600);
    const overdue = await hold(listing, '2031-01-20', '2031-01-22', -5);
    await db.sql`insert into calendar.claims (listing_id, holder_kind, holder_id, nights) values (${listing}, 'booking', ${fresh('BK')}, '[2032-12-30,2033-01-02)')`;
    const before = await eventsOf(listing);
    // A move of the stored block across all of them: 730 nights.
    const r = await put(uid, listing, '2031-01-02', '2033-01-01');
    expect(r.outcome).toBe('conflict');
    expect(r.conflicts).toEqual(['2031-01-10', '2031-01-11', '2031-01-12', '2032-12-30', '2032-12-31']);
    expect(r.events).toBe(0);
    // The block kept its dates, the overdue hold is still live (its expiry would have been written), no event.
    const [block] = await db.sql<{ check_in: string; check_out: string }[]>`
      select check_in::text, check_out::text from calendar.blocks where workspace_id = ${WS} and external_uid = ${uid}`;
    expect(block).toEqual({ check_in: '2031-01-01', check_out: '2031-01-03' });
    const [h] = await db.sql<{ status: string }[]>`select status from calendar.holds where hold_id = ${overdue}`;
    expect(h!.status).toBe('live');
    expect(await eventsOf(listing)).toHaveLength(before.length);
    // The scan lists every night when all 730 collide.
    const full = fresh('lst');
    await db.sql`insert into calendar.claims (listing_id, holder_kind, holder_id, nights) values (${full}, 'booking', ${fresh('BK')}, '[2031-01-01,2032-12-31)')`;
    const all = await put(fresh('b'), full, '2031-01-01', '2032-12-31'); // 730 nights (2032 is a leap year)
    expect(all.conflicts).toHaveLength(730);
    expect(all.conflicts[0]).toBe('2031-01-01');
    expect(all.conflicts[729]).toBe('2032-12-30');
  });

  test('an overdue hold on the nights does not collide: it expires (HOLD_EXPIRED first) and the block lands, in one transaction', async () => {
    const listing = fresh('lst');
    const uid = fresh('b');
    const overdue = await hold(listing, '2031-03-01', '2031-03-04', -1);
    const elsewhere = await hold(listing, '2031-04-01', '2031-04-02', -1);
    const live = await hold(listing, '2031-05-01', '2031-05-02', 600);
    const r = await put(uid, listing, '2031-02-27', '2031-03-03');
    expect(r).toMatchObject({ outcome: 'created', events: 3 });
    const statuses = await db.sql<{ hold_id: string; status: string; expired_at_expiry: boolean }[]>`
      select hold_id::text, status, ended_at = expires_at as expired_at_expiry from calendar.holds where listing_id = ${listing}`;
    expect(Object.fromEntries(statuses.map((s) => [s.hold_id, [s.status, s.expired_at_expiry]]))).toEqual({
      [overdue]: ['expired', true],
      [elsewhere]: ['expired', true],
      [live]: ['live', null],
    });
    const claims = await db.sql<
      { holder_kind: string; holder_id: string }[]
    >`select holder_kind, holder_id from calendar.claims where listing_id = ${listing} order by holder_kind`;
    expect(claims.map((c) => c.holder_kind)).toEqual(['block', 'hold']);
    expect(claims[1]!.holder_id).toBe(live);
    const events = await eventsOf(listing);
    expect(events.map((e) => [e.msg.kind, e.msg.holder?.id]).sort()).toEqual(
      [
        [CalendarChangeKind.HOLD_EXPIRED, overdue],
        [CalendarChangeKind.HOLD_EXPIRED, elsewhere],
        [CalendarChangeKind.BLOCK_CREATED, uid],
      ].sort(),
    );
    expect(events.map((e) => e.msg.kind)).toEqual([CalendarChangeKind.HOLD_EXPIRED, CalendarChangeKind.HOLD_EXPIRED, CalendarChangeKind.BLOCK_CREATED]);
    expect(new Set(events.map((e) => e.xid)).size).toBe(1);
    expect(summary(events.find((e) => e.msg.holder?.id === overdue)!)).toMatchObject({
      released: ['2031-03-01', '2031-03-04'],
      held: null,
      holder: [NightHolderKind.HOLD, overdue],
    });
  });

  // Real PostgreSQL only: it needs three sessions at once (the embedded default has one).
  const realOnly = process.env.DATABASE_URL ? test : test.skip;
  realOnly('a racing writer that bypassed the lock: put_block hits 23P01 and PutBlock still answers CONFLICT with the nights, nothing written (real PostgreSQL only)', async () => {
    const listing = fresh('lst');
    const uid = fresh('b');
    const deps = directDeps(db.sql);
    // Session 1 holds an uncommitted row with the block's key: put_block's insert will wait on it.
    const s1 = await db.sql.reserve();
    try {
      await s1`begin`;
      await s1`insert into calendar.blocks (workspace_id, external_uid, listing_id, check_in, check_out, reason)
               values (${WS}, ${uid}, ${fresh('lst')}, '2031-07-01', '2031-07-02', 'reserved')`;
      const push = putBlock(
        deps,
        create(PutBlockRequestSchema, { workspaceId: WS, externalUid: uid, target: { case: 'listingId', value: listing }, checkIn: '2031-06-01', checkOut: '2031-06-05' }),
      ).then(
        () => undefined,
        (err: unknown) => err,
      );
      // Wait until put_block (past its lock and scan) waits for session 1 ...
      for (let i = 0; ; i++) {
        const [w] = await db.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and query like '%calendar.put_block%'`;
        if (w!.n > 0) break;
        if (i > 200) throw new Error('put_block never waited');
        await new Promise((r) => setTimeout(r, 25));
      }
      // ... then a writer that ignores the listing lock books nights in the range, and session 1 goes away.
      await db.sql`insert into calendar.claims (listing_id, holder_kind, holder_id, nights) values (${listing}, 'booking', ${fresh('BK')}, '[2031-06-03,2031-06-07)')`;
      await s1`rollback`;
      const err = ConnectError.from(await push);
      expect(err.code).toBe(Code.FailedPrecondition);
      expect(conflictDatesOf(err)).toEqual(['2031-06-03', '2031-06-04']);
    } finally {
      s1.release();
    }
    const blocks = await db.sql`select 1 from calendar.blocks where workspace_id = ${WS} and external_uid = ${uid}`;
    expect(blocks).toHaveLength(0);
    expect(await eventsOf(listing)).toHaveLength(0);
  });
});
