/**
 * Every benchmark, one after another, and the summary tables of docs/performance.md:
 *
 *   npm run bench:all                              # everything, full durations (about 40 min)
 *   npm run bench:all -- --quick                   # shortened durations (about 20 min): indicative only
 *   npm run bench:all -- --only latency,booking-cpu --quick
 *   npm run bench:all -- --skip photos,blocks --no-docs
 *   npm run bench:all -- --list                    # the benchmarks and what they need
 *   npm run bench:all -- --render bench/results/2026-11-24.json   # only regenerate the tables
 *
 * Benchmarks that need a real PostgreSQL and NATS use DATABASE_URL and NATS_URL (each
 * creates and drops its own scratch database on that server); without them the local
 * servers (postgres://postgres@127.0.0.1:5432/postgres, nats://127.0.0.1:4222) are used
 * when they answer, and otherwise those benchmarks are reported as skipped. Benchmarks
 * that run on the embedded default (PGlite, in-process bus) run so, without either
 * variable; some run both ways.
 *
 * Each benchmark runs as its own process (`tsx bench/<file>.ts`) with BENCH_RESULT_FILE
 * set: what it measured (bench/support/results.ts) and the peak RSS of its processes
 * (bench/support/results.ts) come back as JSON. Its output goes to
 * bench/results/<date>/<name>-<mode>.log. The run is written to
 * bench/results/<date>.json (a later run that day: <date>-<hhmmss>.json), and the tables between `<!-- bench:all:start -->` and
 * `<!-- bench:all:end -->` in docs/performance.md are regenerated from it
 * (bench/support/performance-tables.ts; --no-docs leaves the document alone). Each
 * benchmark's own detailed report stays in its log; the hand-written sections of
 * docs/performance.md are not touched.
 *
 * Options: --quick, --only a,b, --skip a,b, --no-docs, --list, --timeout-minutes N
 * (per benchmark, default 30; 60 for the soak), --render <results file> (no benchmark
 * runs: the tables are regenerated from a recorded run).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { connect } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { machineLine } from './support/machine';
import { renderTables, replaceBetweenMarkers, type BenchRun, type RunRecord } from './support/performance-tables';
import type { BenchResult } from './support/results';

const ROOT = resolve(__dirname, '..');
const LOCAL_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const LOCAL_NATS_URL = 'nats://127.0.0.1:4222';

type Mode = 'embedded' | 'real';

interface BenchSpec {
  name: string;
  /** bench/<file>. */
  file: string;
  modes: Mode[];
  /** Environment for a --quick run (shorter durations, smaller data). */
  quick: Record<string, string>;
  /** Environment always set (e.g. not to rewrite a section of the document). */
  always?: Record<string, string>;
  /** Needs NATS too in the real mode (else PostgreSQL only). */
  nats?: boolean;
  timeoutMinutes?: number;
  /** Needs wrk (apt-get install -y wrk). */
  wrk?: boolean;
}

/** Every benchmark of the repository, in the order they run. */
const BENCHES: BenchSpec[] = [
  { name: 'validation', file: 'validation.ts', modes: ['embedded'], quick: { BENCH_ROUNDS: '3', BENCH_ITERATIONS: '5000' } },
  { name: 'egress', file: 'egress.ts', modes: ['embedded'], quick: { BENCH_DELIVERIES: '3000' } },
  { name: 'latency', file: 'latency.ts', modes: ['real'], wrk: true, quick: { BENCH_SECONDS: '4', BENCH_ROUNDS: '2', BENCH_WARMUP_SECONDS: '2' } },
  {
    name: 'booking-cpu',
    file: 'booking-cpu.ts',
    modes: ['real'],
    nats: true,
    quick: { BENCH_SECONDS: '20', BENCH_IDLE_SECONDS: '5', BENCH_WARMUP_SECONDS: '3', BENCH_WARMUP_BOOKINGS: '1500' },
  },
  { name: 'events', file: 'event-pipeline.ts', modes: ['embedded', 'real'], nats: true, quick: { BENCH_EVENTS: '10000', BENCH_SECONDS: '15' } },
  { name: 'scale', file: 'scale.ts', modes: ['real'], wrk: true, timeoutMinutes: 45, quick: { BENCH_SECONDS: '3', BENCH_ROUNDS: '2', BENCH_SCALE_WORKSPACES: '200' } },
  { name: 'soak', file: 'soak.ts', modes: ['real'], nats: true, timeoutMinutes: 60, quick: { BENCH_DURATION: '90s', BENCH_WARMUP: '20s' } },
  {
    name: 'gateway-auth',
    file: 'gateway-auth.ts',
    modes: ['real'],
    always: { BENCH_WRITE_DOCS: '0' },
    quick: { BENCH_SECONDS: '4', BENCH_SPLIT: '0', BENCH_PROFILE: '0', BENCH_DIAGNOSTICS: '0' },
  },
  { name: 'calendar', file: 'calendar.ts', modes: ['real'], nats: true, quick: { BENCH_SECONDS: '5' } },
  { name: 'calendar-stream', file: 'calendar-stream.ts', modes: ['real'], nats: true, quick: { BENCH_SECONDS: '5', FOREIGN_HOLD_MS: '2000' } },
  { name: 'blocks', file: 'blocks-history.ts', modes: ['real'], nats: true, timeoutMinutes: 40, quick: { BENCH_SECONDS: '3' } },
  { name: 'domain-sql', file: 'domain-sql.ts', modes: ['real'], quick: { BENCH_SECONDS: '3', BENCH_ROUNDS: '1' } },
  { name: 'catalog', file: 'catalog.ts', modes: ['embedded', 'real'], nats: true, quick: { BENCH_PROPERTIES: '8', BENCH_PHOTOS: '2', BENCH_SECONDS: '4' } },
  { name: 'photos', file: 'photo-memory.ts', modes: ['embedded'], quick: { BENCH_PROPERTIES: '6', BENCH_BOMBS: '4', BENCH_HEAVY: '1', BENCH_NORMAL: '6' } },
  { name: 'deliveries-isolation', file: 'deliveries-isolation.ts', modes: ['real'], nats: true, quick: { BENCH_SECONDS: '15', BENCH_DRAIN_SECONDS: '20' } },
  { name: 'photo-fairness', file: 'photo-fairness.ts', modes: ['real'], nats: true, quick: { BENCH_ROUNDS: '3' } },
  { name: 'tools', file: 'tools.ts', modes: ['embedded'], quick: { BENCH_RUNS: '3', BENCH_RESTARTS: '1' } },
  { name: 'calendar-writes', file: 'calendar-writes.ts', modes: ['real'], nats: true, quick: { BENCH_SECONDS: '5' } },
  { name: 'console', file: 'console.ts', modes: ['embedded'], quick: { BENCH_LOADS: '5' } },
];

