/**
 * Retention of the WatchEvents log (migration 0004, services/calendar/event-retention.ts,
 * docs/calendar.md "Retention") against the test database (real PostgreSQL with
 * DATABASE_URL, embedded PGlite otherwise):
 *  - the prune deletes only events older than the retention, as a prefix of the stream
 *    order (xid, seq), in bounded batches, and records the watermark;
 *  - through a real Connect/gRPC server: a cursor before the watermark fails
 *    OUT_OF_RANGE (CURSOR_EXPIRED), the watermark itself and later cursors resume
 *    without gap or repeat, a watch without a cursor starts at the oldest retained event;
 *  - the stream itself: one the prune overtakes fails instead of skipping, and a filtered
 *    stream of a quiet listing is not overtaken (its position follows the horizon).
 * Events are aged by setting `created_at` back in SQL. Every test starts from a log
 * pruned empty, so the prefix the next prune deletes is the test's own.
 */
import { Code, ConnectError, type HandlerContext } from '@connectrpc/connect';
import { create } from '@bufbuild/protobuf';
import pino from 'pino';
import { WatchEventsRequestSchema, type WatchEventsResponse } from '../../gen/psync/calendar/v1/calendar_pb';
import type { CalendarChanged } from '../../gen/psync/calendar/v1/events_pb';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { loadConfig } from '../../services/kit/runtime';
import { ConfigError } from '../../services/kit/base';
import { HealthState } from '../../services/kit/rpc';
import { startInternalServer, type InternalServer } from '../../services/kit/rpc';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import type { CalendarDeps } from '../../services/calendar/calendar-deps';
import { readEventHorizon } from '../../services/calendar/event-horizon';
import { EventPruner, PRUNE_BATCH, pruneEventsOnce } from '../../services/calendar/event-retention';
import type { ListingDirectory } from '../../services/calendar/listings';
import { calendarModule } from '../../services/calendar/module';
import { registerCalendarService } from '../../services/calendar/service';
import { WatchHub, watchEvents } from '../../services/calendar/watch';
import { testLogger } from '../support/bus';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { clientsFor, eventually, reasonOf, watch, type Clients, type Watcher } from './support';
import { holdsFor } from '../support/eventually';
import { firstLogEvent } from '../support/log-events';

jest.setTimeout(120_000);

const WS = '6f1c2a8e-0000-4000-8000-00000000e7e7';
let db: TestDatabase;
let hub: WatchHub;
let server: InternalServer;
let c: Clients;

beforeAll(async () => {
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'calendar', sources: [KIT_MIGRATIONS, calendarModule.migrations] });
  hub = new WatchHub();
  const deps: CalendarDeps = {
    sql: db.sql,
    log: testLogger(),
    listings: {} as ListingDirectory, // WatchEvents never resolves listings
    holdTtlSeconds: 900,
    eventsCommitted: () => hub.notify(),
  };
  server = await startInternalServer({
    host: '127.0.0.1',
    port: 0,
    log: testLogger(),
    health: new HealthState(),
    routes: (router) => registerCalendarService(router, deps, hub),
  });
  c = clientsFor(server.url);
}, 120_000);

afterAll(async () => {
  hub?.close();
  c?.close();
  await server?.close(1000);
  await db?.stop();
});

// Every test starts with nothing retained: the watermark at the newest event.
beforeEach(async () => {
  await db.sql`update calendar.events set created_at = now() - interval '1000 days'`;
  await settled();
  while ((await pruneEventsOnce(db.sql, 30)) > 0);
  const [left] = await db.sql<{ n: number }[]>`select count(*)::int as n from calendar.events`;
  expect(left!.n).toBe(0);
});

let counter = 0;
const fresh = (label: string) => `${label}-${++counter}`;

/**
 * Appends one CalendarChanged (BLOCK_CREATED) per holder id to `listing`, all in one
 * transaction (one xid); returns their seqs in stream order.
 */
