/**
 * The WatchEvents horizon belongs to the calendar alone (migration
 * 0005, services/calendar/event-horizon.ts, docs/calendar.md "WatchEvents").
 *
 *  - In the database (real PostgreSQL with DATABASE_URL, embedded PGlite otherwise):
 *    writers register before their first write, an insert into calendar.events by a
 *    transaction that did not is refused, a late registration is refused, the horizon
 *    is the snapshot's xmax when no writer runs (and, on a server, the xid of a
 *    registered writer while it runs, whatever else is open).
 *  - Against a running system (real PostgreSQL only: the embedded default has one
 *    session, so nothing can stay open beside the system): a write transaction held
 *    open in another database of the server, in another schema of the calendar's
 *    database, a read-only one, one that writes a calendar table but no event and one
 *    that took a listing's lock but wrote nothing do NOT delay the stream (a new event
 *    arrives within 1 s); a transaction that wrote a calendar event holds the stream
 *    back until it commits or rolls back, and then the stream continues gapless and in
 *    order.
 */
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { createSql, type Sql, type Tx } from '../../services/kit/db';
import { calendarModule } from '../../services/calendar/module';
import { readEventHorizon } from '../../services/calendar/event-horizon';
import type { CalendarChanged } from '../../gen/psync/calendar/v1/events_pb';
import type { WatchEventsResponse } from '../../gen/psync/calendar/v1/calendar_pb';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { createScratchDatabase, startSystem, stopAllSystems, type RunningSystem, type ScratchDatabase } from '../support/system';
import { clientsFor, day, newListing, newWorkspace, uid, watch, type Clients } from './support';
import { holdsFor, sleep } from '../support/eventually';

jest.setTimeout(120_000);

const realPostgres = !!process.env.DATABASE_URL;
const testReal = realPostgres ? test : test.skip;
const describeReal = realPostgres ? describe : describe.skip;
if (!realPostgres) {
  test.skip('the open-transaction tests are skipped: they need a real PostgreSQL (set DATABASE_URL); the embedded default has one session, so no transaction can stay open beside the system', () => {});
}

/** A transaction kept open on `sql` after `body` ran, until `end` is called. */
interface OpenTransaction<T> {
  /** What `body` returned (once it ran). */
  ready: Promise<T>;
  /** Commits (or rolls back) and resolves when the transaction is over. */
  end(how: 'commit' | 'rollback'): Promise<void>;
}

class Rollback extends Error {}

function holdOpen<T>(sql: Sql, body: (tx: Tx) => Promise<T>, options = ''): OpenTransaction<T> {
  let finish!: (how: 'commit' | 'rollback') => void;
  const decided = new Promise<'commit' | 'rollback'>((r) => (finish = r));
  let ran!: (v: T) => void;
  let failed!: (e: unknown) => void;
  const ready = new Promise<T>((res, rej) => ((ran = res), (failed = rej)));
  const run = (async (tx: Tx) => {
    try {
      ran(await body(tx));
    } catch (err) {
      failed(err);
      throw err;
    }
    if ((await decided) === 'rollback') throw new Rollback();
  }) as (tx: Tx) => Promise<void>;
  const done = (options ? sql.begin(options, run) : sql.begin(run)).then(
    () => undefined,
    (err) => {
      if (!(err instanceof Rollback)) throw err;
    },
  );
  done.catch(() => undefined); // reported by end(); no unhandled rejection meanwhile
  return {
    ready,
    async end(how) {
      finish(how);
      await done;
    },
  };
}

