/**
 * Latency at one connection (docs/performance.md "Latency at one connection"): the
 * authenticated `GET /v1/blocks` and `PUT /v1/blocks/{external_uid}` through the whole
 * system against the single-process baseline, one request at a time.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:latency
 *
 * On a scratch database of DATABASE_URL's server (created and dropped) it starts
 *
 *   full:     `main.ts all` (gateway + services in one process, as `npm start`
 *             and the all-in-one image run it; NATS_URL is passed through when set);
 *   baseline: bench/support/bare-auth-server.ts — node:http + postgres.js, the token
 *             check, the Authorize statement and the calendar statement, nothing else;
 *
 * both as tsc-compiled JavaScript (BENCH_RUNTIME=tsx: through tsx), with two pools of
 * DATABASE_POOL_SIZE connections each. A sandbox workspace with 60 blocks is listed
 * (page 1 of 50, `has_more`), and blocks are pushed into another one over 20 listings
 * with fresh uids (1–30 nights at random over two years; partner blocks may overlap).
 * Load: wrk at one connection (a Lua script builds the PUTs), BENCH_SECONDS (10) per
 * cell after a warm-up, BENCH_ROUNDS (3) rounds with the side that goes first
 * alternating. Per cell: p50, p99, req/s, and the CPU per request of the server
 * process (net of its idle background) and of its PostgreSQL backends — the
 * CPU-time figures are the ones a loaded machine disturbs least.
 *
 * Target: full p50 ≤ 1.5 × the baseline's, for each operation (ratios per round, the
 * median reported). BENCH_PROFILE=1 then restarts the full system under
 * `node --cpu-prof`, loads each operation at one connection once more and prints where
 * its CPU went (by origin, then by function).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { CatalogService } from '../gen/psync/catalog/v1/catalog_pb';
import { Environment } from '../gen/psync/common/v1/environment_pb';
import { IdentityService } from '../gen/psync/identity/v1/identity_pb';
import { createSql, type Sql } from '../services/kit/db';
import { credentialInterceptor } from '../test/support/credentials';
import { createBenchDatabase, fullSystemEnv } from './support/bench-system';
import { benchRuntime, buildForBench } from './support/compiled-build';
import { profileIn, summariseFunctions, summariseInclusive, summariseProfile } from './support/cpu-profile';
import { idleCpu, loadCpu, serverCpuMs, startBare, startFull, type Build, type Server } from './support/gateway-servers';
import { machineLine } from './support/machine';
import { cpuMsOf } from './support/proc-cpu';
import { benchName, recordMetric } from './support/results';
import { runWrk, wrkVersion, type LoadResult, putBlocksScript } from './support/wrk';

const ROOT = resolve(__dirname, '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? '10');
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? '3'));
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? '3');
const PROFILE = process.env.BENCH_PROFILE === '1';
const POOL_SIZE = process.env.DATABASE_POOL_SIZE ?? '10';
const TARGET_RATIO = 1.5;
const LISTINGS = 20;
const LISTED_BLOCKS = 60;

type Side = 'full' | 'baseline';
type Op = 'GET' | 'PUT';

interface Cell {
  side: Side;
  op: Op;
  round: number;
  p50: number;
  p99: number;
  rps: number;
  failures: number;
  /** CPU ms per request: the server process (net of idle) and its PostgreSQL backends. */
  nodeCpuMs: number;
  pgCpuMs: number;
  load: number;
}

/** The wrk Lua script for PUTs: fresh uids `<prefix>-<n>`, round-robin over `listings`, 1–30 nights over two years. */
function putScript(dir: string, prefix: string, listings: string[]): string {
  const file = join(dir, `put-${prefix}.lua`);
  writeFileSync(file, putBlocksScript(listings, prefix, 1893456000, 30));
  return file;
}

/** The PostgreSQL backends of one side: the baseline's pools are named `bench-bare-*`, the system's are not `bench-*`. */
async function backends(sql: Sql, side: Side): Promise<number[]> {
  const rows = await sql<{ pid: number; app: string }[]>`
    select pid, application_name as app from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`;
  return rows.filter((r) => (side === 'baseline' ? r.app.startsWith('bench-bare') : !r.app.startsWith('bench'))).map((r) => r.pid);
}

