/**
 * The calendar's marketplace writes and DeleteBlock as SQL functions
 * (services/calendar/functions/: place_hold, release_hold, cancel_booking, delete_block,
 * sweep_holds, idempotency), against the test database (real PostgreSQL with
 * DATABASE_URL, embedded PGlite otherwise), below the service: what each writes, what a
 * refusal leaves (nothing), the event order, the key's lock, look-up and record. The
 * answers through the service are covered by marketplace.test.ts, idempotency.test.ts
 * and blocks.test.ts.
 */
import { createHash, randomUUID } from 'node:crypto';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { bookingCancelled, calendarChanged, type PendingEvent } from '../../services/calendar/event-log';
import { calendarModule } from '../../services/calendar/module';
import { startTestDatabase, type TestDatabase } from '../support/database';

jest.setTimeout(120_000);

let db: TestDatabase;

beforeAll(async () => {
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'calendar', sources: [KIT_MIGRATIONS, calendarModule.migrations] });
}, 120_000);

afterAll(async () => {
  await db?.stop();
});

const WS = '6f1c2a8e-0000-4000-8000-0000000000d1';
const AT = new Date('2031-05-06T07:08:09.123Z');
let n = 0;
const fresh = (label: string) => `${label}-${++n}`;
const sha = (s: string) => createHash('sha256').update(s).digest();

/** An idempotency key's arguments (caller, key, fingerprint), or none. */
type Key = [string, string, Buffer] | [null, null, null];
const NO_KEY: Key = [null, null, null];
const newKey = (request = 'request'): Key => ['marketplace', fresh('key'), sha(request)];

/** The calendar events of `listing` in stream order: type, kind and holder. */
async function eventsOf(listing: string): Promise<string[]> {
  const rows = await db.sql<{ type: string; kind: string | null; holder: string | null }[]>`
    select type, body->>'kind' as kind, body->>'holder_id' as holder from calendar.events where listing_id = ${listing} order by xid, seq`;
  return rows.map((r) => [r.type, r.kind, r.holder].filter((x) => x !== null).join(' '));
}

const placedEvent = (listing: string, holdId: string, checkIn: string, checkOut: string) =>
  calendarChanged({ at: AT, workspaceId: WS, listingId: listing, kind: 'hold_placed', holder: { kind: 'hold', id: holdId }, held: { checkIn, checkOut } });

interface PlaceRow {
  outcome: string;
  conflicts: string[] | null;
  expires_at: Date | null;
  key_rpc: string | null;
  key_sha256: Buffer | null;
  result_ref: string | null;
}

async function placeHold(listing: string, checkIn: string, checkOut: string, opts: { ttl?: number; key?: Key; holdId?: string } = {}): Promise<PlaceRow & { holdId: string }> {
  const holdId = opts.holdId ?? randomUUID();
  const [caller, key, fingerprint] = opts.key ?? NO_KEY;
  const sql = db.sql;
  const events: PendingEvent[] = [placedEvent(listing, holdId, checkIn, checkOut)];
  const [r] = await sql<PlaceRow[]>`
    select * from calendar.place_hold(${holdId}::uuid, ${listing}, ${WS}, ${checkIn}::date, ${checkOut}::date, false, ${opts.ttl ?? 600}, ${AT},
                                      ${sql.json(events)}, '{}'::jsonb, ${caller}, ${key}, ${fingerprint}::bytea)`;
  return { ...r!, holdId };
}

async function releaseHold(listing: string, holdId: string): Promise<{ events: number; status: string }> {
  const sql = db.sql;
  const events = [
    calendarChanged({
      at: AT,
      workspaceId: WS,
      listingId: listing,
      kind: 'hold_released',
      holder: { kind: 'hold', id: holdId },
      released: { checkIn: '2031-01-01', checkOut: '2031-01-03' },
    }),
  ];
  const [r] = await sql<{ events: number; status: string }[]>`
    select * from calendar.release_hold(${holdId}::uuid, ${listing}, ${AT}, ${sql.json(events)}, '{}'::jsonb)`;
  return r!;
}

