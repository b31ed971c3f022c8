/**
 * ListBlocks' statement (services/calendar/blocks-list.ts, migration 0006) against the
 * test database (real PostgreSQL with DATABASE_URL, embedded PGlite otherwise), below
 * the service:
 *  - migration 0006 applies and its length classes are exact: every length the schema
 *    admits (1–730 nights, the validated `blocks_nights` constraint) falls in a class
 *    whose bound covers it, so the per-class check_in bound never drops a block;
 *  - property: on a few thousand random blocks (lengths 1–730, class boundaries and
 *    ties on dates included), ListBlocks answers exactly what the previous statement
 *    (before migration 0006, kept verbatim below) answers, for random from / to /
 *    page / page_size, pages past the end included;
 *  - real PostgreSQL only: a `from` page is a Merge Append of bounded ranges of
 *    blocks_span_page_idx, and reads the same few buffers whatever the history.
 * Boundaries through the running service: blocks-history.test.ts.
 */
import { create } from '@bufbuild/protobuf';
import { ListBlocksRequestSchema, type Block } from '../../gen/psync/calendar/v1/calendar_pb';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { calendarModule } from '../../services/calendar/module';
import { listBlocks } from '../../services/calendar/blocks';
import { blockPageQuery, SPAN_CLASSES } from '../../services/calendar/blocks-list';
import type { CalendarDeps } from '../../services/calendar/calendar-deps';
import type { ListingDirectory } from '../../services/calendar/listings';
import type { Sql } from '../../services/kit/db';
import { testLogger } from '../support/bus';
import { fuzzSeed, Rng } from '../support/fuzz';
import { startTestDatabase, type TestDatabase } from '../support/database';

jest.setTimeout(180_000);

let db: TestDatabase;
let deps: CalendarDeps;

beforeAll(async () => {
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'calendar', sources: [KIT_MIGRATIONS, calendarModule.migrations] });
  deps = {
    sql: db.sql,
    log: testLogger(),
    listings: { assertOwned: async () => undefined } as unknown as ListingDirectory,
    holdTtlSeconds: 900,
    eventsCommitted: () => undefined,
  };
}, 120_000);

afterAll(async () => {
  await db?.stop();
});

const DAY_MS = 86_400_000;
/** "YYYY-MM-DD" `n` days after 2031-01-01 (negative: before). */
const day = (n: number) => new Date(Date.UTC(2031, 0, 1) + n * DAY_MS).toISOString().slice(0, 10);

/** The statement of ListBlocks before migration 0006, verbatim. */
function previousStatement(sql: Sql, ws: string, fromText: string | null, toText: string | null, limit: number, offset: number) {
  return sql<{ external_uid: string; check_in: string; check_out: string }[]>`
    with page as (
      select p.id, p.check_in, p.check_out, p.external_uid
      from calendar.blocks p
      where p.workspace_id = ${ws}
        ${fromText === null ? sql`` : sql`and p.check_out > ${fromText}::date`}
        ${toText === null ? sql`` : sql`and p.check_in <= ${toText}::date`}
      order by p.check_in, p.check_out, p.external_uid
      limit ${limit} offset ${offset}
    )
    select b.id, b.external_uid, b.listing_id, b.check_in::text, b.check_out::text, b.reason,
           b.check_out - b.check_in as nights, b.created_at, b.updated_at
    from page join calendar.blocks b on b.id = page.id
    order by page.check_in, page.check_out, page.external_uid
  `;
}

/** Inserts blocks (uid, check_in, nights) of `ws` in one statement. */
async function insertBlocks(ws: string, blocks: { uid: string; checkIn: string; nights: number }[]): Promise<void> {
  for (let i = 0; i < blocks.length; i += 2000) {
    const part = blocks.slice(i, i + 2000);
    await db.sql`
      insert into calendar.blocks (workspace_id, external_uid, listing_id, check_in, check_out, reason)
      select ${ws}, u, 'L-' || (n % 7), d, d + n, 'maintenance'
      from unnest(${part.map((b) => b.uid)}::text[], ${part.map((b) => b.checkIn)}::date[], ${part.map((b) => b.nights)}::int[]) as t(u, d, n)`;
  }
}

