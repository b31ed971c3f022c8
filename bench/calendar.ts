/**
 * Calendar benchmark (docs/performance.md "Calendar"), on a real PostgreSQL:
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test [NATS_URL=nats://127.0.0.1:4222] npm run bench:calendar
 *
 * Starts the whole system (`main.ts all`) on a scratch database created on
 * DATABASE_URL's server (dropped afterwards), then measures
 *   1. PUT /v1/blocks/{uid} through the public gateway: fresh uids, 1–30 nights, spread
 *      over 50 listings of one sandbox workspace (autocannon, BENCH_CONNECTIONS
 *      connections for BENCH_SECONDS seconds): req/s, p50, p99;
 *   2. the conflict scan of a 730-night push in the database (EXPLAIN ANALYZE of the
 *      exact statement the service runs), on a listing whose 730 nights are all taken
 *      by bookings, and on a free listing with blocks only; plus that 409 end to end;
 *   3. GET /v1/blocks page 1 and a deep page (page 2000 of 50) with 100,000 blocks in
 *      the workspace (seeded with SQL), through the gateway.
 * Prints a Markdown summary (docs/performance.md, "Calendar").
 */
import { createBenchDatabase, startBenchSystem } from './support/bench-system';
import { randomBytes } from 'node:crypto';
import { cpus, loadavg, totalmem } from 'node:os';
import { type Sql } from '../services/kit/db';
import { Environment } from '../gen/psync/common/v1/environment_pb';
import { cpuMsOf } from './support/proc-cpu';
import { benchName } from './support/results';