/** A booking on free nights through confirm_booking (its own tests: marketplace.test.ts). */
async function book(listing: string, checkIn: string, checkOut: string): Promise<string> {
  const reference = fresh('BK');
  const [r] = await db.sql<{ outcome: string }[]>`
    select outcome from calendar.confirm_booking(${reference}, ${listing}, null, ${checkIn}::date, ${checkOut}::date, ${WS}, 'sandbox', null, 2,
      'guest-1', 'A Guest', '10.00', 'EUR', false, ${AT}, '[]'::jsonb, '{}'::jsonb, null, null, null, null)`;
  expect(r!.outcome).toBe('confirmed');
  return reference;
}

interface CancelRow {
  outcome: string;
  cancelled_at: Date | null;
  events: number;
  key_rpc: string | null;
  result_ref: string | null;
}

async function cancel(listing: string, reference: string, by: 'guest' | 'host', at: Date, key: Key = NO_KEY): Promise<CancelRow> {
  const sql = db.sql;
  const events: PendingEvent[] = [
    bookingCancelled({
      occurred_at: at.toISOString(),
      workspace_id: WS,
      environment: 'sandbox',
      booking_reference: reference,
      listing_id: listing,
      provider_id: null,
      cancelled_at: at.toISOString(),
      initiated_by: by,
    }),
  ];
  const [r] = await sql<CancelRow[]>`
    select * from calendar.cancel_booking(${reference}, ${listing}, ${by}, ${at}, ${sql.json(events)}, '{}'::jsonb, ${key[0]}, ${key[1]}, ${key[2]}::bytea)`;
  return r!;
}

/** Makes live holds overdue (placing one with a negative ttl would expire the listing's earlier ones). */
async function makeOverdue(...holdIds: string[]): Promise<void> {
  await db.sql`update calendar.holds set expires_at = clock_timestamp() - interval '1 second' where hold_id::text in ${db.sql(holdIds)}`;
}

const claimsOf = (listing: string) =>
  db.sql<{ holder_kind: string; holder_id: string; nights: string }[]>`
    select holder_kind, holder_id, nights::text from calendar.claims where listing_id = ${listing} order by nights`;

describe('idempotency.sql', () => {
  test('no key: nothing locked, found or recorded', async () => {
    const found = await db.sql`select * from calendar.lock_key_and_listing(null, null, ${fresh('lst')})`;
    expect(found).toHaveLength(0);
    await db.sql.begin(async (tx) => {
      await tx`select calendar.begin_event_write()`;
      await tx`select calendar.record_idempotency_key(null, null, 'PlaceHold', ${sha('x')}, 'ref')`;
    });
    const [count] = await db.sql<{ n: number }[]>`select count(*)::int as n from calendar.idempotency_keys where result_ref = 'ref'`;
    expect(count!.n).toBe(0);
  });

  test("the key's lock is the advisory lock every release names psync.calendar.idempotency / caller / key", async () => {
    const key = fresh('key');
    const held = await db.sql.begin(async (tx) => {
      await tx`select * from calendar.lock_idempotency_key('client:abc', ${key})`;
      const [r] = await tx<{ held: boolean }[]>`
        select exists (
          select 1 from pg_locks
          where locktype = 'advisory' and pid = pg_backend_pid() and objsubid = 1 and granted
            and ((classid::bigint << 32) | objid::bigint) = hashtextextended(${`psync.calendar.idempotency\nclient:abc\n${key}`}, 0)
        ) as held`;
      return r!.held;
    });
    expect(held).toBe(true);
  });

  test('recorded with the write, then found by the look-up and by the lock, with what it was used for', async () => {
    const listing = fresh('lst');
    const key = newKey('first request');
    const placed = await placeHold(listing, '2031-01-01', '2031-01-03', { key });
    expect(placed.outcome).toBe('placed');
    const [row] = await db.sql<{ rpc: string; request_sha256: Buffer; result_ref: string }[]>`
      select rpc, request_sha256, result_ref from calendar.idempotency_key(${key[0]}, ${key[1]})`;
    expect(row).toEqual({ rpc: 'PlaceHold', request_sha256: key[2], result_ref: placed.holdId });
    const locked = await db.sql.begin((tx) => tx<{ result_ref: string }[]>`select result_ref from calendar.lock_key_and_listing(${key[0]}, ${key[1]}, ${listing})`);
    expect(locked.map((r) => r.result_ref)).toEqual([placed.holdId]);
  });
});

