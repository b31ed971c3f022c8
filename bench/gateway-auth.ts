/**
 * Benchmark of the authenticated gateway path (docs/performance.md). Not a test:
 *
 *   npm run bench
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench     (the default server)
 *
 * On the PostgreSQL server of DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test)
 * it creates a scratch database `psync_bench_auth_<hex>` (dropped at the end) and runs,
 * side by side in one run, the same cheap authenticated call — `GET /v1/blocks` on an
 * empty sandbox workspace with a valid access token — against
 *
 *   full:  the real system, `node --import tsx main.ts all` (gateway + the
 *          internal services in one process, each service with its own pool of
 *          DATABASE_POOL_SIZE connections): the gateway's frame, Authorize to identity
 *          (token HMAC + one SQL statement) and ListBlocks to the calendar (one SQL
 *          query) through the in-process transport, the presenter, the access log line
 *          (LOG_LEVEL=info to /dev/null, as deployed);
 *   bare:  one node:http handler in one process (bench/support/bare-auth-server.ts) doing the
 *          same token check, the same Authorize statement (services/identity/queries.ts)
 *          and the same ListBlocks query (services/calendar/blocks.ts), nothing else;
 *   split: the same system as five processes (gateway, identity, calendar, catalog,
 *          notifications), every internal call gRPC over h2c — the Kubernetes shape
 *          (BENCH_SPLIT=0 skips it);
 *
 * with wrk (or autocannon) at 1, 16 and 64 connections for BENCH_SECONDS (default 10) each,
 * alternating which side goes first. Reported: req/s, p50, p99, the full/bare ratio,
 * CPU per request (the server process and the database's backends, from /proc) and
 * what the database sessions were doing (pg_stat_activity sampled every 100 ms).
 *
 * To explain the numbers: one internal hop (Authorize, ListBlocks) called sequentially
 * over gRPC and over the Connect protocol, with its CPU on both sides; Authorize's SQL
 * statement alone at 1 and 64 in flight with `synchronous_commit` on and off
 * (BENCH_DIAGNOSTICS=0 skips both); then (BENCH_PROFILE=0 skips it) each side restarted
 * under `node --cpu-prof`, loaded at 64 connections once more, its self time summarised
 * by origin (bench/support/cpu-profile.ts).
 *
 * The Markdown section "Authenticated gateway path" of docs/performance.md is replaced
 * (BENCH_WRITE_DOCS=0 only prints it). Targets: full ≥ 50 % of bare throughput; full
 * p99 < 20 ms at 64 connections.
 *
 * Other knobs: BENCH_PROFILE_DIR (keep the raw .cpuprofile files there), BENCH_ROUNDS (default 1: each cell measured that many times, rounds
 * interleaved, medians reported), BENCH_CONNECTIONS (default 1,16,64), BENCH_LOG_LEVEL
 * (the system's LOG_LEVEL, default info), DATABASE_POOL_SIZE (default 10, both sides),
 * BENCH_DIAGNOSTICS=0 (skip the internal-hop and SQL-statement measurements),
 * BENCH_LOADGEN=wrk|autocannon (default: wrk when installed — `apt-get install wrk` —
 * else autocannon; bench/support/wrk.ts), BENCH_RUNTIME=compiled|tsx (default compiled:
 * the project built by tsc into .tmp/bench-dist and run as the image runs it;
 * bench/support/compiled-build.ts).
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import postgres from 'postgres';
import { CalendarService } from '../gen/psync/calendar/v1/calendar_pb';
import { Environment } from '../gen/psync/common/v1/environment_pb';
import { IdentityService } from '../gen/psync/identity/v1/identity_pb';
import { AuthorizeBatcher } from '../services/identity/authorize-batcher';
import { authorizeBatch } from '../services/identity/queries';
import { createSql, type Sql } from '../services/kit/db';
import { profileIn, type ProfileShare, summariseProfile } from './support/cpu-profile';
import { credentialInterceptor } from '../test/support/credentials';
import { cpuMsOf } from './support/proc-cpu';
import { chooseLoadGenerator, runLoad, type LoadResult } from './support/load-generator';
import { benchRuntime, buildForBench } from './support/compiled-build';
import {
  idleCpu,
  loadCpu,
  serverCpuMs,
  startBare as startBareServer,
  startFull as startFullSystem,
  startSplit as startSplitSystem,
  type Build,
  type Server,
} from './support/gateway-servers';
import { benchName } from './support/results';

const ROOT = resolve(__dirname, '..');
const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';
const SECONDS = Number(process.env.BENCH_SECONDS ?? '10');
/** Each cell is measured this many times (rounds interleaved); the report gives medians and the spread. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? '1'));
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '1,16,64').split(',').map(Number);
const WARMUP_SECONDS = 3;
const PROFILE = process.env.BENCH_PROFILE !== '0';
const DIAGNOSTICS = process.env.BENCH_DIAGNOSTICS !== '0';
const WRITE_DOCS = process.env.BENCH_WRITE_DOCS !== '0';
/** Also measure the split system (each service its own process, as in Kubernetes); BENCH_SPLIT=0 skips it. */
const SPLIT = process.env.BENCH_SPLIT !== '0';
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info';
/** A directory to keep the raw `.cpuprofile` files in (for a profiler UI); unset: deleted. */
const KEEP_PROFILES = process.env.BENCH_PROFILE_DIR;
/** wrk when installed (BENCH_LOADGEN=wrk|autocannon forces one): see bench/support/wrk.ts. */
const LOADGEN = chooseLoadGenerator();
/** Compiled JavaScript as in the image (default), or tsx (BENCH_RUNTIME=tsx): bench/support/compiled-build.ts. */
const RUNTIME = benchRuntime();
let DIST: string | undefined;
const POOL_SIZE = process.env.DATABASE_POOL_SIZE ?? '10';
const TARGET_RATIO = 0.5;
/** The rate limit the statement-alone diagnostic runs with: never reached. */
const STATEMENT_LIMIT = 1_000_000;
const TARGET_P99_MS = 20;
const SECTION = '## Authenticated gateway path';

