/**
 * Tools benchmark (docs/performance.md, "Tools"):
 *
 *   npm run bench:tools
 *
 * How long the operator's and the developer's everyday commands take to start, on the
 * embedded default (nothing else needed):
 *
 *   1. `bin/psync --help`, BENCH_RUNS (10) times, with the CLI bundle up to date (the
 *      first call after a source change bundles it again: measured once, apart);
 *   2. a typical command against a running system: `bin/psync amenities list` and
 *      `bin/psync workspace create`, BENCH_RUNS times each (the system started by
 *      `npm start` in 3 with its DATA_DIR, so the CLI finds the operator token there);
 *   3. `npm start` (the README's command: code generation skipped when no .proto changed,
 *      then main.ts) from spawn to its `listening` line: the first start of a
 *      fresh DATA_DIR (the embedded database is created and migrated) and BENCH_RESTARTS
 *      (3) restarts on the same DATA_DIR.
 *
 * Reported: median and slowest of each, and the 1-minute load average (the machine's
 * other work shows in every figure here: nothing is CPU time alone).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchName, recordMetric, watchPeakRss } from './support/results';
import { machineLine } from './support/machine';

const ROOT = join(__dirname, '..');
const RUNS = Number(process.env.BENCH_RUNS ?? '10');
const RESTARTS = Number(process.env.BENCH_RESTARTS ?? '3');
const PSYNC = join(ROOT, 'bin', 'psync');

benchName('tools');

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const max = (xs: number[]) => Math.max(...xs);

/** Wall-clock milliseconds of one `bin/psync` call; fails the bench when the call fails. */
function psync(args: string[], env: Record<string, string>): number {
  const start = process.hrtime.bigint();
  const r = spawnSync(PSYNC, args, { env: { ...process.env, ...env }, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`psync ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}

function timed(label: string, id: string, args: string[], env: Record<string, string> = {}): number[] {
  const runs = Array.from({ length: RUNS }, () => psync(args, env));
  recordMetric({ id: `tools.${id}.median`, label: `${label}, median`, value: Math.round(median(runs)), unit: 'ms', note: `${RUNS} runs` });
  recordMetric({ id: `tools.${id}.max`, label: `${label}, slowest`, value: Math.round(max(runs)), unit: 'ms', note: `${RUNS} runs` });
  return runs;
}

interface Started {
  ms: number;
  stop(): Promise<void>;
}

/** `npm start` on DATA_DIR and free-ish ports; resolves at its `listening` line. */
function npmStart(dataDir: string, portBase: number): Promise<Started> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(portBase),
      INTERNAL_PORT: String(portBase + 1),
      HEALTH_PORT: String(portBase + 2),
      METRICS_PORT: String(portBase + 3),
    };
    delete env.DATABASE_URL;
    delete env.NATS_URL;
    const child = spawn('npm', ['start', '--silent'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    watchPeakRss('npm start', child.pid);
    let out = '';
    const timer = setTimeout(() => reject(new Error(`npm start: no listening line in 120 s:\n${out}`)), 120_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      if (!/listening/.test(out)) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      resolve({
        ms,
        stop: () =>
          new Promise<void>((done) => {
            child.once('exit', () => done());
            process.kill(-child.pid!, 'SIGTERM');
          }),
      });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => reject(new Error(`npm start exited ${code} before listening:\n${out}`)));
  });
}

async function main(): Promise<void> {
  const loads: number[] = [loadavg()[0]!];
  // 1. --help, after one call that brings the bundle up to date.
  psync(['--help'], {});
  const help = timed('psync --help', 'help', ['--help']);
  utimesSync(join(ROOT, 'bin', 'cli', 'help.ts'), new Date(), new Date());
  const rebuild = psync(['--help'], {});
  recordMetric({ id: 'tools.help_after_change', label: 'psync --help after a source changed (bundles again)', value: Math.round(rebuild), unit: 'ms' });

  // 3 (first start), then 2 against it, then the restarts.
  const dataDir = mkdtempSync(join(tmpdir(), 'psync-bench-tools-'));
  const portBase = 18180;
  let system: Started | undefined;
  try {
    system = await npmStart(dataDir, portBase);
    const first = system.ms;
    recordMetric({ id: 'tools.start.first', label: 'npm start, fresh DATA_DIR, to listening', value: Math.round(system.ms), unit: 'ms' });
    const env = { DATA_DIR: dataDir, PSYNC_INTERNAL_URL: `http://127.0.0.1:${portBase + 1}` };
    const amenities = timed('psync amenities list (running system)', 'amenities', ['amenities', 'list'], env);
    const workspace = timed('psync workspace create (running system)', 'workspace_create', ['workspace', 'create', '--name', 'bench', '--env', 'sandbox'], env);
    loads.push(loadavg()[0]!);
    await system.stop();
    system = undefined;
    const restarts: number[] = [];
    for (let i = 0; i < RESTARTS; i++) {
      system = await npmStart(dataDir, portBase);
      restarts.push(system.ms);
      await system.stop();
      system = undefined;
    }
    loads.push(loadavg()[0]!);
    recordMetric({
      id: 'tools.restart.median',
      label: 'npm start, existing DATA_DIR, to listening, median',
      value: Math.round(median(restarts)),
      unit: 'ms',
      note: `${RESTARTS} restarts`,
    });
    recordMetric({ id: 'tools.restart.max', label: 'npm start, existing DATA_DIR, to listening, slowest', value: Math.round(max(restarts)), unit: 'ms' });

    const row = (what: string, xs: number[]) => `| ${what} | ${Math.round(median(xs))} ms | ${Math.round(max(xs))} ms | ${xs.length} |`;
    console.log(`\n${machineLine()}; 1-minute load average ${loads.map((l) => l.toFixed(1)).join(' → ')}\n`);
    console.log('| command | median | slowest | runs |\n|---|---|---|---|');
    console.log(row('`bin/psync --help`', help));
    console.log(row('`bin/psync amenities list` (running system)', amenities));
    console.log(row('`bin/psync workspace create` (running system)', workspace));
    console.log(row('`npm start` restart, to `listening`', restarts));
    console.log(row('`bin/psync --help` after a source changed (bundles again)', [rebuild]));
    console.log(row('`npm start` first start (fresh DATA_DIR), to `listening`', [first]));
  } finally {
    await system?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
