/**
 * A benchmark's machine-readable result, for `npm run bench:all` (bench/all.ts): the
 * measurements a benchmark records with `recordMetric`, plus the peak RSS of its
 * processes (peak-rss.ts), written as JSON to BENCH_RESULT_FILE when the process exits.
 * Without BENCH_RESULT_FILE nothing is written (a benchmark run by hand prints its own
 * report as before).
 *
 * A metric's `id` is what the tables of docs/performance.md refer to
 * (bench/support/performance-tables.ts): keep ids stable, change labels freely.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { peakRssSoFar, type PeakRss } from './peak-rss';

export interface Metric {
  /** Stable id, `<bench>.<what>`, e.g. `latency.get.p50_ratio`. */
  id: string;
  /** What was measured, for people. */
  label: string;
  value: number;
  /** `ms`, `MiB`, `%`, `events/s`, `×` … */
  unit: string;
  /** Free text about the conditions (load, sample size …). */
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
  const file = process.env.BENCH_RESULT_FILE;
  if (file) writeFileSync(file, `${JSON.stringify(currentResult(), null, 2)}\n`);
});