function listBenches(): string {
  return BENCHES.map(
    (b) =>
      `${b.name.padEnd(22)} bench/${b.file.padEnd(26)} ${b.modes.map((m) => (m === 'real' ? (b.nats ? 'PostgreSQL+NATS' : 'PostgreSQL') : 'embedded')).join(', ')}${b.wrk ? ', wrk' : ''}`,
  ).join('\n');
}

/** Whether something listens at host:port of `url` (1 s). */
function reachable(url: string): Promise<boolean> {
  const u = new URL(url);
  const port = Number(u.port || (u.protocol.startsWith('postgres') ? 5432 : 4222));
  return new Promise((res) => {
    const s = connect({ host: u.hostname, port, timeout: 1000 });
    s.once('connect', () => {
      s.destroy();
      res(true);
    });
    s.once('error', () => res(false));
    s.once('timeout', () => {
      s.destroy();
      res(false);
    });
  });
}

function hasWrk(): boolean {
  const paths = (process.env.PATH ?? '').split(':');
  return paths.some((p) => existsSync(join(p, 'wrk')));
}

/** A password in a URL masked, for the record. */
function masked(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

async function runOne(spec: BenchSpec, mode: Mode, env: Record<string, string | undefined>, logFile: string, timeoutMinutes: number): Promise<Omit<BenchRun, 'name' | 'mode'>> {
  const resultFile = join(tmpdir(), `psync-bench-all-${process.pid}-${spec.name}-${mode}.json`);
  rmSync(resultFile, { force: true });
  const started = performance.now();
  const log = createWriteStream(logFile);
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', spec.file)], {
    cwd: ROOT,
    env: { ...env, BENCH_RESULT_FILE: resultFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 30_000).unref();
  }, timeoutMinutes * 60_000);
  const code = await new Promise<number | null>((res) => child.once('exit', (c) => res(c)));
  clearTimeout(timer);
  await new Promise<void>((res) => log.end(res));
  const seconds = (performance.now() - started) / 1000;
  const result = existsSync(resultFile) ? (JSON.parse(readFileSync(resultFile, 'utf8')) as BenchResult) : undefined;
  rmSync(resultFile, { force: true });
  if (timedOut) return { status: 'failed', reason: `timed out after ${timeoutMinutes} min`, seconds, result };
  if (code !== 0) {
    const tail = readFileSync(logFile, 'utf8').trim().split('\n').slice(-1)[0] ?? '';
    return { status: 'failed', reason: `exit ${code}: ${tail.slice(0, 160).replace(/\|/g, '/')}`, seconds, result };
  }
  return { status: 'passed', seconds, result };
}