describe('migration 0006', () => {
  test('applies: recorded, its functions and index present, the class expression inlined into the index', async () => {
    const [m] = await db.sql<{ n: number }[]>`select count(*)::int as n from calendar.schema_migrations where id = 'calendar/0006_blocks_span_index'`;
    expect(m!.n).toBe(1);
    const [idx] = await db.sql<{ def: string }[]>`select indexdef as def from pg_indexes where schemaname = 'calendar' and indexname = 'blocks_span_page_idx'`;
    expect(idx!.def).toMatch(/\(workspace_id, calendar\.block_span_class\(check_in, check_out\), check_in, check_out, external_uid\) INCLUDE \(id\)/);
    // blocks_page_idx stays: pages without `from` use it.
    const [page] = await db.sql<{ n: number }[]>`select count(*)::int as n from pg_indexes where schemaname = 'calendar' and indexname = 'blocks_page_idx'`;
    expect(page!.n).toBe(1);
  });

  test('every length the schema admits is covered by its class bound; the bound is 730 and enforced on every stored block', async () => {
    // Lengths 1..730 (and what lies beyond, to show the last class takes it): class and bound.
    const rows = await db.sql<{ n: number; k: number; max: number }[]>`
      select n, calendar.block_span_class(d, d + n) as k, calendar.block_span_max_nights(calendar.block_span_class(d, d + n)) as max
      from generate_series(1, 730) n, (select date '2031-01-01' as d) x order by n`;
    expect(rows).toHaveLength(730);
    for (const r of rows) {
      expect(r.k).toBeGreaterThanOrEqual(0);
      expect(r.k).toBeLessThan(SPAN_CLASSES);
      expect(r.n).toBeLessThanOrEqual(r.max);
      // Not much larger either (the bound is what a scan skips): at most twice, except the last class.
      if (r.k < SPAN_CLASSES - 1) expect(r.max).toBeLessThan(2 * r.n);
    }
    expect(new Set(rows.map((r) => r.k)).size).toBe(SPAN_CLASSES);
    expect(rows[0]).toMatchObject({ n: 1, k: 0, max: 1 });
    expect(rows[729]).toMatchObject({ n: 730, k: SPAN_CLASSES - 1, max: 730 });
    // The exactness of the per-class bound rests on this constraint: validated (it holds
    // for every stored row) and capping blocks at 730 nights. Holds and bookings are
    // other tables; ListBlocks reads calendar.blocks only.
    const [c] = await db.sql<{ def: string; validated: boolean }[]>`
      select pg_get_constraintdef(oid) as def, convalidated as validated from pg_constraint
      where conrelid = 'calendar.blocks'::regclass and conname = 'blocks_nights'`;
    expect(c!.validated).toBe(true);
    expect(c!.def).toMatch(/\(check_out - check_in\) <= calendar\.max_nights\(\)/);
    const [limit] = await db.sql<{ n: number }[]>`select calendar.max_nights() as n`;
    expect(limit!.n).toBe(730);
    await expect(db.sql`insert into calendar.blocks (workspace_id, external_uid, listing_id, check_in, check_out, reason)
                        values ('w-731', 'x', 'L', '2031-01-01', date '2031-01-01' + 731, 'other')`).rejects.toMatchObject({ code: '23514' });
  });
});

