/**
 * GET /v1/blocks against the workspace's history (docs/performance.md "Blocks and history"), on a real
 * PostgreSQL:
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test [NATS_URL=nats://127.0.0.1:4222] npm run bench:blocks
 *
 * Starts the whole system (`main.ts all`) on a scratch database created on
 * DATABASE_URL's server (dropped afterwards). Two sandbox workspaces are seeded with SQL
 * (generate_series, straight into the calendar schema: blocks and their claim rows,
 * as PutBlock writes them, within every constraint: 1–730 nights, unique uids, partner
 * claims may overlap) with the same shape, 100 blocks a day, 1–30 nights (every
 * 1,000th 31–730), ending 60 days after FROM (the "today" of the `from` filter):
 *   - 10,000 blocks: 100 days, 40 of them before FROM;
 *   - 1,000,000 blocks: 10,000 days (27 years) of history before FROM.
 * The 10,000 case is measured before the 1,000,000 are seeded. For each, through the
 * gateway (autocannon, BENCH_CONNECTIONS connections for BENCH_SECONDS seconds):
 * `?from=FROM` (page 1 of 50), page 1 and page 100 without a filter: req/s, p50, p99;
 * and in the database, EXPLAIN (ANALYZE, BUFFERS) of the statement ListBlocks runs
 * (services/calendar/blocks-list.ts), median of 15, with the buffers it touched, beside
 * the previous statement (before migration 0006) on the same rows. Then the cost of deep
 * pages (OFFSET paging) at 1,000,000 blocks: pages 1, 100 and 1000, and sequential
 * PutBlock calls into each workspace. Prints a Markdown summary (docs/performance.md,
 * "Blocks and history").
 */
import { createBenchDatabase, startBenchSystem } from './support/bench-system';
import { cpus, loadavg, totalmem } from 'node:os';
import type { PendingQuery, Row } from 'postgres';
import { type Sql } from '../services/kit/db';
import { blockPageQuery } from '../services/calendar/blocks-list';
import { Environment } from '../gen/psync/common/v1/environment_pb';
import { benchName } from './support/results';

/** The part of autocannon's API used here (the package ships no type declarations). */
declare namespace autocannon {
  export interface Options {
    url: string;
    connections?: number;
    duration?: number;
    headers?: Record<string, string>;
  }
  export interface Result {
    requests: { average: number; total: number };
    latency: { p50: number; p99: number };
    non2xx: number;
    errors: number;
  }
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (opts: autocannon.Options, cb: (err: Error | null, res: autocannon.Result) => void) => unknown;

const SECONDS = Number(process.env.BENCH_SECONDS ?? '10');
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? '1');
const PER_DAY = 100;
const FUTURE_DAYS = 60;
/** The `from` of the measured listing: "today" of the seeded calendars. */
const FROM = '2031-01-01';
const LISTINGS = 20;

function cannon(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((res, rej) => {
    autocannon(opts, (err, result) => (err ? rej(err) : res(result)));
  });
}

function summary(r: autocannon.Result): string {
  return `p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, ${Math.round(r.requests.average)} req/s (${r.requests.total} requests, non-2xx ${r.non2xx}, errors ${r.errors})`;
}

interface PlanNode {
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
}

/**
 * EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) of `query()` `runs` times: median execution time
 * and the buffers of the last run (per-node timing left off: with it, the clock calls of
 * a deep page's tens of thousands of rows through 11 plan nodes would dominate), and
 * the plan of one more run with timing, as text.
 */
async function explain<T extends Row[]>(sql: Sql, query: () => PendingQuery<T>, runs = 15): Promise<{ ms: number; buffers: number; text: string }> {
  const times: number[] = [];
  let buffers = 0;
  for (let i = 0; i < runs; i++) {
    const [row] = await sql<{ 'QUERY PLAN': { Plan: PlanNode; 'Execution Time': number }[] }[]>`explain (analyze, buffers, timing off, format json) ${query()}`;
    const plan = row!['QUERY PLAN'][0]!;
    times.push(plan['Execution Time']);
    buffers = plan.Plan['Shared Hit Blocks'] + plan.Plan['Shared Read Blocks'];
  }
  times.sort((a, b) => a - b);
  const textRows = await sql<{ 'QUERY PLAN': string }[]>`explain (analyze, buffers, costs off) ${query()}`;
  return { ms: times[Math.floor(times.length / 2)]!, buffers, text: textRows.map((r) => r['QUERY PLAN']).join('\n') };
}

/** ListBlocks' statement before migration 0006 (kept for the comparison; test/calendar/blocks-list-sql.test.ts has the same). */
function previousStatement(sql: Sql, ws: string, fromText: string | null, limit: number, offset: number) {
  return sql`
    with page as (
      select p.id, p.check_in, p.check_out, p.external_uid
      from calendar.blocks p
      where p.workspace_id = ${ws}
        ${fromText === null ? sql`` : sql`and p.check_out > ${fromText}::date`}
      order by p.check_in, p.check_out, p.external_uid
      limit ${limit} offset ${offset}
    )
    select b.id, b.external_uid, b.listing_id, b.check_in::text, b.check_out::text, b.reason,
           b.check_out - b.check_in as nights, b.created_at, b.updated_at
    from page join calendar.blocks b on b.id = page.id
    order by page.check_in, page.check_out, page.external_uid`;
}