describe('place_hold', () => {
  test('placed: the hold with its claim and HOLD_PLACED, expiring ttl seconds from now', async () => {
    const listing = fresh('lst');
    const before = Date.now();
    const r = await placeHold(listing, '2031-01-01', '2031-01-04', { ttl: 900 });
    expect(r).toMatchObject({ outcome: 'placed', conflicts: [], key_rpc: null });
    expect(r.expires_at!.getTime()).toBeGreaterThanOrEqual(before + 899_000);
    expect(r.expires_at!.getTime()).toBeLessThanOrEqual(Date.now() + 901_000);
    expect(await claimsOf(listing)).toEqual([{ holder_kind: 'hold', holder_id: r.holdId, nights: '[2031-01-01,2031-01-04)' }]);
    expect(await eventsOf(listing)).toEqual([`calendar_changed hold_placed ${r.holdId}`]);
  });

  test('conflict: every night taken, nothing written — no hold, no key, an overdue hold not expired', async () => {
    const listing = fresh('lst');
    const live = await placeHold(listing, '2031-01-02', '2031-01-04');
    const overdue = await placeHold(listing, '2031-01-10', '2031-01-11', { ttl: -5 });
    const key = newKey();
    const r = await placeHold(listing, '2031-01-01', '2031-01-05', { key });
    expect(r).toMatchObject({ outcome: 'conflict', conflicts: ['2031-01-02', '2031-01-03'] });
    const holds = await db.sql<{ hold_id: string; status: string }[]>`select hold_id::text, status from calendar.holds where listing_id = ${listing} order by check_in`;
    expect(holds).toEqual([
      { hold_id: live.holdId, status: 'live' },
      { hold_id: overdue.holdId, status: 'live' },
    ]);
    expect(await db.sql`select 1 from calendar.idempotency_keys where key = ${key[1]}`).toHaveLength(0);
    expect(await eventsOf(listing)).toHaveLength(2);
  });

  test('an overdue hold on the nights does not collide: it expires first (HOLD_EXPIRED before HOLD_PLACED), one transaction', async () => {
    const listing = fresh('lst');
    const overdue = await placeHold(listing, '2031-02-01', '2031-02-03', { ttl: -1 });
    const r = await placeHold(listing, '2031-02-02', '2031-02-04');
    expect(r.outcome).toBe('placed');
    const [h] = await db.sql<{ status: string; at_expiry: boolean }[]>`select status, ended_at = expires_at as at_expiry from calendar.holds where hold_id = ${overdue.holdId}`;
    expect(h).toEqual({ status: 'expired', at_expiry: true });
    expect(await eventsOf(listing)).toEqual([
      `calendar_changed hold_placed ${overdue.holdId}`,
      `calendar_changed hold_expired ${overdue.holdId}`,
      `calendar_changed hold_placed ${r.holdId}`,
    ]);
    const xids = await db.sql<{ xid: string }[]>`
      select distinct xid::text from calendar.events where listing_id = ${listing} and not (body->>'kind' = 'hold_placed' and body->>'holder_id' = ${overdue.holdId})`;
    expect(xids).toHaveLength(1);
  });

  test("key_found: the same key answers the key's row and writes nothing, whatever the request", async () => {
    const listing = fresh('lst');
    const key = newKey('one');
    const first = await placeHold(listing, '2031-03-01', '2031-03-02', { key });
    const again = await placeHold(listing, '2031-03-05', '2031-03-06', { key: [key[0]!, key[1]!, sha('another')] });
    expect(again).toMatchObject({ outcome: 'key_found', key_rpc: 'PlaceHold', result_ref: first.holdId, expires_at: null });
    expect(Buffer.from(again.key_sha256!).equals(key[2]!)).toBe(true);
    expect(await db.sql`select 1 from calendar.holds where hold_id = ${again.holdId}`).toHaveLength(0);
    expect(await eventsOf(listing)).toHaveLength(1);
  });
});