/** Prints the tables of `record` and, when `toDocs`, puts them between the markers of docs/performance.md. */
function writeTables(record: RunRecord, toDocs: boolean): void {
  const tables = renderTables(record);
  if (toDocs) {
    const doc = join(ROOT, 'docs', 'performance.md');
    writeFileSync(doc, replaceBetweenMarkers(readFileSync(doc, 'utf8'), tables));
  }
  process.stdout.write(`\n${tables}\n\n${toDocs ? 'docs/performance.md: tables regenerated\n' : ''}`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      skip: { type: 'string' },
      'no-docs': { type: 'boolean', default: false },
      list: { type: 'boolean', default: false },
      'timeout-minutes': { type: 'string' },
      render: { type: 'string' },
    },
  });
  if (values.render) {
    const record = JSON.parse(readFileSync(resolve(values.render), 'utf8')) as RunRecord;
    writeTables(record, !values['no-docs']);
    return;
  }
  if (values.list) {
    process.stdout.write(`${listBenches()}\n`);
    return;
  }
  const names = new Set(BENCHES.map((b) => b.name));
  const only = values.only?.split(',').filter(Boolean);
  const skip = values.skip?.split(',').filter(Boolean) ?? [];
  const unknown = [...(only ?? []), ...skip].filter((n) => !names.has(n));
  if (unknown.length > 0) throw new Error(`unknown benchmark(s): ${unknown.join(', ')} (npm run bench:all -- --list)`);
  const chosen = BENCHES.filter((b) => (!only || only.includes(b.name)) && !skip.includes(b.name));

  const databaseUrl = process.env.DATABASE_URL ?? ((await reachable(LOCAL_DATABASE_URL)) ? LOCAL_DATABASE_URL : undefined);
  const natsUrl = process.env.NATS_URL ?? ((await reachable(LOCAL_NATS_URL)) ? LOCAL_NATS_URL : undefined);
  const wrk = hasWrk();
  const startedAt = new Date().toISOString();
  const date = startedAt.slice(0, 10);
  const resultsDir = join(ROOT, 'bench', 'results');
  const logDir = join(resultsDir, date);
  mkdirSync(logDir, { recursive: true });
  const loadBefore = loadavg();
  const argv = process.argv.slice(2);
  const command = [
    process.env.DATABASE_URL ? `DATABASE_URL=${masked(process.env.DATABASE_URL)}` : '',
    process.env.NATS_URL ? `NATS_URL=${process.env.NATS_URL}` : '',
    `npm run bench:all${argv.length ? ` -- ${argv.join(' ')}` : ''}`,
  ]
    .filter(Boolean)
    .join(' ');
  process.stdout.write(`bench:all: ${chosen.length} benchmark(s); PostgreSQL ${databaseUrl ? masked(databaseUrl) : 'none'}, NATS ${natsUrl ?? 'none'}; logs in ${logDir}\n`);

  const benches: BenchRun[] = [];
  for (const spec of chosen) {
    for (const mode of spec.modes) {
      const base = { name: spec.name, mode };
      const missing =
        mode === 'real' && !databaseUrl
          ? 'no PostgreSQL (DATABASE_URL)'
          : mode === 'real' && spec.nats && !natsUrl
            ? 'no NATS (NATS_URL)'
            : spec.wrk && !wrk
              ? 'wrk not installed (apt-get install -y wrk)'
              : undefined;
      if (missing) {
        benches.push({ ...base, status: 'skipped', reason: missing, seconds: 0 });
        process.stdout.write(`- ${spec.name} (${mode}): skipped, ${missing}\n`);
        continue;
      }
      // Real mode: the servers; embedded: neither variable, so the benchmark uses PGlite and the in-process bus.
      const env: Record<string, string | undefined> = { ...process.env, ...(spec.always ?? {}), ...(values.quick ? spec.quick : {}) };
      if (mode === 'real') {
        env.DATABASE_URL = databaseUrl;
        if (spec.nats) env.NATS_URL = natsUrl;
        else delete env.NATS_URL;
      } else {
        delete env.DATABASE_URL;
        delete env.NATS_URL;
      }
      const timeout = Number(values['timeout-minutes'] ?? spec.timeoutMinutes ?? 30);
      process.stdout.write(`- ${spec.name} (${mode}) … `);
      const run = { ...base, ...(await runOne(spec, mode, env, join(logDir, `${spec.name}-${mode}.log`), timeout)) };
      benches.push(run);
      process.stdout.write(`${run.status} in ${Math.round(run.seconds)} s${run.reason ? ` (${run.reason})` : ''}\n`);
    }
  }

  // A second run on the same day does not overwrite the first: <date>-<hhmmss>.json.
  const first = join(resultsDir, `${date}.json`);
  const file = existsSync(first) ? join(resultsDir, `${date}-${startedAt.slice(11, 19).replace(/:/g, '')}.json`) : first;
  const record: RunRecord = {
    startedAt,
    command,
    machine: machineLine().replace(/^Machine: /, ''),
    loadBefore,
    loadAfter: loadavg(),
    quick: values.quick,
    benches,
    resultsFile: relative(ROOT, file),
  };
  writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
  writeTables(record, !values['no-docs']);
  process.stdout.write(`written: ${file}\n`);
  if (benches.some((b) => b.status === 'failed')) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:all: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