describe('ListBlocks equals the previous statement on random data', () => {
  const WS = '6f1c2a8e-0000-4000-8000-0000000000a1';
  const OTHER = '6f1c2a8e-0000-4000-8000-0000000000a2';
  const { seed } = fuzzSeed();
  const rng = new Rng(seed);
  const SPAN = 1500; // check_in over ~4 years, so 730-night blocks reach far back

  beforeAll(async () => {
    process.stdout.write(`blocks-list-sql: FUZZ_SEED=${seed}\n`);
    // Lengths: mostly 1–30, some class boundaries (2^k, 2^k + 1) and long ones up to 730.
    const boundaries = [1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 128, 129, 256, 257, 512, 729, 730];
    const nightsOf = () => (rng.chance(0.7) ? 1 + rng.int(30) : rng.chance(0.6) ? rng.pick(boundaries) : 1 + rng.int(730));
    // uids in byte order ("C"): upper and lower case, digits and punctuation sort differently per locale.
    const alphabet = ['A', 'B', 'a', 'b', 'Z', 'z', '0', '9', '-', '_', '.', '~'];
    const uidOf = (i: number) => `${rng.pick(alphabet)}${rng.pick(alphabet)}${i.toString(36)}`;
    const blocks: { uid: string; checkIn: string; nights: number }[] = [];
    for (let i = 0; i < 3000; i++) {
      // Ties: many blocks share a check_in, some also a check_out, so external_uid decides.
      const start = rng.chance(0.3) ? 100 * rng.int(SPAN / 100) : rng.int(SPAN);
      blocks.push({ uid: uidOf(i), checkIn: day(start - 800), nights: rng.chance(0.2) ? 7 : nightsOf() });
    }
    await insertBlocks(WS, blocks);
    // Another workspace's blocks on the same dates are never listed.
    await insertBlocks(
      OTHER,
      blocks.slice(0, 500).map((b) => ({ ...b, uid: `o-${b.uid}` })),
    );
    await db.sql`analyze calendar.blocks`;
  });

  test('from only, to only, both, neither; every page size; pages past the end', async () => {
    const dates = () => day(rng.int(SPAN + 900) - 1700 + rng.int(2)); // around and beyond the data
    let compared = 0;
    let nonEmpty = 0;
    for (let i = 0; i < 160; i++) {
      const shape = i % 4; // 0: from, 1: to, 2: both, 3: neither
      const from = shape === 0 || shape === 2 ? dates() : undefined;
      let to = shape === 1 || shape === 2 ? dates() : undefined;
      if (shape === 2 && rng.chance(0.7) && from !== undefined) to = day(Math.round((Date.parse(from) - Date.UTC(2031, 0, 1)) / DAY_MS) + rng.int(200));
      const pageSize = rng.pick([1, 2, 7, 50, 200]);
      const page = rng.chance(0.15) ? 1 + rng.int(4000) : 1 + rng.int(6);
      const got = await listBlocks(deps, create(ListBlocksRequestSchema, { workspaceId: WS, from, to, page, pageSize }));
      const items = (got.items ?? []) as Block[];
      const want = await previousStatement(db.sql, WS, from ?? null, to ?? null, pageSize + 1, (page - 1) * pageSize);
      const label = JSON.stringify({ from, to, page, pageSize, seed });
      expect([label, items.map((b) => [b.externalUid, b.checkIn, b.checkOut])]).toEqual([label, want.slice(0, pageSize).map((r) => [r.external_uid, r.check_in, r.check_out])]);
      expect([label, got.hasMore]).toEqual([label, want.length > pageSize]);
      compared++;
      if (items.length > 0) nonEmpty++;
    }
    expect(compared).toBe(160);
    expect(nonEmpty).toBeGreaterThan(60);
  });

  test('walking every page of a `from` listing gives every matching block once, in order', async () => {
    const from = day(-100);
    const all: string[] = [];
    for (let page = 1; ; page++) {
      const res = await listBlocks(deps, create(ListBlocksRequestSchema, { workspaceId: WS, from, page, pageSize: 200 }));
      all.push(...((res.items ?? []) as Block[]).map((b) => b.externalUid));
      if (!res.hasMore) break;
    }
    const want = await db.sql<{ u: string }[]>`
      select external_uid as u from calendar.blocks where workspace_id = ${WS} and check_out > ${from}::date
      order by check_in, check_out, external_uid`;
    expect(all).toEqual(want.map((r) => r.u));
    expect(all.length).toBeGreaterThan(1000);
  });
});