type Side = 'full' | 'bare' | 'split';

interface Run {
  side: Side;
  connections: number;
  /** Which round (BENCH_ROUNDS) it belongs to. */
  round?: number;
  /** Over the rounds (a summary row): the slowest and fastest req/s. */
  rpsMin?: number;
  rpsMax?: number;
  rps: number;
  p50: number;
  p99: number;
  total: number;
  failures: number;
  /** CPU milliseconds per request: the server process, and the database's backends. */
  nodeCpuMs: number;
  pgCpuMs: number;
  /** Mean number of database sessions in a query, and how often one waited on a lock / on WAL. */
  activeSessions: number;
  lockWaitShare: number;
  walWaitShare: number;
  load: number;
}

// ------------------------------------------------------------------ processes

/** The build the processes run (set in main). */
const build = (): Build => ({ runtime: RUNTIME, dist: DIST });
const startFull = (env: Record<string, string>, nodeArgs: string[] = []) => startFullSystem(build(), env, nodeArgs);
const startSplit = (env: Record<string, string>) => startSplitSystem(build(), env);
const startBare = (env: Record<string, string>, nodeArgs: string[] = []) => startBareServer(build(), env, nodeArgs);

// ------------------------------------------------------------------ measuring

/** GET /v1/blocks with `token` at `connections` for `duration` seconds (load-generator.ts). */
function cannon(url: string, token: string, connections: number, duration: number): Promise<LoadResult> {
  return runLoad(LOADGEN, `${url}/v1/blocks`, { authorization: `Bearer ${token}` }, connections, duration);
}