/**
 * `count` blocks of `ws` with their claims, PER_DAY a day, the last check_in
 * FUTURE_DAYS after FROM. Nights 1–30 (every 1,000th block 31–730): within
 * blocks_nights; claims of partner blocks may overlap (claims_sides_never_overlap only
 * separates partner and marketplace rows).
 */
async function seed(sql: Sql, ws: string, listings: string[], count: number): Promise<number> {
  const t0 = performance.now();
  await sql.begin(async (tx) => {
    await tx`
      with b as (
        insert into calendar.blocks (workspace_id, external_uid, listing_id, check_in, check_out, reason, created_at, updated_at)
        select ${ws}, 'seed-' || lpad(g::text, 7, '0'), (${listings}::text[])[1 + g % ${listings.length}::int], d, d + n, 'reserved', now(), now()
        from generate_series(1, ${count}::int) g
        cross join lateral (
          select ${FROM}::date + ${FUTURE_DAYS}::int - ((${count}::int - g) / ${PER_DAY}::int) as d,
                 case when g % 1000 = 0 then 31 + (g::bigint * 2654435761 % 700)::int
                      else 1 + (g::bigint * 2654435761 % 30)::int end as n
        ) x
        returning id, listing_id, check_in, check_out
      )
      insert into calendar.claims (listing_id, holder_kind, holder_id, nights)
      select listing_id, 'block', id::text, daterange(check_in, check_out) from b`;
  });
  await sql`vacuum analyze calendar.blocks`;
  await sql`vacuum analyze calendar.claims`;
  return (performance.now() - t0) / 1000;
}