describe('release_hold', () => {
  test('a live hold: released, its claim freed, HOLD_RELEASED', async () => {
    const listing = fresh('lst');
    const h = await placeHold(listing, '2031-01-01', '2031-01-03');
    expect(await releaseHold(listing, h.holdId)).toEqual({ events: 1, status: 'released' });
    expect(await claimsOf(listing)).toEqual([]);
    expect(await eventsOf(listing)).toEqual([`calendar_changed hold_placed ${h.holdId}`, `calendar_changed hold_released ${h.holdId}`]);
    // Again: nothing to do.
    expect(await releaseHold(listing, h.holdId)).toEqual({ events: 0, status: 'released' });
  });

  test('an overdue hold expires rather than being released; other overdue holds of the listing expire too', async () => {
    const listing = fresh('lst');
    const h = await placeHold(listing, '2031-01-01', '2031-01-03');
    const other = await placeHold(listing, '2031-02-01', '2031-02-03');
    await makeOverdue(h.holdId, other.holdId);
    expect(await releaseHold(listing, h.holdId)).toEqual({ events: 2, status: 'expired' });
    expect((await eventsOf(listing)).slice(2).sort()).toEqual([`calendar_changed hold_expired ${h.holdId}`, `calendar_changed hold_expired ${other.holdId}`].sort());
  });

  test('a converted hold: nothing written, status converted', async () => {
    const listing = fresh('lst');
    const h = await placeHold(listing, '2031-01-01', '2031-01-03');
    await db.sql`
      select outcome from calendar.confirm_booking(${fresh('BK')}, ${listing}, ${h.holdId}::uuid, '2031-01-01', '2031-01-03', ${WS}, 'sandbox', null, 2,
        'g', 'G', '1.00', 'EUR', false, ${AT}, '[]'::jsonb, '{}'::jsonb, null, null, null, null)`;
    expect(await releaseHold(listing, h.holdId)).toEqual({ events: 0, status: 'converted' });
    expect(await claimsOf(listing)).toHaveLength(1);
  });
});

describe('cancel_booking', () => {
  test('by the guest: the claim freed, the events written; again: already_cancelled with the first time, nothing written', async () => {
    const listing = fresh('lst');
    const reference = await book(listing, '2031-01-01', '2031-01-03');
    const r = await cancel(listing, reference, 'guest', AT);
    expect(r).toMatchObject({ outcome: 'cancelled', cancelled_at: AT, events: 1 });
    expect(await claimsOf(listing)).toEqual([]);
    const [b] = await db.sql<{ status: string; cancelled_by: string }[]>`select status, cancelled_by from calendar.bookings where booking_reference = ${reference}`;
    expect(b).toEqual({ status: 'cancelled', cancelled_by: 'guest' });
    const later = new Date(AT.getTime() + 60_000);
    expect(await cancel(listing, reference, 'host', later)).toMatchObject({ outcome: 'already_cancelled', cancelled_at: AT, events: 0 });
    expect(await eventsOf(listing)).toEqual([`booking_cancelled`]);
  });

  test('by the host: the claim stays as withdrawn', async () => {
    const listing = fresh('lst');
    const reference = await book(listing, '2031-01-01', '2031-01-03');
    expect((await cancel(listing, reference, 'host', AT)).outcome).toBe('cancelled');
    expect(await claimsOf(listing)).toEqual([{ holder_kind: 'withdrawn', holder_id: reference, nights: '[2031-01-01,2031-01-03)' }]);
  });

  test('overdue holds of the listing expire first; a key is recorded even when the booking was cancelled before, then found', async () => {
    const listing = fresh('lst');
    const reference = await book(listing, '2031-01-01', '2031-01-03');
    const overdue = await placeHold(listing, '2031-02-01', '2031-02-02', { ttl: -1 });
    expect(await cancel(listing, reference, 'guest', AT)).toMatchObject({ outcome: 'cancelled', events: 2 });
    expect((await eventsOf(listing)).slice(1)).toEqual([`calendar_changed hold_expired ${overdue.holdId}`, 'booking_cancelled']);
    const key = newKey('cancel');
    expect(await cancel(listing, reference, 'guest', AT, key)).toMatchObject({ outcome: 'already_cancelled', events: 0 });
    const [row] = await db.sql<{ rpc: string; result_ref: string }[]>`select rpc, result_ref from calendar.idempotency_key(${key[0]}, ${key[1]})`;
    expect(row).toEqual({ rpc: 'CancelBooking', result_ref: reference });
    expect(await cancel(listing, reference, 'guest', AT, key)).toMatchObject({ outcome: 'key_found', key_rpc: 'CancelBooking', result_ref: reference, events: 0 });
  });
});