async function backendPids(sql: Sql): Promise<number[]> {
  return (await sql<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`).map((r) => r.pid);
}

interface Activity {
  samples: number;
  active: number;
  lockWaits: number;
  walWaits: number;
}

/** Samples pg_stat_activity of the scratch database every 100 ms until stopped. */
function sampleActivity(sql: Sql): () => Promise<Activity> {
  const a: Activity = { samples: 0, active: 0, lockWaits: 0, walWaits: 0 };
  let running = true;
  const loop = (async () => {
    while (running) {
      const rows = await sql<{ state: string | null; wait_event_type: string | null; wait_event: string | null }[]>`
        select state, wait_event_type, wait_event from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`;
      a.samples++;
      for (const r of rows) {
        if (r.state !== 'active') continue;
        a.active++;
        if (r.wait_event_type === 'Lock') a.lockWaits++;
        if (r.wait_event_type === 'IO' && (r.wait_event ?? '').startsWith('WAL')) a.walWaits++;
        if (r.wait_event_type === 'LWLock' && (r.wait_event ?? '').startsWith('WAL')) a.walWaits++;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return async () => {
    running = false;
    await loop;
    return a;
  };
}

async function measure(side: Side, server: Server, token: string, connections: number, sql: Sql): Promise<Run> {
  const load = loadavg()[0]!;
  const pids = await backendPids(sql);
  const pg0 = new Map(pids.map((p) => [p, cpuMsOf(p)]));
  const node0 = serverCpuMs(server);
  const stopSampling = sampleActivity(sql);
  const t0 = performance.now();
  const r = await cannon(server.url, token, connections, SECONDS);
  const t1 = performance.now();
  const activity = await stopSampling();
  const node = loadCpu(server, serverCpuMs(server) - node0, t0, t1);
  let pg = 0;
  for (const p of await backendPids(sql)) pg += cpuMsOf(p) - (pg0.get(p) ?? 0);
  const total = Math.max(1, r.requests.total);
  const run: Run = {
    side,
    connections,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    total: r.requests.total,
    failures: r.non2xx + r.errors + r.timeouts,
    nodeCpuMs: node / total,
    pgCpuMs: pg / total,
    activeSessions: activity.samples ? activity.active / activity.samples : 0,
    lockWaitShare: activity.active ? activity.lockWaits / activity.active : 0,
    walWaitShare: activity.active ? activity.walWaits / activity.active : 0,
    load,
  };
  process.stdout.write(
    `${side.padEnd(4)} c=${String(connections).padStart(2)}: ${Math.round(run.rps)} req/s, p50 ${run.p50} ms, p99 ${run.p99} ms, ` +
      `${run.total} requests, ${run.failures} failed; CPU/request node ${run.nodeCpuMs.toFixed(3)} ms, postgres ${run.pgCpuMs.toFixed(3)} ms; ` +
      `active sessions ${run.activeSessions.toFixed(1)} (lock waits ${(run.lockWaitShare * 100).toFixed(0)} %, WAL ${(run.walWaitShare * 100).toFixed(0)} %); load ${load.toFixed(2)}\n`,
  );
  return run;
}

// ------------------------------------------------------------------ diagnostics

interface StatementResult {
  syncCommit: 'on' | 'off';
  /** Through AuthorizeBatcher (what identity does): the requests in flight share statements. */
  batched: boolean;
  concurrency: number;
  rps: number;
  p50: number;
  p99: number;
}

/**
 * Authorize's SQL statement alone (services/identity/queries.ts), for one key from
 * `concurrency` loops over a pool of DATABASE_POOL_SIZE, with the session's
 * `synchronous_commit` on (the default) or off: the database's own ceiling for one key.
 * `batched`: through AuthorizeBatcher, as identity runs it; otherwise one statement per
 * request (a batch of one).
 */
async function statementAlone(
  dbUrl: string,
  a: { keyId: string; workspaceId: string },
  syncCommit: 'on' | 'off',
  concurrency: number,
  batched: boolean,
  seconds = 4,
): Promise<StatementResult> {
  const sql = postgres(dbUrl, {
    max: Number(POOL_SIZE),
    onnotice: () => {},
    connection: { application_name: 'bench-statement', synchronous_commit: syncCommit },
  }) as unknown as Sql;
  const batcher = batched ? new AuthorizeBatcher(sql, STATEMENT_LIMIT) : undefined;
  try {
    await sql`select 1`;
    const latencies: number[] = [];
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() - t0 < seconds * 1000) {
          const s0 = performance.now();
          const item = { keyId: a.keyId, tokenWorkspaceId: a.workspaceId, addressedWorkspaceId: a.workspaceId, count: true };
          await (batcher ? batcher.authorize(item) : authorizeBatch(sql, [item], STATEMENT_LIMIT));
          latencies.push(performance.now() - s0);
        }
      }),
    );
    const elapsed = (performance.now() - t0) / 1000;
    latencies.sort((x, y) => x - y);
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? 0;
    const res = { syncCommit, batched, concurrency, rps: latencies.length / elapsed, p50: at(0.5), p99: at(0.99) };
    process.stdout.write(
      `Authorize statement alone, synchronous_commit=${syncCommit}, ${batched ? 'batched' : 'one per request'}, ${concurrency} in flight: ${Math.round(res.rps)}/s, p50 ${res.p50.toFixed(2)} ms, p99 ${res.p99.toFixed(2)} ms\n`,
    );
    return res;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

interface HopResult {
  protocol: 'gRPC' | 'Connect';
  rpc: 'Authorize' | 'ListBlocks';
  meanMs: number;
  /** CPU per call of the system process (the service side), net of idle. */
  serverCpuMs: number;
  /** CPU per call of this process (the same Connect client the gateway uses). */
  clientCpuMs: number;
}

/** One internal hop, sequentially from this process: its latency and CPU on both sides, gRPC (what the gateway uses) and the Connect protocol. */
async function internalHops(server: Server & { internal: string }, token: string, workspaceId: string, calls = 500): Promise<HopResult[]> {
  const out: HopResult[] = [];
  for (const protocol of ['gRPC', 'Connect'] as const) {
    const sessionManager = new Http2SessionManager(server.internal);
    const transport =
      protocol === 'gRPC'
        ? createGrpcTransport({ baseUrl: server.internal, sessionManager, interceptors: [credentialInterceptor()] })
        : createConnectTransport({ baseUrl: server.internal, httpVersion: '2', sessionManager, interceptors: [credentialInterceptor()] });
    const identity = createClient(IdentityService, transport);
    const calendar = createClient(CalendarService, transport);
    try {
      const rpcs = {
        Authorize: () => identity.authorize({ accessToken: token, countRequest: true }),
        ListBlocks: () => calendar.listBlocks({ workspaceId, page: 1, pageSize: 50 }),
      };
      for (const [rpc, call] of Object.entries(rpcs) as ['Authorize' | 'ListBlocks', () => Promise<unknown>][]) {
        for (let i = 0; i < 50; i++) await call();
        const s0 = serverCpuMs(server);
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        for (let i = 0; i < calls; i++) await call();
        const t1 = performance.now();
        const c = process.cpuUsage(c0);
        const hop: HopResult = {
          protocol,
          rpc,
          meanMs: (t1 - t0) / calls,
          serverCpuMs: loadCpu(server, serverCpuMs(server) - s0, t0, t1) / calls,
          clientCpuMs: (c.user + c.system) / 1000 / calls,
        };
        process.stdout.write(
          `${protocol} ${rpc}: ${hop.meanMs.toFixed(2)} ms per call, service CPU ${hop.serverCpuMs.toFixed(3)} ms, client CPU ${hop.clientCpuMs.toFixed(3)} ms\n`,
        );
        out.push(hop);
      }
    } finally {
      sessionManager.abort();
    }
  }
  return out;
}

/** Restarts a side under `--cpu-prof`, loads it at 64 connections and summarises where its CPU went. */
async function profileSide(
  side: Side,
  start: (nodeArgs: string[]) => Promise<Server>,
  token: string,
  connections: number,
): Promise<{ shares: ProfileShare[]; busyMs: number } | undefined> {
  const dir = mkdtempSync(join(tmpdir(), `psync-bench-prof-${side}-`));
  try {
    const server = await start(['--cpu-prof', `--cpu-prof-dir=${dir}`]);
    let t0: number;
    let t1: number;
    try {
      await cannon(server.url, token, connections, WARMUP_SECONDS);
      t0 = performance.now();
      await cannon(server.url, token, connections, SECONDS);
      t1 = performance.now();
    } finally {
      // The profile is written when the process exits.
      await server.stop();
    }
    const end = server.exitedAt ?? performance.now();
    const file = profileIn(dir);
    if (!file) return undefined;
    if (KEEP_PROFILES) copyFileSync(file, join(KEEP_PROFILES, `gateway-auth-${side}.cpuprofile`));
    return summariseProfile(file, ROOT, { startBeforeEndMs: end - t0, endBeforeEndMs: end - t1 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------ report

interface Diagnostics {
  hops: HopResult[];
  statement: StatementResult[];
}

function cpuModel(): string {
  try {
    return /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** The command as run: the variables that change the benchmark, then `npm run bench` (a password in the URL masked). */
function commandLine(): string {
  const vars = ['DATABASE_URL', 'DATABASE_POOL_SIZE', 'BENCH_SECONDS', 'BENCH_ROUNDS', 'BENCH_CONNECTIONS', 'BENCH_LOG_LEVEL', 'BENCH_PROFILE', 'BENCH_DIAGNOSTICS']
    .filter((k) => process.env[k] !== undefined)
    .map((k) => {
      let v = process.env[k]!;
      if (k === 'DATABASE_URL') {
        const u = new URL(v);
        if (u.password) u.password = '***';
        v = u.toString();
      }
      return `${k}=${v}`;
    });
  const cmd = `\`${[...vars, 'npm run bench'].join(' ')}\``;
  return process.env.DATABASE_URL === undefined ? `${cmd} (DATABASE_URL unset: the default ${DEFAULT_DATABASE_URL})` : cmd;
}

const fmt = (n: number, digits = 0) => n.toFixed(digits);
/** autocannon's latencies are whole milliseconds (0 means under one); wrk's are fractional. */
const ms = (n: number) => (LOADGEN.name === 'autocannon' ? (n < 1 ? '< 1 ms' : `${n} ms`) : `${n < 10 ? n.toFixed(2) : n.toFixed(1)} ms`);
/** req/s: the median, and over several rounds the range. */
const rate = (r: Run) => (ROUNDS > 1 ? `${fmt(r.rps)} (${fmt(r.rpsMin ?? r.rps)}–${fmt(r.rpsMax ?? r.rps)})` : fmt(r.rps));
/** full/bare: the median of the rounds' ratios, and over several rounds their range. */
const spread = (p: { ratio: number; ratioMin: number; ratioMax: number }) => (ROUNDS > 1 ? `${pct(p.ratio)} (${Math.round(p.ratioMin * 100)}–${pct(p.ratioMax)})` : pct(p.ratio));
const pct = (n: number) => `${Math.round(n * 100)} %`;

function median(xs: number[]): number {
  const v = [...xs].sort((a, b) => a - b);
  const m = Math.floor(v.length / 2);
  return v.length % 2 ? v[m]! : (v[m - 1]! + v[m]!) / 2;
}

/** One row from the rounds of a cell: medians, and the spread of req/s. */
function summaryRun(runs: Run[]): Run {
  const med = (f: (r: Run) => number) => median(runs.map(f));
  return {
    side: runs[0]!.side,
    connections: runs[0]!.connections,
    rps: med((r) => r.rps),
    rpsMin: Math.min(...runs.map((r) => r.rps)),
    rpsMax: Math.max(...runs.map((r) => r.rps)),
    p50: med((r) => r.p50),
    p99: med((r) => r.p99),
    total: runs.reduce((n, r) => n + r.total, 0),
    failures: runs.reduce((n, r) => n + r.failures, 0),
    nodeCpuMs: med((r) => r.nodeCpuMs),
    pgCpuMs: med((r) => r.pgCpuMs),
    activeSessions: med((r) => r.activeSessions),
    lockWaitShare: med((r) => r.lockWaitShare),
    walWaitShare: med((r) => r.walWaitShare),
    load: med((r) => r.load),
  };
}

function report(o: {
  runs: Run[];
  machine: string;
  command: string;
  loadBefore: number[];
  loadAfter: number[];
  profiles: Partial<Record<Side, { shares: ProfileShare[]; busyMs: number }>>;
  diagnostics?: Diagnostics;
  date: string;
}): string {
  const pairs = CONNECTIONS.map((c) => {
    const of = (side: Side) => o.runs.filter((r) => r.side === side && r.connections === c);
    const full = of('full');
    const bare = of('bare');
    const split = of('split');
    // The ratio of each round (same round = same conditions), then their median and spread.
    const ratiosOf = (xs: Run[]) => xs.map((f) => f.rps / (bare.find((b) => b.round === f.round)?.rps ?? NaN)).filter((x) => !Number.isNaN(x));
    const ratios = ratiosOf(full);
    const splitRatios = ratiosOf(split);
    return {
      c,
      full: summaryRun(full),
      bare: summaryRun(bare),
      split: split.length ? summaryRun(split) : undefined,
      ratio: median(ratios),
      ratioMin: Math.min(...ratios),
      ratioMax: Math.max(...ratios),
      splitRatio: splitRatios.length ? { ratio: median(splitRatios), ratioMin: Math.min(...splitRatios), ratioMax: Math.max(...splitRatios) } : undefined,
    };
  });
  const ratioMet = pairs.every((p) => p.ratio >= TARGET_RATIO);
  const at64 = pairs.find((p) => p.c === 64);
  const p99Met = at64 ? at64.full.p99 < TARGET_P99_MS : undefined;
  const lines: string[] = [];
  lines.push(SECTION, '');
  lines.push(
    '`GET /v1/blocks` on an empty sandbox workspace with a valid access token, measured by `bench/gateway-auth.ts`.',
    "**full**: the real system, `main.ts all` (all roles in one process, as `npm start` runs it) on PostgreSQL — the gateway's contract frame, `Authorize` to identity (token HMAC + the `identity.authorize_batch` statement, shared by the Authorize calls in flight, that re-checks the key, resolves the workspace and counts the request), query validation, `ListBlocks` to the calendar (one SQL query), the presenter, rate-limit headers, metrics, tracing (no exporter configured) and one access log line (`LOG_LEVEL=" +
      LOG_LEVEL +
      '`, to /dev/null). Gateway and services share the process, so both calls go through the in-process transport (`services/kit/rpc/in-process-transport.ts`: the same interceptors, spans and errors as a network call, no sockets).',
    '**split**: the same code in the Kubernetes shape — `main.ts gateway`, `identity`, `calendar`, `catalog` and `notifications` as five processes, every internal call over gRPC on h2c; CPU is the sum of the five.',
    '**bare**: one node:http handler on postgres.js in one process (`bench/support/bare-auth-server.ts`) doing the same token check (`AccessTokens.verify`), the same `Authorize` statement through the same batcher (`services/identity/authorize-batcher.ts`) and the same `ListBlocks` query (`services/calendar/blocks.ts`), nothing else.',
    `Both sides: two pools of \`DATABASE_POOL_SIZE=${POOL_SIZE}\` connections (identity, calendar); one API key per side; ${RUNTIME === 'compiled' ? 'both run as JavaScript compiled by tsc, as the container image runs them (BENCH_RUNTIME=tsx: through tsx, as `npm start`)' : 'both run through tsx, as `npm start` (the image runs tsc output)'}; load from ${LOADGEN.description}, ${SECONDS} s per cell after a ${WARMUP_SECONDS} s warm-up, the side that goes first alternating per row${ROUNDS > 1 ? `; ${ROUNDS} rounds of every cell, interleaved: the tables give medians (p50 and p99 are medians over the rounds), req/s and full/bare with their range over the rounds (full/bare compares the two sides within the same round)` : ''}.`,
    '',
  );
  lines.push(`- Command: ${o.command}, run ${o.date}`);
  lines.push(`- Machine: ${o.machine}`);
  lines.push(
    `- Load average (1/5/15 min) before: ${o.loadBefore.map((l) => l.toFixed(2)).join(' / ')}, after: ${o.loadAfter.map((l) => l.toFixed(2)).join(' / ')} — a shared machine (other test suites and benchmarks were running on it), so absolute numbers are noisy; full and bare ran interleaved under the same conditions.`,
    '',
  );
  lines.push('| connections | full req/s | full p50 | full p99 | bare req/s | bare p50 | bare p99 | full / bare | load (1 min) |');
  lines.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const pair of pairs) {
    const { c, full, bare } = pair;
    lines.push(
      `| ${c} | ${rate(full)} | ${ms(full.p50)} | ${ms(full.p99)} | ${rate(bare)} | ${ms(bare.p50)} | ${ms(bare.p99)} | ${spread(pair)} | ${full.load.toFixed(1)} / ${bare.load.toFixed(1)} |`,
    );
  }
  if (pairs.some((p) => p.split)) {
    lines.push('', 'The split system (five processes, gRPC over h2c between them), measured in the same rounds:', '');
    lines.push('| connections | split req/s | split p50 | split p99 | split / bare | Node CPU / request (5 processes) | PostgreSQL CPU / request |');
    lines.push('|---:|---:|---:|---:|---:|---:|---:|');
    for (const p of pairs) {
      if (!p.split || !p.splitRatio) continue;
      lines.push(
        `| ${p.c} | ${rate(p.split)} | ${ms(p.split.p50)} | ${ms(p.split.p99)} | ${spread(p.splitRatio)} | ${p.split.nodeCpuMs.toFixed(3)} ms | ${p.split.pgCpuMs.toFixed(3)} ms |`,
      );
    }
  }
  const failures = o.runs.reduce((n, r) => n + r.failures, 0);
  lines.push(
    '',
    failures === 0 ? 'Every request answered 200 (no non-2xx, errors or time-outs).' : `**${failures} requests were not answered 200** (non-2xx, errors or time-outs).`,
    '',
  );
  lines.push('### Targets', '');
  lines.push(`- full ≥ ${pct(TARGET_RATIO)} of bare throughput: **${ratioMet ? 'met' : 'not met'}** (${pairs.map((p) => `${spread(p)} at ${p.c}`).join(', ')}).`);
  if (at64) lines.push(`- full p99 < ${TARGET_P99_MS} ms at 64 connections: **${p99Met ? 'met' : 'not met'}** (${ms(at64.full.p99)}; bare ${ms(at64.bare.p99)}).`);
  lines.push('');
  lines.push('### Where the time goes', '');
  lines.push(
    "Per request, from /proc (the server process net of its idle background, and this database's PostgreSQL backends) and `pg_stat_activity` sampled every 100 ms during each cell.",
    '',
  );
  lines.push('| connections | side | Node CPU / request | PostgreSQL CPU / request | sessions in a query (mean) | of which waiting on a lock | waiting on WAL |');
  lines.push('|---:|---|---:|---:|---:|---:|---:|');
  for (const { c, full, bare } of pairs) {
    for (const r of [full, bare]) {
      lines.push(
        `| ${c} | ${r.side} | ${r.nodeCpuMs.toFixed(3)} ms | ${r.pgCpuMs.toFixed(3)} ms | ${r.activeSessions.toFixed(1)} | ${pct(r.lockWaitShare)} | ${pct(r.walWaitShare)} |`,
      );
    }
  }
  lines.push('');
  const d = o.diagnostics;
  if (d) {
    lines.push('One internal hop, called sequentially from the bench process against the running system (500 calls each):', '');
    lines.push('| protocol | RPC | latency (mean) | service-side CPU / call | client-side CPU / call |');
    lines.push('|---|---|---:|---:|---:|');
    for (const h of d.hops) lines.push(`| ${h.protocol} | ${h.rpc} | ${h.meanMs.toFixed(2)} ms | ${h.serverCpuMs.toFixed(3)} ms | ${h.clientCpuMs.toFixed(3)} ms |`);
    lines.push('');
    lines.push(
      "Authorize's SQL statement alone (`authorizeBatch`), one key, 4 s per cell, pool of " +
        POOL_SIZE +
        '; one statement per request, or batched as identity runs it (`AuthorizeBatcher`):',
      '',
    );
    lines.push('| in flight | `synchronous_commit` | statements | requests/s | p50 | p99 |');
    lines.push('|---:|---|---|---:|---:|---:|');
    for (const r of d.statement)
      lines.push(`| ${r.concurrency} | ${r.syncCommit} | ${r.batched ? 'batched' : 'one per request'} | ${fmt(r.rps)} | ${r.p50.toFixed(2)} ms | ${r.p99.toFixed(2)} ms |`);
    lines.push('');
  }
  for (const side of ['full', 'bare'] as const) {
    const p = o.profiles[side];
    if (!p) continue;
    lines.push(
      `CPU profile of **${side}** at 64 connections (\`node --cpu-prof\`, a separate run; self time by origin, the ${SECONDS} s under load only): ` +
        p.shares
          .slice(0, 10)
          .map((s) => `${s.origin} ${pct(s.share)}`)
          .join(', ') +
        '.',
      '',
    );
  }
  lines.push(...analysis(pairs, d, o.profiles, ratioMet, p99Met));
  return lines.join('\n');
}