describe('in the database', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await startTestDatabase();
    await runMigrations(db.sql, { schema: 'calendar', sources: [KIT_MIGRATIONS, calendarModule.migrations] });
  }, 120_000);

  afterAll(async () => {
    await db?.stop();
  });

  const append = (tx: Sql | Tx, listing: string, holder: string) =>
    tx`select calendar.append_calendar_changed(now(), '{}'::jsonb, 'ws-horizon', ${listing}, 'block_created', 'block', ${holder}, null, '[2031-01-01,2031-01-02)'::daterange)`;

  test('an event written by a transaction that did not register first is refused (55000), as a direct insert or through the SQL writer', async () => {
    await expect(
      db.sql`insert into calendar.events (id, workspace_id, listing_id, type, data) values (gen_random_uuid(), 'ws-horizon', 'l', 'calendar_changed', '\\x'::bytea)`,
    ).rejects.toMatchObject({ code: '55000' });
    await expect(append(db.sql, 'l', 'unregistered')).rejects.toMatchObject({ code: '55000' });
    const [n] = await db.sql<{ n: number }[]>`select count(*)::int as n from calendar.events where workspace_id = 'ws-horizon'`;
    expect(n!.n).toBe(0);
  });

  test('registration must come before the first write; lock_listing registers; registering again is a no-op', async () => {
    // A transaction that already has an xid cannot register: a reader could have
    // computed a horizon past it meanwhile.
    await expect(
      db.sql.begin(async (tx) => {
        await tx`select pg_current_xact_id()`;
        await tx`select calendar.begin_event_write()`;
      }),
    ).rejects.toMatchObject({ code: '55000' });
    const seqs = await db.sql.begin(async (tx) => {
      await tx`select calendar.lock_listing('l1')`;
      await tx`select calendar.lock_listing('l2')`;
      await append(tx, 'l1', 'a');
      await tx`select calendar.begin_event_write()`;
      await append(tx, 'l2', 'b');
      return tx<{ seq: string }[]>`select seq::text from calendar.events where workspace_id = 'ws-horizon' order by seq`;
    });
    expect(seqs).toHaveLength(2);
    // The registration ends with the transaction.
    await expect(append(db.sql, 'l1', 'after')).rejects.toMatchObject({ code: '55000' });
  });

  test('with no writer running, the horizon is past every committed event (the snapshot xmax)', async () => {
    await db.sql.begin(async (tx) => {
      await tx`select calendar.lock_listing('l3')`;
      await append(tx, 'l3', 'c');
    });
    const horizon = await readEventHorizon(db.sql);
    const [r] = await db.sql<{ newest: string; xmax: string }[]>`
      select (select max(xid) from calendar.events)::text as newest, pg_snapshot_xmax(pg_current_snapshot())::text as xmax`;
    expect(BigInt(horizon)).toBeGreaterThan(BigInt(r!.newest));
    expect(BigInt(horizon)).toBeLessThanOrEqual(BigInt(r!.xmax));
  });

  test('it refuses to run under REPEATABLE READ (the events must be read in a later snapshot)', async () => {
    await expect(db.sql.begin('isolation level repeatable read', (tx) => tx`select calendar.event_horizon()`)).rejects.toMatchObject({ code: '25000' });
  });

  test('a 32-bit xid is widened against a nearby full xid, across an epoch boundary', async () => {
    const epoch = 2n ** 32n;
    const cases: [string, bigint, bigint][] = [
      ['5', epoch + 10n, epoch + 5n],
      ['4294967290', epoch + 10n, epoch - 6n], // just before the boundary, seen from just after it
      ['7', epoch - 3n, epoch + 7n], // just after the boundary, seen from just before it
      ['100', 120n, 100n],
      ['130', 120n, 130n],
    ];
    for (const [xid, near, want] of cases) {
      const [r] = await db.sql<{ full: string }[]>`select calendar.xid8_near(${xid}::xid, ${near.toString()}::xid8)::text as full`;
      expect([xid, BigInt(r!.full)]).toEqual([xid, want]);
    }
  });

  testReal('on a server: a registered writer holds the horizon at its xid while it runs; an older unregistered writer does not count', async () => {
    const other = createSql(db.url, { max: 3 });
    try {
      // An unregistered transaction with an xid, first: the server-wide xmin is its.
      const foreign = holdOpen(other, async (tx) => {
        const [r] = await tx<{ xid: string }[]>`select pg_current_xact_id()::text as xid`;
        return r!.xid;
      });
      const foreignXid = await foreign.ready;
      const writer = holdOpen(other, async (tx) => {
        await tx`select calendar.lock_listing('l4')`;
        await append(tx, 'l4', 'open');
        const [r] = await tx<{ xid: string }[]>`select pg_current_xact_id()::text as xid`;
        return r!.xid;
      });
      const writerXid = await writer.ready;
      expect(BigInt(writerXid)).toBeGreaterThan(BigInt(foreignXid));
      // A transaction committed after both: the snapshot's xmax is past the writer's xid.
      await db.sql`select pg_current_xact_id()`;
      const [s] = await db.sql<{ xmin: string }[]>`select pg_snapshot_xmin(pg_current_snapshot())::text as xmin`;
      expect(BigInt(s!.xmin)).toBeLessThanOrEqual(BigInt(foreignXid));
      expect(await readEventHorizon(db.sql)).toBe(writerXid);
      await writer.end('commit');
      expect(BigInt(await readEventHorizon(db.sql))).toBeGreaterThan(BigInt(writerXid));
      await foreign.end('rollback');
    } finally {
      await other.end({ timeout: 5 });
    }
  });
});