async function main(): Promise<void> {
  benchName('blocks');
  const loadStart = loadavg();
  const db = await createBenchDatabase();
  const system = await startBenchSystem(db.url, { RATE_LIMIT_PER_HOUR: '1000000' });
  const { gateway, identity, catalog, calendar, sql } = system;
  const out: string[] = [];
  try {
    const workspace = async (name: string) => {
      const id = (await identity.createWorkspace({ name, environment: Environment.SANDBOX })).workspace!.workspaceId;
      const key = await identity.issueKey({ workspaceId: id });
      const res = await fetch(`${gateway}/v1/token`, { method: 'POST', headers: { authorization: `Bearer ${key.apiKey}` } });
      if (res.status !== 200) throw new Error(`token exchange answered ${res.status}: ${await res.text()}`);
      const token = ((await res.json()) as { access_token: string }).access_token;
      const listings: string[] = [];
      for (let i = 0; i < LISTINGS; i++) listings.push((await catalog.createListing({ workspaceId: id })).listing!.listingId);
      return { id, headers: { authorization: `Bearer ${token}` }, listings };
    };

    const measure = async (label: string, ws: { id: string; headers: Record<string, string> }, count: number) => {
      // Sanity: the first page of the `from` listing, through the gateway.
      const check = await fetch(`${gateway}/v1/blocks?from=${FROM}`, { headers: ws.headers });
      if (check.status !== 200) throw new Error(`GET /v1/blocks answered ${check.status}: ${await check.text()}`);
      const first = (await check.json()) as { items: { check_in: string; check_out: string }[]; has_more: boolean };
      const cells: [string, string][] = [
        [`from=${FROM} (page 1 of 50)`, `/v1/blocks?from=${FROM}`],
        ['page 1 (no filter)', '/v1/blocks?page=1'],
        ['page 100 (no filter)', '/v1/blocks?page=100'],
      ];
      for (const [what, path] of cells) {
        const r = await cannon({ url: `${gateway}${path}`, headers: ws.headers, connections: CONNECTIONS, duration: SECONDS });
        out.push(`- ${label}: GET ${what}: ${summary(r)}`);
      }
      const fromNow = await explain(sql, () => blockPageQuery(sql, { workspaceId: ws.id, from: FROM, to: null, limit: 51, offset: 0 }));
      const fromBefore = await explain(sql, () => previousStatement(sql, ws.id, FROM, 51, 0), 5);
      const p1 = await explain(sql, () => blockPageQuery(sql, { workspaceId: ws.id, from: null, to: null, limit: 51, offset: 0 }));
      const p100 = await explain(sql, () => blockPageQuery(sql, { workspaceId: ws.id, from: null, to: null, limit: 51, offset: 4950 }));
      out.push(
        `  - in the database (EXPLAIN ANALYZE, median): from page ${fromNow.ms.toFixed(2)} ms, ${fromNow.buffers} buffers ` +
          `(the previous statement: ${fromBefore.ms.toFixed(2)} ms, ${fromBefore.buffers} buffers); page 1 ${p1.ms.toFixed(2)} ms, ${p1.buffers} buffers; ` +
          `page 100 ${p100.ms.toFixed(2)} ms, ${p100.buffers} buffers; ${count} blocks; the from page starts at ${first.items[0]?.check_in}–${first.items[0]?.check_out}, has_more ${first.has_more}`,
      );
      return { fromNow, fromBefore };
    };

    const puts = async (label: string, ws: { id: string; listings: string[] }) => {
      const lat: number[] = [];
      for (let i = 0; i < 200; i++) {
        const start = 70 + (i % 300);
        const t0 = performance.now();
        await calendar.putBlock({
          workspaceId: ws.id,
          externalUid: `put-${i}`,
          target: { case: 'listingId', value: ws.listings[i % ws.listings.length]! },
          checkIn: new Date(Date.parse(`${FROM}T00:00:00Z`) + start * 86_400_000).toISOString().slice(0, 10),
          checkOut: new Date(Date.parse(`${FROM}T00:00:00Z`) + (start + 1 + (i % 20)) * 86_400_000).toISOString().slice(0, 10),
        });
        lat.push(performance.now() - t0);
      }
      lat.sort((a, b) => a - b);
      out.push(`- ${label}: 200 sequential CalendarService.PutBlock (gRPC): p50 ${lat[100]!.toFixed(2)} ms, p99 ${lat[197]!.toFixed(2)} ms`);
    };

    const small = await workspace('history-10k');
    const smallSeed = await seed(sql, small.id, small.listings, 10_000);
    out.push(`- seeded 10,000 blocks and claims in ${smallSeed.toFixed(1)} s (vacuum analyze included)`);
    const s = await measure('10,000 blocks', small, 10_000);
    await puts('10,000 blocks', small);

    const big = await workspace('history-1m');
    const bigSeed = await seed(sql, big.id, big.listings, 1_000_000);
    out.push(`- seeded 1,000,000 blocks and claims in ${bigSeed.toFixed(1)} s (vacuum analyze included)`);
    const b = await measure('1,000,000 blocks', big, 1_000_000);
    await puts('1,000,000 blocks', big);

    // Deep pages (OFFSET paging) at 1,000,000 blocks: no filter, and `from` 1,000 days
    // back (~100,000 matching blocks), pages 1, 100 and 1000 of 50.
    const deepFrom = new Date(Date.parse(`${FROM}T00:00:00Z`) - 1000 * 86_400_000).toISOString().slice(0, 10);
    const deep: string[] = [];
    for (const from of [null, deepFrom]) {
      for (const page of [1, 100, 1000]) {
        const offset = (page - 1) * 50;
        const e = await explain(sql, () => blockPageQuery(sql, { workspaceId: big.id, from, to: null, limit: 51, offset }), 7);
        const before = from === null ? undefined : await explain(sql, () => previousStatement(sql, big.id, from, 51, offset), 3);
        deep.push(
          `${from === null ? 'no filter' : `from=${from}`} page ${page}: ${e.ms.toFixed(2)} ms, ${e.buffers} buffers` +
            (before ? ` (the previous statement: ${before.ms.toFixed(2)} ms, ${before.buffers} buffers)` : ''),
        );
      }
    }
    out.push(`- deep pages at 1,000,000 blocks, in the database (EXPLAIN ANALYZE, median of 7; the previous statement median of 3): ${deep.join('; ')}`);

    out.push('', '1,000,000 blocks, `from` page, the previous statement:', '```', b.fromBefore.text, '```');
    out.push('', '1,000,000 blocks, `from` page, ListBlocks now:', '```', b.fromNow.text, '```');
    out.push('', `from page, in the database: 1,000,000 / 10,000 = ${(b.fromNow.ms / s.fromNow.ms).toFixed(2)}× now, ${(b.fromBefore.ms / s.fromBefore.ms).toFixed(1)}× before`);

    const [pg] = await sql<{ v: string }[]>`select current_setting('server_version') as v`;
    out.unshift(
      `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; PostgreSQL ${pg?.v}; bus ${process.env.NATS_URL ? 'NATS JetStream' : 'in-process'}; everything on this one machine; load average at the start ${loadStart.map((l) => l.toFixed(2)).join(' ')}, at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} (the machine is shared).`,
      `Command: DATABASE_URL=${process.env.DATABASE_URL!.replace(/\/\/[^@]*@/, '//…@')} ${process.env.NATS_URL ? 'NATS_URL=… ' : ''}npm run bench:blocks (BENCH_SECONDS=${SECONDS}, BENCH_CONNECTIONS=${CONNECTIONS})`,
    );
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    await system.stop();
    await db.drop();
  }
}

main().catch((err) => {
  process.stderr.write(`bench:blocks: ${err?.stack ?? err}\n`);
  process.exit(1);
});