/** What the numbers say, with the numbers of this run, and what is left. */
function analysis(
  pairs: { c: number; full: Run; bare: Run; split?: Run; ratio: number }[],
  d: Diagnostics | undefined,
  profiles: Partial<Record<Side, { shares: ProfileShare[] }>>,
  ratioMet: boolean,
  p99Met: boolean | undefined,
): string[] {
  const out: string[] = ['### Why', ''];
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const fullCpu = mean(pairs.map((p) => p.full.nodeCpuMs));
  const bareCpu = mean(pairs.map((p) => p.bare.nodeCpuMs));
  const fullPg = mean(pairs.map((p) => p.full.pgCpuMs));
  const splits = pairs.filter((p) => p.split).map((p) => p.split!);
  const splitCpu = splits.length ? mean(splits.map((r) => r.nodeCpuMs)) : undefined;
  const hop = (protocol: HopResult['protocol'], rpc: HopResult['rpc']) => d?.hops.find((h) => h.protocol === protocol && h.rpc === rpc);
  const hopCost = (protocol: HopResult['protocol']) => {
    const a = hop(protocol, 'Authorize');
    const l = hop(protocol, 'ListBlocks');
    return a && l ? a.serverCpuMs + a.clientCpuMs + l.serverCpuMs + l.clientCpuMs : undefined;
  };
  const grpcHops = hopCost('gRPC');
  const connectHops = hopCost('Connect');
  const stmt = (c: number, mode: 'on' | 'off', batched = false) => d?.statement.find((r) => r.concurrency === c && r.syncCommit === mode && r.batched === batched);
  const at64 = pairs.find((p) => p.c === 64);
  const top = (side: Side) =>
    profiles[side]?.shares
      .slice(0, 5)
      .map((x) => `${x.origin} ${pct(x.share)}`)
      .join(', ');

  out.push(
    `1. **Node CPU per request is the difference.** The full path spends ${fullCpu.toFixed(2)} ms of Node CPU per request against ${bareCpu.toFixed(2)} ms for the bare handler (${(fullCpu / bareCpu).toFixed(1)}×, mean over the rows); PostgreSQL's share is about the same on both sides (${fullPg.toFixed(2)} ms for full). ` +
      'What the full path adds is the product, not transport: Koa routing and the contract frame, query validation, problem-document and rate-limit-header handling, metrics, the spans and the access log line' +
      (top('full') ? ` (profile of full, top origins: ${top('full')})` : '') +
      '.',
  );
  out.push(
    "2. **In one process the internal calls cost almost nothing.** `main.ts all` hosts the gateway and the services together, and the runner records every service registration (`InProcessServices`): a client whose base URL is the process's own internal server calls the implementation directly — client and server interceptors (the CLIENT and SERVER spans, `traceparent`), request headers, deadline, cancellation and error mapping exactly as over the wire (test/kit/in-process-transport.test.ts checks each against the h2c call) — instead of HTTP/2 framing and protobuf on both sides. " +
      (grpcHops !== undefined
        ? `Over h2c the same two calls cost ${grpcHops.toFixed(2)} ms of CPU (client + service side, one at a time, gRPC)${connectHops !== undefined ? `, ${connectHops.toFixed(2)} ms with the Connect protocol` : ''} — ${grpcHops > fullCpu ? 'more than the whole full request now' : `against ${fullCpu.toFixed(2)} ms for the whole full request now`}. `
        : '') +
      (splitCpu !== undefined
        ? `The split system pays that on every request: ${splitCpu.toFixed(2)} ms of Node CPU per request over its five processes (${(splitCpu / fullCpu).toFixed(1)}× the all-in-one process); in Kubernetes that cost buys independent scaling and failure isolation, and gateway replicas scale it out (the rate counter lives in PostgreSQL).`
        : ''),
  );
  const s64on = stmt(64, 'on');
  const s64off = stmt(64, 'off');
  const b64off = stmt(64, 'off', true);
  if (s64on && s64off) {
    out.push(
      `3. **One key's requests share its rate counter row.** Every counted request updates one row per key and window, locked until commit. One statement per request: with \`synchronous_commit = on\` the lock is held through the WAL flush — alone, the statement does ${fmt(s64on.rps)}/s with 64 in flight (p99 ${s64on.p99.toFixed(1)} ms); with it off, ${fmt(s64off.rps)}/s (p99 ${s64off.p99.toFixed(1)} ms). ` +
        'Identity writes the counters through its own pool whose sessions have `synchronous_commit = off` (`Database.asyncCommitSqlFor`; key issue/revoke and every other write stay synchronous): a database crash can forget the last moments\' counts, which errs in the partner\'s favour (docs/decisions.md "Rate-limit counters"). ' +
        (b64off
          ? `And the Authorize calls in flight share one statement (\`AuthorizeBatcher\`, \`identity.authorize_batch\`): the row is locked once per batch, not once per request — ${fmt(b64off.rps)} requests/s with 64 in flight (p99 ${b64off.p99.toFixed(1)} ms), ${(b64off.rps / s64off.rps).toFixed(1)}× one statement per request. `
          : '') +
        'Both sides use both.' +
        (at64
          ? ` At 64 connections ${pct(at64.full.lockWaitShare)} (full) and ${pct(at64.bare.lockWaitShare)} (bare) of the busy sessions were waiting on a lock (46–54 % before batching).`
          : ''),
    );
  }
  if (at64) {
    const ceiling = 1000 / at64.full.nodeCpuMs;
    const floor = (64 / ceiling) * 1000;
    out.push(
      `4. **p99 at 64 connections.** With 64 requests always in flight, the mean latency is 64 ÷ throughput (Little's law), so p99 < ${TARGET_P99_MS} ms needs well over ${fmt((64 / TARGET_P99_MS) * 1000)} req/s. ` +
        `The full process handles requests on one Node thread at ${at64.full.nodeCpuMs.toFixed(2)} ms of CPU each: at most ~${fmt(ceiling)} req/s even with a core to itself, a mean latency of at least ${fmt(floor, 1)} ms at 64 connections — and on this machine it shares two cores with PostgreSQL (${at64.full.pgCpuMs.toFixed(2)} ms per request) and the load generator. ` +
        `The bare handler (${at64.bare.nodeCpuMs.toFixed(2)} ms) ${at64.bare.p99 < TARGET_P99_MS ? 'meets it' : `misses it too (p99 ${ms(at64.bare.p99)})`}. ` +
        'The latency target at this concurrency is a matter of replicas (or cores), not of the request path: gateway replicas share nothing but PostgreSQL.',
    );
  }
  out.push(
    `5. **This machine**: 2 vCPUs shared by the servers, PostgreSQL, the load generator and whatever else runs (see the load average). The ratio and the CPU per request are the robust findings; absolute rates and p99 move with the load.`,
    '',
  );
  if (!ratioMet || p99Met === false) {
    out.push('What is left:', '');
    if (!ratioMet)
      out.push(
        "- **The ratio**: the next cuts are in the gateway frame itself (allocations per request: the garbage collector is the largest single difference from bare), measured with this benchmark's CPU profile.",
      );
    if (p99Met === false) out.push('- **p99 at 64 connections on 2 cores**: not reachable by one Node process at this CPU per request (item 4); more gateway replicas or cores.');
    if (grpcHops !== undefined && connectHops !== undefined && connectHops < grpcHops * 0.9) {
      out.push(
        `- **The split system's hops**: the Connect protocol for internal unary calls costs ${pct(1 - connectHops / grpcHops)} less CPU than gRPC here (the server already speaks it; stock gRPC clients keep working). Not switched: the internal API is specified as gRPC for marketplace services, and the in-process path made it matter only across processes.`,
      );
    }
    out.push('');
  }
  return out;
}