describeReal('WatchEvents while other transactions stay open (real PostgreSQL)', () => {
  let system: RunningSystem;
  let c: Clients;
  let ws: string;
  let db: Sql;
  let scratch: ScratchDatabase;
  let foreign: Sql;

  beforeAll(async () => {
    system = await startSystem();
    c = clientsFor(system.internalUrl);
    ws = await newWorkspace(c);
    db = createSql(system.env.DATABASE_URL!, { max: 4 });
    scratch = await createScratchDatabase();
    foreign = createSql(scratch.url, { max: 2 });
    await foreign`create table rows (at timestamptz)`;
    await db`create schema if not exists horizon_test_other`;
    await db`create table if not exists horizon_test_other.rows (at timestamptz)`;
  }, 180_000);

  afterAll(async () => {
    await foreign?.end({ timeout: 5 });
    await scratch?.drop();
    await db?.end({ timeout: 5 });
    c?.close();
    await stopAllSystems();
  });

  const isHold = (holdId: string) => (m: WatchEventsResponse) => m.event.case === 'calendarChanged' && m.event.value.holder?.id === holdId;

  /** Places a hold on a fresh listing and measures how long after its answer the stream delivers it (ms). */
  async function streamDelay(): Promise<number> {
    const listing = await newListing(c, ws);
    const w = watch(c.calendar, { listingId: listing });
    try {
      // timing under test: the delay measured is a tailing stream's, so the stream reads its (empty) backlog first.
      await sleep(300);
      const hold = (await c.calendar.placeHold({ listingId: listing, checkIn: day(0), checkOut: day(1) })).hold!;
      const t0 = performance.now();
      await w.until(isHold(hold.holdId), 4000);
      return performance.now() - t0;
    } finally {
      await w.stop();
    }
  }

  /** The server-wide horizon the stream used before (pg_snapshot_xmin), as seen now. */
  async function serverXmin(): Promise<bigint> {
    const [r] = await db<{ xmin: string }[]>`select pg_snapshot_xmin(pg_current_snapshot())::text as xmin`;
    return BigInt(r!.xmin);
  }

  /** Runs `open` for several seconds while measuring stream delays; every one must be under 1 s. */
  async function expectPromptWhileOpen(open: OpenTransaction<string | null>): Promise<void> {
    const xid = await open.ready;
    // The transaction really would have stalled the old server-wide horizon.
    if (xid !== null) expect(await serverXmin()).toBeLessThanOrEqual(BigInt(xid));
    try {
      const delays: number[] = [];
      const until = performance.now() + 3000;
      while (performance.now() < until) delays.push(await streamDelay());
      expect(delays.length).toBeGreaterThanOrEqual(2);
      expect(delays.filter((d) => d >= 1000)).toEqual([]);
    } finally {
      await open.end('commit');
    }
  }

  const xidOf = async (tx: Tx) => (await tx<{ xid: string | null }[]>`select pg_current_xact_id_if_assigned()::text as xid`)[0]!.xid;

  test('a write transaction open in ANOTHER database of the same server does not delay the stream', async () => {
    await expectPromptWhileOpen(
      holdOpen(foreign, async (tx) => {
        await tx`insert into rows (at) values (now())`;
        return xidOf(tx);
      }),
    );
  });

  test("a write transaction open in another schema of the calendar's database does not delay the stream", async () => {
    await expectPromptWhileOpen(
      holdOpen(db, async (tx) => {
        await tx`insert into horizon_test_other.rows (at) values (now())`;
        return xidOf(tx);
      }),
    );
  });

  test('a read-only transaction holding a snapshot does not delay the stream', async () => {
    await expectPromptWhileOpen(
      holdOpen(
        db,
        async (tx) => {
          await tx`select count(*) from calendar.events`;
          return null;
        },
        'isolation level repeatable read read only',
      ),
    );
  });

  test('a transaction that writes a calendar table but no event (an operator touching a hold) does not delay the stream', async () => {
    const listing = await newListing(c, ws);
    const hold = (await c.calendar.placeHold({ listingId: listing, checkIn: day(10), checkOut: day(11) })).hold!;
    await expectPromptWhileOpen(
      holdOpen(db, async (tx) => {
        await tx`update calendar.holds set expires_at = expires_at where hold_id = ${hold.holdId}`;
        return xidOf(tx);
      }),
    );
  });

  test("a writer that took a listing's lock but has written nothing yet does not delay the stream", async () => {
    const listing = await newListing(c, ws);
    await expectPromptWhileOpen(
      holdOpen(db, async (tx) => {
        await tx`select calendar.lock_listing(${listing})`;
        return xidOf(tx); // null: registered, no xid yet
      }),
    );
  });

  /** A transaction that wrote one CalendarChanged (holder `holder`) on `listing` and stays open. */
  const openEventWriter = (workspace: string, listing: string, holder: string) =>
    holdOpen(db, async (tx) => {
      await tx`select calendar.lock_listing(${listing})`;
      await tx`select calendar.append_calendar_changed(now(), '{}'::jsonb, ${workspace}, ${listing}, 'block_created', 'block', ${holder}, null, '[2031-02-01,2031-02-02)'::daterange)`;
      return xidOf(tx);
    });

  const holderOf = (m: WatchEventsResponse) => (m.event.value as CalendarChanged).holder?.id;

  test.each(['commit', 'rollback'] as const)(
    'a transaction that wrote a calendar event holds the stream back only until it ends (%s), then the stream continues gapless and in order',
    async (how) => {
      const wsX = await newWorkspace(c);
      const l1 = await newListing(c, wsX);
      const l2 = await newListing(c, wsX);
      const w = watch(c.calendar, { workspaceId: wsX });
      try {
        const before = (await c.calendar.placeHold({ listingId: l2, checkIn: day(0), checkOut: day(1) })).hold!;
        await w.until(isHold(before.holdId), 4000);
        const holder = uid('open-writer');
        const open = openEventWriter(wsX, l1, holder);
        await open.ready;
        // Written after the open writer's event, committed first: it must wait.
        const after = (await c.calendar.placeHold({ listingId: l2, checkIn: day(1), checkOut: day(2) })).hold!;
        await holdsFor('the stream holds back what committed after the open writer began', () => w.received.length === 1, 1500);
        expect(w.received.map(holderOf)).toEqual([before.holdId]);
        const t0 = performance.now();
        await open.end(how);
        await w.until(isHold(after.holdId), 4000);
        expect(performance.now() - t0).toBeLessThan(1000);
        // Then the stream goes on as usual.
        const later = (await c.calendar.placeHold({ listingId: l1, checkIn: day(5), checkOut: day(6) })).hold!;
        await w.until(isHold(later.holdId), 4000);
        const expected = how === 'commit' ? [before.holdId, holder, after.holdId, later.holdId] : [before.holdId, after.holdId, later.holdId];
        expect(w.received.map(holderOf)).toEqual(expected);
        const cursors = w.received.map((m) => BigInt(m.cursor));
        expect(new Set(cursors).size).toBe(cursors.length);
        // A consumer resuming from the first cursor gets exactly the rest.
        const again = watch(c.calendar, { workspaceId: wsX, cursor: w.received[0]!.cursor });
        try {
          await again.until(isHold(later.holdId), 4000);
          expect(again.received.map(holderOf)).toEqual(expected.slice(1));
        } finally {
          await again.stop();
        }
      } finally {
        await w.stop();
      }
    },
  );
});
