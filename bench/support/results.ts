/**
 * What a benchmark reports besides its own Markdown: the peak resident memory of its
 * processes, printed by every benchmark when it ends, and its measurements, written as
 * JSON for `npm run bench:all` (bench/all.ts).
 *
 * Peak RSS: the bench process itself (getrusage's maxrss) and each process it watches
 * (`watchPeakRss`: the systems under test), whose peak is the kernel's VmHWM from
 * /proc/<pid>/status. VmHWM is the process's own high-water mark, so reading it any
 * time before the process exits gives its peak so far; a watched process is read every
 * second and once more by `samplePeakRss` (called just before stopping it), so only
 * growth in its last second before an unannounced exit can be missed.
 *
 * Measurements: `recordMetric` (a metric's `id` is what the tables of
 * docs/performance.md refer to, bench/support/performance-tables.ts: keep ids stable,
 * change labels freely). When the process exits, the result — measurements, peak RSS,
 * load average — is written to BENCH_RESULT_FILE if that is set (bench:all sets it), and
 * the peak RSS line is printed on stderr either way. Every benchmark names itself with
 * `benchName`; the shared starters (bench-system.ts, gateway-servers.ts) watch the
 * processes they start.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';

export interface PeakRss {
  /** What the process is ("system", "baseline", "bench process"). */
  process: string;
  pid: number;
  /** Peak resident set size, MiB. */
  peakMiB: number;
}

/** VmHWM and VmRSS of `pid` in KiB, or undefined once it is gone (or off Linux). */
export function memoryOf(pid: number): { hwmKiB: number; rssKiB: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const hwm = /^VmHWM:\s+(\d+) kB/m.exec(status);
    const rss = /^VmRSS:\s+(\d+) kB/m.exec(status);
    if (!hwm || !rss) return undefined;
    return { hwmKiB: Number(hwm[1]), rssKiB: Number(rss[1]) };
  } catch {
    return undefined;
  }
}

const watched = new Map<number, { label: string; peakKiB: number }>();
let timer: NodeJS.Timeout | undefined;

/** Reads the high-water mark of every watched process that is still running. */
export function samplePeakRss(): void {
  for (const [pid, w] of watched) {
    const m = memoryOf(pid);
    if (m) w.peakKiB = Math.max(w.peakKiB, m.hwmKiB);
  }
}

/** Watches `pid` (a process the benchmark started) under `label` until the bench ends. */
export function watchPeakRss(label: string, pid: number | undefined): void {
  if (pid === undefined) return;
  watched.set(pid, { label, peakKiB: 0 });
  samplePeakRss();
  if (!timer) {
    timer = setInterval(samplePeakRss, 1000);
    timer.unref();
  }
}

/** The bench process and every watched process, as measured so far. */
export function peakRssSoFar(): PeakRss[] {
  samplePeakRss();
  const own = { process: 'bench process', pid: process.pid, peakMiB: process.resourceUsage().maxRSS / 1024 };
  return [own, ...[...watched].map(([pid, w]) => ({ process: w.label, pid, peakMiB: w.peakKiB / 1024 }))];
}

/** "peak RSS: bench process 143 MiB; system (pid 1234) 371 MiB". */
export function formatPeakRss(peaks: PeakRss[]): string {
  return `peak RSS: ${peaks.map((p) => `${p.process}${p.process === 'bench process' ? '' : ` (pid ${p.pid})`} ${Math.round(p.peakMiB)} MiB`).join('; ')}`;
}

export interface Metric {
  /** Stable id, `<bench>.<what>`, e.g. `latency.get.p50_ratio`. */
  id: string;
  /** What was measured, for people. */
  label: string;
  value: number;
  /** `ms`, `MiB`, `%`, `events/s`, `×` … */
  unit: string;
  /** Free text about the conditions (sample size, spread …). */
  note?: string;
}

export interface BenchResult {
  bench: string;
  metrics: Metric[];
  peakRss: PeakRss[];
  /** 1-minute load average when the benchmark started and ended. */
  load: { start: number; end: number };
}

let bench = '';
const metrics: Metric[] = [];
const loadStart = loadavg()[0]!;

/** Names the benchmark (the `bench` of its result). */
export function benchName(name: string): void {
  bench = name;
}

/** Records one measurement (a later one with the same id replaces it). */
export function recordMetric(m: Metric): void {
  const i = metrics.findIndex((x) => x.id === m.id);
  if (i >= 0) metrics[i] = m;
  else metrics.push(m);
}

export function currentResult(): BenchResult {
  return { bench, metrics: [...metrics], peakRss: peakRssSoFar(), load: { start: loadStart, end: loadavg()[0]! } };
}

process.once('exit', () => {
  const result = currentResult();
  process.stderr.write(`${formatPeakRss(result.peakRss)}\n`);
  const file = process.env.BENCH_RESULT_FILE;
  if (file) writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
});