const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  const m = Math.floor(v.length / 2);
  return v.length === 0 ? NaN : v.length % 2 ? v[m]! : (v[m - 1]! + v[m]!) / 2;
};
const day = (n: number) => new Date(Date.UTC(2031, 0, 1) + n * 86_400_000).toISOString().slice(0, 10);
const msText = (n: number) => `${n < 10 ? n.toFixed(2) : n.toFixed(1)} ms`;

async function main(): Promise<void> {
  benchName('latency');
  const wrk = wrkVersion();
  if (!wrk) throw new Error('wrk is required (apt-get install -y wrk): it drives the PUTs with a Lua script');
  const runtime = benchRuntime();
  const build: Build = { runtime, dist: runtime === 'compiled' ? buildForBench(ROOT) : undefined };
  const db = await createBenchDatabase('psync_bench_latency');
  const scripts = mkdtempSync(join(tmpdir(), 'psync-bench-latency-'));
  const signingKey = randomBytes(32).toString('base64');
  const fullEnv = fullSystemEnv(db.url, 'benchlat', { DATABASE_POOL_SIZE: POOL_SIZE, TOKEN_SIGNING_KEY: signingKey });
  const bareEnv: Record<string, string> = { DATABASE_URL: db.url, DATABASE_POOL_SIZE: POOL_SIZE, TOKEN_SIGNING_KEY: signingKey, RATE_LIMIT_PER_HOUR: '1000000' };
  const observer = createSql(db.url, { max: 1, applicationName: 'bench-observer' });
  const servers: Server[] = [];
  const loadStart = loadavg();
  try {
    await observer`select 1`;
    let full = await startFull(build, fullEnv);
    servers.push(full);
    const sessions = new Http2SessionManager(full.internal);
    const transport = createGrpcTransport({ baseUrl: full.internal, sessionManager: sessions, defaultTimeoutMs: 30000, interceptors: [credentialInterceptor()] });
    const identity = createClient(IdentityService, transport);
    const catalog = createClient(CatalogService, transport);
    const listWs = (await identity.createWorkspace({ name: 'bench-latency-list', environment: Environment.SANDBOX })).workspace!.workspaceId;
    const putWs = (await identity.createWorkspace({ name: 'bench-latency-put', environment: Environment.SANDBOX })).workspace!.workspaceId;
    const listListing = (await catalog.createListing({ workspaceId: listWs })).listing!.listingId;
    const listings: string[] = [];
    for (let i = 0; i < LISTINGS; i++) listings.push((await catalog.createListing({ workspaceId: putWs })).listing!.listingId);
    const tokenFor = async (ws: string) => {
      const key = await identity.issueKey({ workspaceId: ws });
      const res = await fetch(`${full.url}/v1/token`, { method: 'POST', headers: { authorization: `Bearer ${key.apiKey}` } });
      if (res.status !== 200) throw new Error(`POST /v1/token answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { access_token: string }).access_token;
    };
    const tokens: Record<Side, Record<Op, string>> = {
      full: { GET: await tokenFor(listWs), PUT: await tokenFor(putWs) },
      baseline: { GET: await tokenFor(listWs), PUT: await tokenFor(putWs) },
    };
    sessions.abort();
    for (let i = 0; i < LISTED_BLOCKS; i++) {
      const res = await fetch(`${full.url}/v1/blocks/listed-${i}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${tokens.full.GET}`, 'content-type': 'application/json' },
        body: JSON.stringify({ listing_id: listListing, check_in: day(7 * i), check_out: day(7 * i + 1 + (i % 5)) }),
      });
      if (res.status !== 200) throw new Error(`seeding: PUT answered ${res.status}: ${await res.text()}`);
    }

    const baseline = await startBare(build, bareEnv);
    servers.push(baseline);
    const target: Record<Side, Server> = { full, baseline };
    // Both answer the same list, and both create blocks.
    const lists: string[] = [];
    for (const side of ['full', 'baseline'] as const) {
      const res = await fetch(`${target[side].url}/v1/blocks`, { headers: { authorization: `Bearer ${tokens[side].GET}` } });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${side}: GET /v1/blocks answered ${res.status} ${text}`);
      lists.push(text);
      const put = await fetch(`${target[side].url}/v1/blocks/check-${side}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${tokens[side].PUT}`, 'content-type': 'application/json' },
        body: JSON.stringify({ listing_id: listings[0], check_in: '2032-01-01', check_out: '2032-01-03' }),
      });
      const putText = await put.text();
      if (put.status !== 200 || !putText.includes('"result":"created"')) throw new Error(`${side}: PUT /v1/blocks answered ${put.status} ${putText}`);
    }
    if (lists[0] !== lists[1] || !lists[0]!.includes('"has_more":true')) throw new Error(`the two sides list differently:\n${lists[0]}\n${lists[1]}`);

    const script: Record<Side, string> = {
      full: putScript(scripts, `full-${randomBytes(3).toString('hex')}`, listings),
      baseline: putScript(scripts, `base-${randomBytes(3).toString('hex')}`, listings),
    };
    const load = (side: Side, op: Op, seconds: number): Promise<LoadResult> =>
      op === 'GET'
        ? runWrk(`${target[side].url}/v1/blocks`, { authorization: `Bearer ${tokens[side].GET}` }, 1, seconds)
        : runWrk(`${target[side].url}/`, { authorization: `Bearer ${tokens[side].PUT}` }, 1, seconds, script[side]);

    for (const side of ['full', 'baseline'] as const) for (const op of ['GET', 'PUT'] as const) await load(side, op, WARMUP_SECONDS);
    for (const side of ['full', 'baseline'] as const) {
      target[side].idleCpuPerSecond = await idleCpu(target[side]);
      process.stdout.write(`${side}: ${target[side].idleCpuPerSecond.toFixed(1)} ms of CPU per second when idle (subtracted below)\n`);
    }

    const cells: Cell[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, op] of (['GET', 'PUT'] as const).entries()) {
        const order: Side[] = (round + i) % 2 === 0 ? ['full', 'baseline'] : ['baseline', 'full'];
        for (const side of order) {
          const server = target[side];
          const pids = await backends(observer, side);
          const pg0 = new Map(pids.map((p) => [p, cpuMsOf(p)]));
          const node0 = serverCpuMs(server);
          const l = loadavg()[0]!;
          const t0 = performance.now();
          const r = await load(side, op, SECONDS);
          const t1 = performance.now();
          const node = loadCpu(server, serverCpuMs(server) - node0, t0, t1);
          let pg = 0;
          for (const p of await backends(observer, side)) pg += cpuMsOf(p) - (pg0.get(p) ?? 0);
          const n = Math.max(1, r.requests.total);
          const cell: Cell = {
            side,
            op,
            round,
            p50: r.latency.p50,
            p99: r.latency.p99,
            rps: r.requests.average,
            failures: r.non2xx + r.errors + r.timeouts,
            nodeCpuMs: node / n,
            pgCpuMs: pg / n,
            load: l,
          };
          cells.push(cell);
          process.stdout.write(
            `${op} ${side.padEnd(8)} round ${round + 1}: p50 ${msText(cell.p50)}, p99 ${msText(cell.p99)}, ${Math.round(cell.rps)} req/s, ${cell.failures} failed; CPU/request node ${cell.nodeCpuMs.toFixed(3)} ms, postgres ${cell.pgCpuMs.toFixed(3)} ms; load ${l.toFixed(1)}\n`,
          );
        }
      }
    }
    const loadEnd = loadavg();

    const lines: string[] = [];
    lines.push(
      `Command: \`${process.env.DATABASE_URL ? 'DATABASE_URL=… ' : ''}${process.env.NATS_URL ? 'NATS_URL=… ' : ''}npm run bench:latency\` (BENCH_SECONDS=${SECONDS}, BENCH_ROUNDS=${ROUNDS}, ${runtime}); wrk ${wrk}, one connection.`,
    );
    lines.push(`${machineLine()}; load average at the start ${loadStart.map((x) => x.toFixed(2)).join(' ')}, at the end ${loadEnd.map((x) => x.toFixed(2)).join(' ')}.`, '');
    lines.push(
      '| operation | full p50 | baseline p50 | full / baseline p50 (median of rounds) | full p99 | baseline p99 | CPU / request full: process + PostgreSQL | baseline | failed |',
    );
    lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const op of ['GET', 'PUT'] as const) {
      const of = (side: Side) => cells.filter((c) => c.side === side && c.op === op);
      const f = of('full');
      const b = of('baseline');
      const ratios = f.map((c) => c.p50 / (b.find((x) => x.round === c.round)?.p50 ?? NaN)).filter((x) => !Number.isNaN(x));
      const ratio = median(ratios);
      const med = (xs: Cell[], k: keyof Cell) => median(xs.map((c) => c[k] as number));
      const cpuRatio = (med(f, 'nodeCpuMs') + med(f, 'pgCpuMs')) / (med(b, 'nodeCpuMs') + med(b, 'pgCpuMs'));
      lines.push(
        `| ${op} /v1/blocks | ${msText(med(f, 'p50'))} | ${msText(med(b, 'p50'))} | **${ratio.toFixed(2)}×** (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) | ${msText(med(f, 'p99'))} | ${msText(med(b, 'p99'))} | ${med(f, 'nodeCpuMs').toFixed(3)} + ${med(f, 'pgCpuMs').toFixed(3)} ms | ${med(b, 'nodeCpuMs').toFixed(3)} + ${med(b, 'pgCpuMs').toFixed(3)} ms | ${f.reduce((s, c) => s + c.failures, 0) + b.reduce((s, c) => s + c.failures, 0)} |`,
      );
      const key = op.toLowerCase();
      recordMetric({ id: `latency.${key}.p50_full`, label: `${op} /v1/blocks p50, full system, 1 connection`, value: med(f, 'p50'), unit: 'ms' });
      recordMetric({ id: `latency.${key}.p50_baseline`, label: `${op} /v1/blocks p50, baseline, 1 connection`, value: med(b, 'p50'), unit: 'ms' });
      recordMetric({
        id: `latency.${key}.p50_ratio`,
        label: `${op} /v1/blocks p50 full / baseline`,
        value: ratio,
        unit: '×',
        note: `${ROUNDS} rounds of ${SECONDS} s, range ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`,
      });
      recordMetric({
        id: `latency.${key}.cpu_full`,
        label: `${op} /v1/blocks CPU per request, full (process + PostgreSQL)`,
        value: med(f, 'nodeCpuMs') + med(f, 'pgCpuMs'),
        unit: 'ms',
      });
      recordMetric({
        id: `latency.${key}.cpu_baseline`,
        label: `${op} /v1/blocks CPU per request, baseline (process + PostgreSQL)`,
        value: med(b, 'nodeCpuMs') + med(b, 'pgCpuMs'),
        unit: 'ms',
      });
      recordMetric({ id: `latency.${key}.cpu_ratio`, label: `${op} /v1/blocks CPU per request full / baseline`, value: cpuRatio, unit: '×' });
    }
    lines.push('', `Target: full p50 ≤ ${TARGET_RATIO}× the baseline's at one connection.`);

    if (PROFILE) {
      await full.stop();
      await baseline.stop();
      for (const op of ['GET', 'PUT'] as const) {
        const dir = mkdtempSync(join(tmpdir(), 'psync-bench-latency-prof-'));
        try {
          full = await startFull(build, fullEnv, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
          servers.push(full);
          target.full = full;
          await load('full', op, WARMUP_SECONDS);
          const t0 = performance.now();
          const r = await load('full', op, SECONDS);
          const t1 = performance.now();
          await full.stop();
          const end = full.exitedAt ?? performance.now();
          const file = profileIn(dir);
          if (!file) continue;
          const window = { startBeforeEndMs: end - t0, endBeforeEndMs: end - t1 };
          const n = Math.max(1, r.requests.total);
          const origins = summariseProfile(file, ROOT, window);
          const fns = summariseFunctions(file, ROOT, window);
          const inclusive = summariseInclusive(file, ROOT, window);
          lines.push('', `CPU profile of full, ${op} at one connection (${n} requests, ${(origins.busyMs / n).toFixed(3)} ms busy per request, profiler included):`);
          lines.push(
            `- by origin: ${origins.shares
              .slice(0, 10)
              .map((s) => `${s.origin} ${(s.share * 100).toFixed(0)} %`)
              .join(', ')}`,
          );
          lines.push(
            `- by function (self): ${fns.shares
              .slice(0, 15)
              .map((s) => `${s.origin} ${(s.share * 100).toFixed(1)} %`)
              .join('; ')}`,
          );
          lines.push(
            `- by function (inclusive, project code): ${inclusive.shares
              .filter((s) => /^\S+ (gateway|services)\//.test(s.origin))
              .slice(0, 20)
              .map((s) => `${s.origin} ${(s.share * 100).toFixed(1)} %`)
              .join('; ')}`,
          );
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }
    }
    process.stdout.write(`\n${lines.join('\n')}\n`);
  } finally {
    await Promise.allSettled(servers.map((s) => s.stop()));
    await observer.end({ timeout: 5 });
    rmSync(scripts, { recursive: true, force: true });
    await db.drop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:latency: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