// Real PostgreSQL only: the plan (the embedded PGlite has no autovacuum, so its
// visibility map, and the plan, depend on when it last vacuumed).
const realOnly = process.env.DATABASE_URL ? describe : describe.skip;
realOnly('a `from` page does not read the history (real PostgreSQL only)', () => {
  interface Plan {
    'Node Type': string;
    'Index Name'?: string;
    'Shared Hit Blocks': number;
    'Shared Read Blocks': number;
    Plans?: Plan[];
  }
  const nodes = (p: Plan): Plan[] => [p, ...(p.Plans ?? []).flatMap(nodes)];

  async function explain(ws: string, from: string): Promise<Plan> {
    const q = blockPageQuery(db.sql, { workspaceId: ws, from, to: null, limit: 51, offset: 0 });
    const [row] = await db.sql<{ 'QUERY PLAN': { Plan: Plan }[] }[]>`explain (analyze, buffers, format json) ${q}`;
    return row!['QUERY PLAN'][0]!.Plan;
  }

  test('100 blocks a day for 2 years of history and for 20: the same plan and the same buffers', async () => {
    const seedHistory = (ws: string, days: number) => db.sql`
      insert into calendar.blocks (workspace_id, external_uid, listing_id, check_in, check_out, reason)
      select ${ws}, 'h-' || lpad(g::text, 7, '0'), 'L-' || (g % 20), d, d + n, 'reserved'
      from generate_series(1, ${days * 100}::int) g
      cross join lateral (select date '2031-01-01' + 60 - ((${days * 100}::int - g) / 100) as d,
                                 case when g % 1000 = 0 then 31 + (g::bigint * 7919 % 700)::int else 1 + (g::bigint * 7919 % 30)::int end as n) x`;
    await seedHistory('ws-short', 2 * 365);
    await seedHistory('ws-long', 20 * 365);
    await db.sql`vacuum analyze calendar.blocks`;
    const short = await explain('ws-short', '2031-01-01');
    const long = await explain('ws-long', '2031-01-01');
    for (const plan of [short, long]) {
      const all = nodes(plan);
      expect(all.some((n) => n['Node Type'] === 'Merge Append')).toBe(true);
      const scans = all.filter((n) => n['Index Name'] === 'blocks_span_page_idx');
      expect(scans).toHaveLength(SPAN_CLASSES);
      expect(all.some((n) => n['Node Type'] === 'Sort')).toBe(false);
    }
    // A deep page (about 30,000 blocks match, page 401 of 50) merges the ordered ranges
    // too, in one process: no Sort of every match, no parallel plan.
    const q = blockPageQuery(db.sql, { workspaceId: 'ws-long', from: '2030-03-01', to: null, limit: 51, offset: 20000 });
    const [row] = await db.sql<{ 'QUERY PLAN': { Plan: Plan }[] }[]>`explain (analyze, buffers, format json) ${q}`;
    const deep = nodes(row!['QUERY PLAN'][0]!.Plan);
    expect(deep.filter((n) => n['Node Type'] === 'Limit').length).toBeGreaterThan(0);
    expect(deep.some((n) => n['Node Type'] === 'Merge Append')).toBe(true);
    expect(deep.some((n) => n['Node Type'] === 'Sort' || n['Node Type'] === 'Gather Merge' || n['Node Type'] === 'Gather')).toBe(false);
    const buffers = (p: Plan) => p['Shared Hit Blocks'] + p['Shared Read Blocks'];
    // 730,000 blocks of history: the page still reads about what it reads with 73,000.
    expect(buffers(long)).toBeLessThan(buffers(short) * 1.3 + 20);
    expect(buffers(long)).toBeLessThan(600);
    // The previous statement read the history: thousands of buffers.
    const [old] = await db.sql<{ 'QUERY PLAN': { Plan: Plan }[] }[]>`explain (analyze, buffers, format json) ${previousStatement(db.sql, 'ws-long', '2031-01-01', null, 51, 0)}`;
    expect(buffers(old!['QUERY PLAN'][0]!.Plan)).toBeGreaterThan(5 * buffers(long));
  });
});