describe('delete_block', () => {
  async function putBlockRow(uid: string, listing: string, checkIn: string, checkOut: string): Promise<void> {
    await db.sql`select * from calendar.put_block(${WS}, ${uid}, ${listing}, ${checkIn}::date, ${checkOut}::date, 'reserved', ${AT}, '{}'::jsonb)`;
  }
  async function deleteBlock(uid: string, listing: string, checkIn: string, checkOut: string): Promise<boolean> {
    const sql = db.sql;
    const events = [calendarChanged({ at: AT, workspaceId: WS, listingId: listing, kind: 'block_deleted', holder: { kind: 'block', id: uid }, released: { checkIn, checkOut } })];
    const [r] = await sql<{ deleted: boolean }[]>`
      select calendar.delete_block(${WS}, ${uid}, ${listing}, ${checkIn}::date, ${checkOut}::date, ${sql.json(events)}, '{}'::jsonb) as deleted`;
    return r!.deleted;
  }

  test('the block as read: deleted with its claim, BLOCK_DELETED', async () => {
    const listing = fresh('lst');
    const uid = fresh('b');
    await putBlockRow(uid, listing, '2031-01-01', '2031-01-04');
    expect(await deleteBlock(uid, listing, '2031-01-01', '2031-01-04')).toBe(true);
    expect(await claimsOf(listing)).toEqual([]);
    expect(await eventsOf(listing)).toEqual([`calendar_changed block_created ${uid}`, `calendar_changed block_deleted ${uid}`]);
  });

  test('a block moved or re-dated since it was read: nothing written, false (the service reads it again)', async () => {
    const listing = fresh('lst');
    const uid = fresh('b');
    await putBlockRow(uid, listing, '2031-01-01', '2031-01-04');
    expect(await deleteBlock(uid, listing, '2031-01-01', '2031-01-05')).toBe(false);
    expect(await deleteBlock(uid, fresh('lst'), '2031-01-01', '2031-01-04')).toBe(false);
    expect(await claimsOf(listing)).toHaveLength(1);
    expect(await eventsOf(listing)).toEqual([`calendar_changed block_created ${uid}`]);
  });
});

describe('sweep_holds', () => {
  test("expires the listing's overdue holds only, answering how many", async () => {
    const listing = fresh('lst');
    const overdue = await placeHold(listing, '2031-01-01', '2031-01-02');
    const live = await placeHold(listing, '2031-01-05', '2031-01-06');
    await makeOverdue(overdue.holdId);
    const [r] = await db.sql<{ n: number }[]>`select calendar.sweep_holds(${listing}, ${AT}, '{}'::jsonb) as n`;
    expect(r!.n).toBe(1);
    expect(await claimsOf(listing)).toEqual([{ holder_kind: 'hold', holder_id: live.holdId, nights: '[2031-01-05,2031-01-06)' }]);
    expect((await eventsOf(listing)).at(-1)).toBe(`calendar_changed hold_expired ${overdue.holdId}`);
  });
});