/** The part of autocannon's API used here (the package ships no type declarations). */
declare namespace autocannon {
  export interface Request {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    setupRequest?: (req: Request) => Request;
  }
  export interface Options {
    url: string;
    connections?: number;
    duration?: number;
    headers?: Record<string, string>;
    requests?: Request[];
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

const SECONDS = Number(process.env.BENCH_SECONDS ?? '20');
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? '64');
const LISTINGS = 50;
const DEEP_BLOCKS = 100_000;

const day = (n: number) => new Date(Date.UTC(2030, 0, 1) + n * 86_400_000).toISOString().slice(0, 10);

function cannon(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((res, rej) => {
    autocannon(opts, (err, result) => (err ? rej(err) : res(result)));
  });
}

function summary(r: autocannon.Result): string {
  return `${Math.round(r.requests.average)} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, ${r.requests.total} requests, non-2xx ${r.non2xx}, errors ${r.errors}`;
}

/** Execution time (ms) reported by EXPLAIN ANALYZE, median of `runs`. */
async function explainMs(sql: Sql, text: string, params: (string | number | boolean)[], runs = 15): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const rows = await sql.unsafe(`explain (analyze, format json) ${text}`, params);
    const plan = (rows[0] as Record<string, unknown>)['QUERY PLAN'] as { 'Execution Time': number }[];
    times.push(plan[0]!['Execution Time']);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/** CPU used by the system process and by this database's PostgreSQL backends between two calls. */
async function cpuMeter(sql: Sql, systemPid: number): Promise<() => Promise<{ node: number; postgres: number }>> {
  const backends = async () => new Map((await sql<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database()`).map((r) => [r.pid, cpuMsOf(r.pid)]));
  const node0 = cpuMsOf(systemPid);
  const pg0 = await backends();
  return async () => {
    const pg1 = await backends();
    let postgres = 0;
    for (const [pid, ms] of pg1) postgres += ms - (pg0.get(pid) ?? 0);
    return { node: cpuMsOf(systemPid) - node0, postgres };
  };
}

/** Waits until the calendar's outbox relay has published everything; resolves with the seconds waited. */
async function drainOutbox(sql: Sql): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < 600; i++) {
    const [{ pending } = { pending: 0 }] = await sql<{ pending: number }[]>`select count(*)::int as pending from calendar.outbox where published_at is null`;
    if (pending === 0) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  return (performance.now() - t0) / 1000;
}

/**
 * Events the outbox relay has published so far and in how many batches: each batch is
 * one relay transaction (`published_at = now()`, one value per transaction) of 5
 * statements (BEGIN, try-lock, select, update, COMMIT) plus one NATS publish per event.
 */
async function relayTotals(sql: Sql): Promise<{ events: number; batches: number }> {
  const [r] = await sql<{ events: number; batches: number }[]>`
    select count(*)::int as events, count(distinct published_at)::int as batches from calendar.outbox where published_at is not null`;
  return r ?? { events: 0, batches: 0 };
}

function relaySummary(a: { events: number; batches: number }, b: { events: number; batches: number }): string {
  const events = b.events - a.events;
  const batches = b.batches - a.batches;
  return `the relay published ${events} events in ${batches} batches (${(events / Math.max(1, batches)).toFixed(1)} events per batch)`;
}

/**
 * The conflict scan as PutBlock runs it: SQL `calendar.night_conflicts` (migration 0003;
 * `calendar.put_block` calls it, and claims.ts scanConflicts), with positional parameters.
 */
const SCAN = `select calendar.night_conflicts($1, $2::date, $3::date, $4::boolean)`;

async function main(): Promise<void> {
  benchName('calendar');
  const loadStart = loadavg();
  const db = await createBenchDatabase();
  const system = await startBenchSystem(db.url, { RATE_LIMIT_PER_HOUR: '1000000', DATABASE_POOL_SIZE: process.env.DATABASE_POOL_SIZE ?? '10' });
  const { gateway, child, identity, catalog, calendar, sql } = system;
  const out: string[] = [];
  try {
    const ws = (await identity.createWorkspace({ name: 'bench', environment: Environment.SANDBOX })).workspace!.workspaceId;
    const key = await identity.issueKey({ workspaceId: ws });
    const tokenRes = await fetch(`${gateway}/v1/token`, { method: 'POST', headers: { authorization: `Bearer ${key.apiKey}` } });
    if (tokenRes.status !== 200) throw new Error(`token exchange answered ${tokenRes.status}: ${await tokenRes.text()}`);
    const token = ((await tokenRes.json()) as { access_token: string }).access_token;
    const listings: string[] = [];
    for (let i = 0; i < LISTINGS; i++) listings.push((await catalog.createListing({ workspaceId: ws })).listing!.listingId);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

    // Sanity: one push through the gateway.
    const probe = await fetch(`${gateway}/v1/blocks/probe`, { method: 'PUT', headers, body: JSON.stringify({ listing_id: listings[0], check_in: day(0), check_out: day(1) }) });
    if (probe.status !== 200) throw new Error(`PUT /v1/blocks answered ${probe.status}: ${await probe.text()}`);

    // 1. PUT throughput: fresh uids, 1–30 nights.
    let n = 0;
    const run = randomBytes(3).toString('hex');
    const warm = await cannon({
      url: gateway,
      connections: CONNECTIONS,
      duration: 5,
      requests: [
        {
          method: 'PUT',
          headers,
          setupRequest: (req) => {
            const i = n++;
            const start = Math.floor(Math.random() * 700);
            return {
              ...req,
              path: `/v1/blocks/w${run}-${i}`,
              body: JSON.stringify({ listing_id: listings[i % LISTINGS], check_in: day(start), check_out: day(start + 1 + Math.floor(Math.random() * 30)), reason: 'reserved' }),
            };
          },
        },
      ],
    });
    out.push(`- warm-up (5 s): ${summary(warm)}`);
    const putRelay = await relayTotals(sql);
    const putCpu = await cpuMeter(sql, child.pid!);
    const put = await cannon({
      url: gateway,
      connections: CONNECTIONS,
      duration: SECONDS,
      requests: [
        {
          method: 'PUT',
          headers,
          setupRequest: (req) => {
            const i = n++;
            const start = Math.floor(Math.random() * 700);
            return {
              ...req,
              path: `/v1/blocks/b${run}-${i}`,
              body: JSON.stringify({ listing_id: listings[i % LISTINGS], check_in: day(start), check_out: day(start + 1 + Math.floor(Math.random() * 30)), reason: 'reserved' }),
            };
          },
        },
      ],
    });
    out.push(`- PUT /v1/blocks (fresh uids, 1–30 nights, ${LISTINGS} listings, ${CONNECTIONS} connections, ${SECONDS} s): ${summary(put)}`);
    const drained = await drainOutbox(sql);
    const putUsed = await putCpu();
    out.push(`  - the outbox relay (same process) finished publishing their events ${drained.toFixed(1)} s after the run; ${relaySummary(putRelay, await relayTotals(sql))}`);
    out.push(
      `  - CPU per request (run + drain): ${(putUsed.node / put.requests.total).toFixed(2)} ms in the system process (gateway, identity, catalog, calendar, relay), ${(putUsed.postgres / put.requests.total).toFixed(2)} ms in PostgreSQL backends`,
    );

    // 1b. The same workload one layer down: CalendarService.PutBlock over gRPC (h2c),
    // without the gateway and identity's per-request Authorize.
    const grpcRelay = await relayTotals(sql);
    const grpcCpu = await cpuMeter(sql, child.pid!);
    const latencies: number[] = [];
    const until = Date.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (Date.now() < until) {
          const i = n++;
          const start = Math.floor(Math.random() * 700);
          const t0 = performance.now();
          await calendar.putBlock({
            workspaceId: ws,
            externalUid: `g${run}-${i}`,
            target: { case: 'listingId', value: listings[i % LISTINGS]! },
            checkIn: day(start),
            checkOut: day(start + 1 + Math.floor(Math.random() * 30)),
          });
          latencies.push(performance.now() - t0);
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]!.toFixed(1);
    out.push(
      `- CalendarService.PutBlock over gRPC, same workload (${CONNECTIONS} concurrent calls, ${SECONDS} s): ${Math.round(latencies.length / SECONDS)} req/s, p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, ${latencies.length} requests`,
    );
    const grpcDrained = await drainOutbox(sql);
    const grpcUsed = await grpcCpu();
    out.push(
      `  - outbox drained ${grpcDrained.toFixed(1)} s after the run; ${relaySummary(grpcRelay, await relayTotals(sql))}; CPU per request (run + drain): ${(grpcUsed.node / latencies.length).toFixed(2)} ms in the system process, ${(grpcUsed.postgres / latencies.length).toFixed(2)} ms in PostgreSQL backends`,
    );

    // 2. Conflict scan of a 730-night push.
    const full = listings[1]!;
    await sql`delete from calendar.claims where listing_id = ${full}`;
    await sql`delete from calendar.blocks where listing_id = ${full}`;
    for (let i = 0; i < 730; i += 2) {
      await calendar.confirmBooking({
        listingId: full,
        checkIn: day(1000 + i),
        checkOut: day(1000 + i + 2),
        guestId: 'bench',
        guestName: 'Bench',
        partySize: 1,
        amountPaid: { value: '1', currency: 'EUR' },
      });
    }
    await sql`analyze calendar.claims`;
    const scanFull = await explainMs(sql, SCAN, [full, day(1000), day(1730), true]);
    const scanFree = await explainMs(sql, SCAN, [listings[2]!, day(0), day(730), true]);
    const t0 = performance.now();
    const refused = await fetch(`${gateway}/v1/blocks/scan730`, { method: 'PUT', headers, body: JSON.stringify({ listing_id: full, check_in: day(1000), check_out: day(1730) }) });
    const body = (await refused.json()) as { conflicts?: string[] };
    const e2e = performance.now() - t0;
    const [{ blocks } = { blocks: 0 }] = await sql<{ blocks: number }[]>`select count(*)::int as blocks from calendar.claims where listing_id = ${listings[2]!}`;
    out.push(
      `- conflict scan of a 730-night push, in the database (EXPLAIN ANALYZE, median of 15): ${scanFull.toFixed(2)} ms with all 730 nights taken by 365 bookings (${body.conflicts?.length ?? 0} dates in the 409, status ${refused.status}, ${e2e.toFixed(1)} ms end to end through the gateway); ${scanFree.toFixed(2)} ms on a listing holding ${blocks} overlapping blocks and nothing of the marketplace`,
    );

    // 3. GET /v1/blocks with 100k blocks in one workspace (seeded with SQL: PUT is measured above).
    const big = (await identity.createWorkspace({ name: 'bench-100k', environment: Environment.SANDBOX })).workspace!.workspaceId;
    const bigKey = await identity.issueKey({ workspaceId: big });
    const bigToken = ((await (await fetch(`${gateway}/v1/token`, { method: 'POST', headers: { authorization: `Bearer ${bigKey.apiKey}` } })).json()) as { access_token: string })
      .access_token;
    const bigListings: string[] = [];
    for (let i = 0; i < 20; i++) bigListings.push((await catalog.createListing({ workspaceId: big })).listing!.listingId);
    await sql.begin(async (tx) => {
      await tx`
        with b as (
          insert into calendar.blocks (workspace_id, external_uid, listing_id, check_in, check_out, reason)
          select ${big}, 'seed-' || lpad(g::text, 6, '0'), (${bigListings}::text[])[1 + g % 20],
                 date '2030-01-01' + (g % 3000), date '2030-01-01' + (g % 3000) + 1 + (g % 30), 'reserved'
          from generate_series(1, ${DEEP_BLOCKS}) g
          returning id, listing_id, check_in, check_out
        )
        insert into calendar.claims (listing_id, holder_kind, holder_id, nights)
        select listing_id, 'block', id::text, daterange(check_in, check_out) from b`;
    });
    await sql`vacuum analyze calendar.blocks`;
    await drainOutbox(sql);
    const bigHeaders = { authorization: `Bearer ${bigToken}` };
    const page1 = await cannon({ url: `${gateway}/v1/blocks?page=1&page_size=50`, headers: bigHeaders, connections: 16, duration: 10 });
    const deep = await cannon({ url: `${gateway}/v1/blocks?page=2000&page_size=50`, headers: bigHeaders, connections: 16, duration: 10 });
    const check = (await (await fetch(`${gateway}/v1/blocks?page=2000&page_size=50`, { headers: bigHeaders })).json()) as { items: unknown[]; has_more: boolean };
    // The statement of services/calendar/blocks.ts listBlocks (no from/to).
    const LIST = `
      with page as (
        select p.id, p.check_in, p.check_out, p.external_uid from calendar.blocks p
        where p.workspace_id = $1 order by p.check_in, p.check_out, p.external_uid limit 51 offset $2)
      select b.id, b.external_uid, b.listing_id, b.check_in::text, b.check_out::text, b.reason,
             b.check_out - b.check_in as nights, b.created_at, b.updated_at
      from page join calendar.blocks b on b.id = page.id
      order by page.check_in, page.check_out, page.external_uid`;
    const page1Db = await explainMs(sql, LIST, [big, 0]);
    const deepDb = await explainMs(sql, LIST, [big, 99_950]);
    out.push(`- GET /v1/blocks page 1 (page_size 50, ${DEEP_BLOCKS} blocks in the workspace, 16 connections, 10 s): ${summary(page1)}; in the database ${page1Db.toFixed(2)} ms`);
    out.push(`- GET /v1/blocks page 2000 (the last full page, ${check.items.length} items, has_more ${check.has_more}): ${summary(deep)}; in the database ${deepDb.toFixed(2)} ms`);

    const [pg] = await sql<{ v: string }[]>`select current_setting('server_version') as v`;
    out.unshift(
      `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; PostgreSQL ${pg?.v}; bus ${process.env.NATS_URL ? 'NATS JetStream' : 'in-process'}; everything (system, PostgreSQL, NATS, load generator) on this one machine; load average at the start ${loadStart.map((l) => l.toFixed(2)).join(' ')}, at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} (the machine is shared).`,
      `Command: DATABASE_URL=${process.env.DATABASE_URL!.replace(/\/\/[^@]*@/, '//…@')} ${process.env.NATS_URL ? 'NATS_URL=… ' : ''}npm run bench:calendar (BENCH_SECONDS=${SECONDS}, BENCH_CONNECTIONS=${CONNECTIONS})`,
    );
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    await system.stop();
    await db.drop();
  }
}

main().catch((err) => {
  process.stderr.write(`bench:calendar: ${err?.stack ?? err}\n`);
  process.exit(1);
});
