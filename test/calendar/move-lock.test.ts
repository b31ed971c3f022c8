/**
 * Moving a block to another listing writes both listings, so it holds both listings'
 * locks (migration 0011, docs/calendar.md "Serialisation"):
 *  - a move off a listing waits while another transaction holds that listing's lock;
 *  - the interleaving the lock rules out: a writer of the source listing that took its
 *    transaction id before the move committed, then saw the move's freed nights and
 *    placed a hold on them. Its events come first in WatchEvents order (xid, seq), so
 *    the log would show the nights held by the hold while the block still held them.
 *    With both locks the move waits, the hold is refused, and the log replays cleanly;
 *  - two opposite moves between the same two listings, many times in parallel, neither
 *    deadlock nor fail;
 *  - a block deleted while it moves (the delete read its listing, the move committed
 *    before the delete had that listing's lock) is deleted where it landed, under that
 *    listing's lock.
 * Real PostgreSQL only (the embedded default is one session: nothing can interleave).
 */
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { calendarModule } from '../../services/calendar/module';
import { deleteBlock } from '../../services/calendar/blocks';
import { create } from '@bufbuild/protobuf';
import { DeleteBlockRequestSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { directDeps } from './support/direct-deps';
import { eventLogAnomalies } from './support/event-replay';
import { startCpuLoad } from '../support/cpu-load';

jest.setTimeout(120_000);

const realPostgres = !!process.env.DATABASE_URL;
const describeReal = realPostgres ? describe : describe.skip;
if (!realPostgres) test.skip('needs a real PostgreSQL (set DATABASE_URL): the embedded default is one session', () => {});

const WS = '6f1c2a8e-0000-4000-8000-00000000a011';
let db: TestDatabase;
let stopLoad: (() => void) | undefined;
let n = 0;
const fresh = (label: string) => `${label}-${Date.now().toString(36)}-${++n}`;

beforeAll(async () => {
  if (!realPostgres) return;
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'calendar', sources: [KIT_MIGRATIONS, calendarModule.migrations] });
  stopLoad = startCpuLoad();
}, 120_000);

afterAll(async () => {
  stopLoad?.();
  await db?.stop();
});

async function put(uid: string, listing: string, checkIn: string, checkOut: string): Promise<{ outcome: string }> {
  const [row] = await db.sql<{ outcome: string }[]>`
    select outcome from calendar.put_block(${WS}, ${uid}, ${listing}, ${checkIn}::date, ${checkOut}::date, 'reserved', now(), '{}'::jsonb)`;
  return row!;
}