async function addEvents(listing: string, ...holders: string[]): Promise<string[]> {
  // A writer of events registers first (migration 0005).
  const rows = await db.sql.begin(async (tx) => {
    await tx`select calendar.begin_event_write()`;
    return tx<{ seq: string }[]>`
      insert into calendar.events (id, workspace_id, listing_id, type, body)
      select v.id, ${WS}, ${listing}, 'calendar_changed',
             jsonb_build_object('occurred_at', '2031-01-01T00:00:00Z', 'workspace_id', ${WS}::text, 'listing_id', ${listing}::text,
                                'kind', 'block_created', 'holder_kind', 'block', 'holder_id', v.h, 'released', null,
                                'held', jsonb_build_object('check_in', '2031-01-01', 'check_out', '2031-01-02'))
      from (select gen_random_uuid() as id, u.h, u.i from unnest(${db.sql.array(holders)}::text[]) with ordinality as u(h, i)) v
      order by v.i
      returning seq::text`;
  });
  return rows.map((r) => r.seq).sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
}

/** One event per call, each in its own transaction: seqs in stream order. */
async function addEach(listing: string, ...holders: string[]): Promise<string[]> {
  const seqs: string[] = [];
  for (const h of holders) seqs.push(...(await addEvents(listing, h)));
  return seqs;
}

/** Sets `created_at` of these events `days` back. */
async function age(seqs: string[], days: number): Promise<void> {
  await db.sql`update calendar.events set created_at = now() - make_interval(days => ${days}) where seq in ${db.sql(seqs)}`;
}

/** Waits until every event is below the calendar's horizon (no older event writer still running). */
async function settled(): Promise<void> {
  await eventually(
    async () => {
      const horizon = await readEventHorizon(db.sql);
      const [r] = await db.sql<{ ok: boolean }[]>`
      select not exists (select 1 from calendar.events where xid >= ${horizon}::xid8) as ok`;
      return r!.ok;
    },
    20000,
    'the horizon to pass every event',
  );
}

async function watermark(): Promise<{ seq: string; maxSeq: string }> {
  const [w] = await db.sql<{ seq: string; max_seq: string }[]>`select seq::text, max_seq::text from calendar.events_pruned`;
  return { seq: w!.seq, maxSeq: w!.max_seq };
}

async function retained(): Promise<string[]> {
  const rows = await db.sql<{ seq: string }[]>`select seq::text from calendar.events order by xid, seq`;
  return rows.map((r) => r.seq);
}

const holderOf = (m: WatchEventsResponse) => (m.event.value as CalendarChanged).holder?.id;

/** Waits until the watcher has `n` messages, then a little longer to catch extras. */
async function receivedAll(w: Watcher, n: number): Promise<string[]> {
  await eventually(
    async () => {
      if (w.error()) throw w.error();
      return w.received.length >= n;
    },
    15000,
    `${n} messages`,
  );
  await holdsFor(`no message past the ${n} expected (two polls)`, () => w.received.length === n, 600);
  return w.received.map(holderOf) as string[];
}

async function failure(w: Watcher): Promise<ConnectError> {
  await eventually(async () => w.error() !== undefined, 15000, 'the stream to fail');
  await w.stop();
  return ConnectError.from(w.error());
}