/** Replaces (or appends) this benchmark's section of docs/performance.md, leaving every other section as it is. */
function writeSection(section: string): void {
  const file = join(ROOT, 'docs/performance.md');
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '# Performance\n';
  const lines = current.split('\n');
  const start = lines.findIndex((l) => l.trim() === SECTION);
  let next: string;
  if (start < 0) {
    next = `${current.replace(/\s*$/, '')}\n\n${section.trimEnd()}\n`;
  } else {
    let end = lines.findIndex((l, i) => i > start && /^## /.test(l));
    if (end < 0) end = lines.length;
    const before = lines.slice(0, start).join('\n');
    const after = lines.slice(end).join('\n');
    next = `${before ? `${before}\n` : ''}${section.trimEnd()}\n${after ? `\n${after}` : ''}`;
    if (!next.endsWith('\n')) next += '\n';
  }
  writeFileSync(file, next);
}

// ------------------------------------------------------------------ main

async function main(): Promise<void> {
  benchName('gateway-auth');
  if (RUNTIME === 'compiled') {
    process.stdout.write('compiling the project (tsc) into .tmp/bench-dist, as the image runs it…\n');
    DIST = buildForBench(ROOT);
  }
  const adminUrl = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL;
  const admin = createSql(adminUrl, { max: 1, applicationName: 'bench-admin' });
  let pgVersion: string;
  try {
    pgVersion = (await admin<{ v: string }[]>`select current_setting('server_version') as v`)[0]!.v;
  } catch (err) {
    await admin.end({ timeout: 1 });
    throw new Error(`cannot reach PostgreSQL at DATABASE_URL (${new URL(adminUrl).host}): ${(err as Error).message}`, { cause: err });
  }
  const dbName = `psync_bench_auth_${randomBytes(4).toString('hex')}`;
  await admin.unsafe(`create database ${dbName}`);
  const u = new URL(adminUrl);
  u.pathname = `/${dbName}`;
  const dbUrl = u.toString();
  const signingKey = randomBytes(32).toString('base64');
  const fullEnv: Record<string, string> = {
    DATABASE_URL: dbUrl,
    DATABASE_POOL_SIZE: POOL_SIZE,
    LOG_LEVEL,
    RATE_LIMIT_PER_HOUR: '1000000',
    TOKEN_RATE_LIMIT_PER_HOUR: '1000',
    TOKEN_TTL_SECONDS: '3600',
    TOKEN_SIGNING_KEY: signingKey,
    SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    BUS_PREFIX: `benchauth${randomBytes(3).toString('hex')}`,
    // A free port: the default 9464 may be taken by another system on this machine.
    METRICS_PORT: '0',
  };
  const bareEnv: Record<string, string> = { DATABASE_URL: dbUrl, DATABASE_POOL_SIZE: POOL_SIZE, TOKEN_SIGNING_KEY: signingKey, RATE_LIMIT_PER_HOUR: '1000000' };
  // One connection, opened first: the systems' pools may use up max_connections later.
  const sql = createSql(dbUrl, { max: 1, applicationName: 'bench-observer' });
  await sql`select 1`;
  const servers: Server[] = [];
  let sessions: Http2SessionManager | undefined;
  try {
    const loadBefore = loadavg();
    process.stdout.write(`load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')}; database ${dbName}\n`);
    let full = await startFull(fullEnv);
    servers.push(full);

    sessions = new Http2SessionManager(full.internal);
    const identity = createClient(
      IdentityService,
      createGrpcTransport({ baseUrl: full.internal, sessionManager: sessions, defaultTimeoutMs: 30000, interceptors: [credentialInterceptor()] }),
    );
    const ws = (await identity.createWorkspace({ name: 'bench-auth', environment: Environment.SANDBOX })).workspace!.workspaceId;
    const tokenFor = async () => {
      const key = await identity.issueKey({ workspaceId: ws });
      const res = await fetch(`${full.url}/v1/token`, { method: 'POST', headers: { authorization: `Bearer ${key.apiKey}` } });
      if (res.status !== 200) throw new Error(`POST /v1/token answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { access_token: string }).access_token;
    };
    const tokens: Record<Side, string> = { full: await tokenFor(), bare: await tokenFor(), split: await tokenFor() };
    const statementKey = (await identity.issueKey({ workspaceId: ws })).keyId;
    sessions.abort();
    sessions = undefined;

    let bare = await startBare(bareEnv);
    servers.push(bare);
    const split = SPLIT ? await startSplit(fullEnv) : undefined;
    if (split) servers.push(split);
    const sides: Side[] = split ? ['full', 'bare', 'split'] : ['full', 'bare'];
    // All answer the same thing.
    for (const [side, server] of [
      ['full', full],
      ['bare', bare],
      ['split', split],
    ] as const) {
      if (!server) continue;
      const res = await fetch(`${server.url}/v1/blocks`, { headers: { authorization: `Bearer ${tokens[side]}` } });
      const body = await res.text();
      if (res.status !== 200 || body !== '{"items":[],"has_more":false}') throw new Error(`${side}: GET /v1/blocks answered ${res.status} ${body}`);
    }

    const target = { full, bare, split } as Record<Side, Server>;
    for (const side of sides) await cannon(target[side].url, tokens[side], 16, WARMUP_SECONDS);
    for (const side of sides) {
      target[side].idleCpuPerSecond = await idleCpu(target[side]);
      process.stdout.write(`${side}: ${target[side].idleCpuPerSecond.toFixed(1)} ms of CPU per second when idle (subtracted below)\n`);
    }
    const runs: Run[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, c] of CONNECTIONS.entries()) {
        // Which side goes first rotates per row and round.
        const shift = (i + round) % sides.length;
        const order = [...sides.slice(shift), ...sides.slice(0, shift)];
        for (const side of order) runs.push({ ...(await measure(side, target[side], tokens[side], c, sql)), round });
      }
    }
    const loadAfter = loadavg();

    // The server's connections are limited (max_connections): the bare and split pools go before the diagnostics open more.
    await bare.stop();
    await split?.stop();
    let diagnostics: Diagnostics | undefined;
    if (DIAGNOSTICS) {
      const hops = await internalHops(full, tokens.full, ws);
      const statement: StatementResult[] = [];
      for (const c of [1, 64]) for (const mode of ['on', 'off'] as const) statement.push(await statementAlone(dbUrl, { keyId: statementKey, workspaceId: ws }, mode, c, false));
      for (const mode of ['on', 'off'] as const) statement.push(await statementAlone(dbUrl, { keyId: statementKey, workspaceId: ws }, mode, 64, true));
      diagnostics = { hops, statement };
    }

    const profiles: Partial<Record<Side, { shares: ProfileShare[]; busyMs: number }>> = {};
    if (PROFILE) {
      await full.stop();
      const profConnections = CONNECTIONS.includes(64) ? 64 : CONNECTIONS[CONNECTIONS.length - 1]!;
      profiles.full = await profileSide('full', async (args) => (full = await startFull(fullEnv, args)), tokens.full, profConnections);
      profiles.bare = await profileSide('bare', async (args) => (bare = await startBare(bareEnv, args)), tokens.bare, profConnections);
      servers.push(full, bare);
      for (const side of ['full', 'bare'] as const) {
        const p = profiles[side];
        if (p)
          process.stdout.write(
            `profile ${side}: ${p.shares
              .slice(0, 10)
              .map((s) => `${s.origin} ${pct(s.share)}`)
              .join(', ')}\n`,
          );
      }
    }

    const section = report({
      runs,
      machine: `${availableParallelism()} CPUs (nproc), ${cpuModel()}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Node ${process.version}, PostgreSQL ${pgVersion} (same machine, loopback)`,
      command: commandLine(),
      loadBefore,
      loadAfter,
      profiles,
      diagnostics,
      date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    });
    process.stdout.write(`\n${section}\n`);
    if (WRITE_DOCS) {
      writeSection(section);
      process.stdout.write('written to docs/performance.md\n');
    }
  } finally {
    sessions?.abort();
    await Promise.allSettled(servers.map((s) => s.stop()));
    await sql.end({ timeout: 5 });
    try {
      await admin.unsafe(`drop database if exists ${dbName} with (force)`);
    } finally {
      await admin.end({ timeout: 5 });
    }
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