/** Settles to 'pending' when `p` has not settled within `ms`. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'pending'>((resolve) => (timer = setTimeout(() => resolve('pending'), ms)));
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describeReal('put_block moving a block holds both listings’ locks', () => {
  test('a move off a listing waits while another transaction holds that listing’s lock', async () => {
    const [a, b, uid] = [fresh('lst-a'), fresh('lst-b'), fresh('blk')];
    expect((await put(uid, a, '2034-03-01', '2034-03-04')).outcome).toBe('created');

    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = db.sql.begin(async (tx) => {
      await tx`select calendar.lock_listing(${a})`;
      locked();
      await released;
    });
    await isLocked;
    const move = put(uid, b, '2034-03-01', '2034-03-04');
    expect(await within(move, 1500)).toBe('pending');
    release();
    await holder;
    expect((await move).outcome).toBe('updated');
  });

  test('a hold on the source listing cannot come before the move in WatchEvents order while it sees the move’s freed nights', async () => {
    const [a, b, uid] = [fresh('lst-a'), fresh('lst-b'), fresh('blk')];
    const [checkIn, checkOut] = ['2034-04-10', '2034-04-13'];
    expect((await put(uid, a, checkIn, checkOut)).outcome).toBe('created');

    let move: Promise<{ outcome: string }> | undefined;
    const placed = await db.sql.begin(async (tx) => {
      // A writer of listing a: its lock, then a transaction id (any first write does it).
      await tx`select calendar.lock_listing(${a})`;
      await tx`select pg_current_xact_id()`;
      // The block moves off a meanwhile; the writer then scans a's nights and claims them if free.
      move = put(uid, b, checkIn, checkOut);
      await within(move, 1500);
      const [scan] = await tx<{ nights: string[] }[]>`select calendar.night_conflicts(${a}, ${checkIn}::date, ${checkOut}::date, false) as nights`;
      if (scan!.nights.length > 0) return false;
      const [h] = await tx<{ hold_id: string }[]>`
        insert into calendar.holds (hold_id, listing_id, workspace_id, check_in, check_out, requires_payment, status, expires_at)
        values (gen_random_uuid(), ${a}, ${WS}, ${checkIn}::date, ${checkOut}::date, false, 'live', now() + interval '10 minutes')
        returning hold_id::text`;
      await tx`insert into calendar.claims (listing_id, holder_kind, holder_id, nights) values (${a}, 'hold', ${h!.hold_id}, daterange(${checkIn}::date, ${checkOut}::date))`;
      await tx`select calendar.append_calendar_changed(now(), '{}'::jsonb, ${WS}, ${a}, 'hold_placed', 'hold', ${h!.hold_id}, null, daterange(${checkIn}::date, ${checkOut}::date))`;
      return true;
    });
    expect((await move!).outcome).toBe('updated');
    expect(await eventLogAnomalies(db.sql, [a, b])).toEqual([]);
    expect(placed).toBe(false);
  });

  test('opposite moves between two listings, 40 at a time, all succeed', async () => {
    const [a, b] = [fresh('lst-a'), fresh('lst-b')];
    const uids = Array.from({ length: 40 }, (_, i) => fresh(`blk${i}`));
    for (const [i, uid] of uids.entries()) await put(uid, i % 2 ? a : b, '2034-05-01', '2034-05-03');
    const outcomes = await Promise.all(uids.map((uid, i) => put(uid, i % 2 ? b : a, '2034-05-01', '2034-05-03').then((r) => r.outcome)));
    expect(outcomes).toEqual(uids.map(() => 'updated'));
    expect(await eventLogAnomalies(db.sql, [a, b])).toEqual([]);
  });

  test('a block that moves while DeleteBlock waits for the old listing’s lock is deleted from the new one', async () => {
    const [a, b, uid] = [fresh('lst-a'), fresh('lst-b'), fresh('blk')];
    expect((await put(uid, a, '2034-06-01', '2034-06-03')).outcome).toBe('created');
    const deps = directDeps(db.sql);
    const mover = await db.sql.reserve();
    try {
      await mover`begin`;
      await mover`select calendar.lock_listing(${a})`;
      const deletion = deleteBlock(deps, create(DeleteBlockRequestSchema, { workspaceId: WS, externalUid: uid }));
      // Wait until DeleteBlock (having read listing a) waits for a's lock ...
      for (let i = 0; ; i++) {
        const [w] = await db.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity where wait_event = 'advisory' and query like '%calendar.delete_block%'`;
        if (w!.n > 0) break;
        if (i > 200) throw new Error('DeleteBlock never waited for the listing lock');
        await new Promise((r) => setTimeout(r, 25));
      }
      // ... then move the block to b and commit.
      await mover`select outcome from calendar.put_block(${WS}, ${uid}, ${b}, '2034-06-01'::date, '2034-06-03'::date, 'reserved', now(), '{}'::jsonb)`;
      await mover`commit`;
      expect(await deletion).toEqual({ deleted: true });
    } finally {
      mover.release();
    }
    expect(await db.sql`select 1 from calendar.blocks where workspace_id = ${WS} and external_uid = ${uid}`).toHaveLength(0);
    expect(await db.sql`select 1 from calendar.claims where listing_id in (${a}, ${b})`).toHaveLength(0);
    const kinds = await db.sql<{ listing_id: string; kind: string }[]>`
      select listing_id, body->>'kind' as kind from calendar.events where listing_id in (${a}, ${b}) order by xid, seq`;
    expect(kinds.map((k) => `${k.listing_id === a ? 'a' : 'b'}:${k.kind}`)).toEqual(['a:block_created', 'a:block_moved', 'b:block_moved', 'b:block_deleted']);
    expect(await eventLogAnomalies(db.sql, [a, b])).toEqual([]);
  });
});