/** `p`, or a rejection after `ms` (a stream that should have failed must not hang the test). */
function within<T>(p: Promise<T>, ms = 15000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`nothing within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** Reads the generator directly (no server), as a handler would. */
function open(req: { cursor?: string; listingId?: string }) {
  const abort = new AbortController();
  const gen = watchEvents(db.sql, hub, create(WatchEventsRequestSchema, req), { signal: abort.signal } as HandlerContext);
  return {
    gen,
    close: async () => {
      abort.abort();
      hub.notify();
      await gen.return(undefined);
    },
  };
}

describe('CALENDAR_EVENT_RETENTION_DAYS', () => {
  test('defaults to 30 days; 1–3650 accepted; anything else refused at start-up with one line', () => {
    expect(loadConfig({}).calendarEventRetentionDays).toBe(30);
    expect(loadConfig({ CALENDAR_EVENT_RETENTION_DAYS: '7' }).calendarEventRetentionDays).toBe(7);
    for (const bad of ['0', '3651', '1.5', 'thirty', '-1']) {
      expect(() => loadConfig({ CALENDAR_EVENT_RETENTION_DAYS: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ CALENDAR_EVENT_RETENTION_DAYS: bad })).toThrow(/^CALENDAR_EVENT_RETENTION_DAYS must be/);
    }
  });
});

describe('pruning', () => {
  test('deletes only events older than the retention, a prefix of the stream order, and records the watermark', async () => {
    const l = fresh('lst');
    // e1 and e2 straddle a power of ten (9…9, 10…0): positions compare as numbers, never as text.
    const [cur] = await db.sql<{ n: string }[]>`select last_value::text as n from calendar.events_seq_seq`;
    await db.sql`select setval('calendar.events_seq_seq', ${(10n ** BigInt(cur!.n.length + 1) - 2n).toString()}::bigint)`;
    const [e1, e2] = await addEvents(l, 'e1', 'e2');
    expect(e2!.length).toBe(e1!.length + 1);
    const [e3, e4, e5] = await addEach(l, 'e3', 'e4', 'e5');
    await age([e1!, e2!, e4!], 40);
    await age([e3!], 20);
    await settled();
    const before = await watermark();

    // e3 is young: the prune stops there, keeping e4 although it is old.
    expect(await pruneEventsOnce(db.sql, 30)).toBe(2);
    expect(await retained()).toEqual([e3, e4, e5]);
    expect(await watermark()).toEqual({ seq: e2, maxSeq: e2 });
    expect(BigInt(e2!)).toBeGreaterThan(BigInt(before.seq));
    expect(await pruneEventsOnce(db.sql, 30)).toBe(0);

    // A shorter retention reaches e3 (20 days) and e4; e5 (today) stays.
    expect(await pruneEventsOnce(db.sql, 10)).toBe(2);
    expect(await retained()).toEqual([e5]);
    expect(await watermark()).toEqual({ seq: e4, maxSeq: e4 });
  });

  test('bounded batches: at most `batch` rows per statement, the watermark moving with each', async () => {
    const l = fresh('lst');
    const seqs = await addEach(l, 'a', 'b', 'c', 'd', 'e');
    await age(seqs, 31);
    await settled();
    expect(await pruneEventsOnce(db.sql, 30, 2)).toBe(2);
    expect((await watermark()).seq).toBe(seqs[1]);
    expect(await pruneEventsOnce(db.sql, 30, 2)).toBe(2);
    expect((await watermark()).seq).toBe(seqs[3]);
    expect(await pruneEventsOnce(db.sql, 30, 2)).toBe(1);
    expect(await watermark()).toEqual({ seq: seqs[4], maxSeq: seqs[4] });
    expect(await retained()).toEqual([]);
  });

  test(`the pruner deletes ${PRUNE_BATCH.toLocaleString('en')} rows per statement until done, logs the count, and stops`, async () => {
    const l = fresh('lst');
    const n = PRUNE_BATCH + 50;
    await db.sql.begin(async (tx) => {
      await tx`select calendar.begin_event_write()`;
      await tx`
        insert into calendar.events (id, workspace_id, listing_id, type, data, created_at)
        select gen_random_uuid(), ${WS}, ${l}, 'calendar_changed', '\\x'::bytea, now() - interval '31 days'
        from generate_series(1, ${n})`;
    });
    const young = await addEvents(l, 'young');
    await settled();
    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const pruner = new EventPruner(db.sql, log, 30);
    pruner.start();
    try {
      const line = await eventually(async () => firstLogEvent(lines, 'calendar.events.pruned'), 60000, 'the prune log line');
      expect(line).toMatchObject({ deleted: n, retention_days: 30 });
    } finally {
      await pruner.stop();
    }
    expect(await retained()).toEqual(young);
  });
});

describe('WatchEvents after a prune (Connect/gRPC)', () => {
  test('a cursor before the watermark fails OUT_OF_RANGE (CURSOR_EXPIRED); the watermark and later cursors resume without gap or repeat; no cursor starts at the oldest retained', async () => {
    const l = fresh('lst');
    const [p1, p2, p3] = await addEach(l, 'p1', 'p2', 'p3');
    const [r1] = await addEach(l, 'r1', 'r2');
    await age([p1!, p2!, p3!], 45);
    await settled();
    expect(await pruneEventsOnce(db.sql, 30)).toBe(3);
    expect((await watermark()).seq).toBe(p3);

    for (const cursor of [p1!, p2!]) {
      const err = await failure(watch(c.calendar, { cursor }));
      expect(err.code).toBe(Code.OutOfRange);
      expect(reasonOf(err)).toBe(ErrorReason.CURSOR_EXPIRED);
      expect(err.rawMessage).toMatch(/cursor expired.*pruned.*resynchronise.*WatchEvents without a cursor/);
    }
    // Never an event (above every seq pruned): still INVALID_ARGUMENT.
    const unknown = await failure(watch(c.calendar, { cursor: '999999999999' }));
    expect(unknown.code).toBe(Code.InvalidArgument);

    // The last event pruned: its consumer saw everything up to it, so it resumes.
    const atMark = watch(c.calendar, { cursor: p3 });
    const after = watch(c.calendar, { cursor: r1 });
    const fromOldest = watch(c.calendar, {});
    const filtered = watch(c.calendar, { listingId: l });
    try {
      expect(await receivedAll(atMark, 2)).toEqual(['r1', 'r2']);
      expect(await receivedAll(after, 1)).toEqual(['r2']);
      expect(await receivedAll(fromOldest, 2)).toEqual(['r1', 'r2']);
      expect(await receivedAll(filtered, 2)).toEqual(['r1', 'r2']);
      // and they keep tailing.
      await addEach(l, 'r3');
      hub.notify();
      for (const w of [atMark, after, fromOldest, filtered]) await w.until((m) => holderOf(m) === 'r3');
      expect(atMark.received.map(holderOf)).toEqual(['r1', 'r2', 'r3']);
      expect(after.received.map(holderOf)).toEqual(['r2', 'r3']);
      expect(fromOldest.received.map(holderOf)).toEqual(['r1', 'r2', 'r3']);
      // Cursors are still the seqs.
      expect(atMark.received[0]!.cursor).toBe(r1);
    } finally {
      for (const w of [atMark, after, fromOldest, filtered]) await w.stop();
    }
  });
});

describe('a running stream and the prune', () => {
  test('a stream the prune overtakes fails CURSOR_EXPIRED after what it had read, never skipping', async () => {
    const l = fresh('lst');
    const holders = Array.from({ length: 600 }, (_, i) => `o${i + 1}`);
    const seqs = await addEvents(l, ...holders);
    await settled();
    const s = open({ listingId: l });
    const got: string[] = [];
    try {
      const first = await s.gen.next();
      got.push(holderOf(first.value as WatchEventsResponse)!);
      // The stream holds its first batch (500); the prune takes all 600 meanwhile.
      await age(seqs, 40);
      expect(await pruneEventsOnce(db.sql, 30)).toBe(600);
      const err = await (async () => {
        try {
          for (;;) {
            const r = await within(s.gen.next());
            if (r.done) return undefined;
            got.push(holderOf(r.value as WatchEventsResponse)!);
          }
        } catch (e) {
          return ConnectError.from(e);
        }
      })();
      expect(err?.code).toBe(Code.OutOfRange);
      expect(reasonOf(err!)).toBe(ErrorReason.CURSOR_EXPIRED);
      // What it had read before the prune, in order, and nothing after a gap.
      expect(got).toEqual(holders.slice(0, 500));
    } finally {
      await s.close();
    }
  });

  test('a filtered stream of a quiet listing is not overtaken: its position follows the horizon', async () => {
    const quiet = fresh('quiet');
    const busy = fresh('busy');
    const [q1] = await addEach(quiet, 'q1');
    const others = await addEach(busy, 'b1', 'b2', 'b3');
    await age([q1!, ...others], 40);
    await settled();
    const s = open({ listingId: quiet });
    try {
      expect(holderOf((await s.gen.next()).value as WatchEventsResponse)).toBe('q1');
      const next = s.gen.next(); // reads on: nothing more below the horizon, so it waits there
      expect(await pruneEventsOnce(db.sql, 30)).toBe(4);
      expect((await watermark()).seq).toBe(others[2]);
      const [q2] = await addEach(quiet, 'q2');
      hub.notify();
      const m = (await within(next)).value as WatchEventsResponse;
      expect([holderOf(m), m.cursor]).toEqual(['q2', q2]);
    } finally {
      await s.close();
    }
    // Reconnecting with q1 (pruned, before the watermark) is expired, even though no
    // event of this listing was lost: the server cannot tell (docs/calendar.md).
    const err = await failure(watch(c.calendar, { listingId: quiet, cursor: q1 }));
    expect(err.code).toBe(Code.OutOfRange);
  });
});
