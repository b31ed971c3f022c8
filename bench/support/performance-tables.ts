/**
 * The tables `npm run bench:all` (bench/all.ts) writes into docs/performance.md between
 * the markers below: the run (date, command, machine, load), one row per performance
 * target of the project with its measured value and its ratio to the baseline or the
 * target, and one row per benchmark run (status, time, peak RSS). Pure functions of a
 * run record, so they are unit-tested (performance-tables.test.ts) without timing anything.
 */
import type { BenchResult, Metric } from './results';

export const START_MARKER = '<!-- bench:all:start -->';
export const END_MARKER = '<!-- bench:all:end -->';

/** One benchmark as bench:all ran it. */
export interface BenchRun {
  /** The benchmark's name in bench:all (`latency`, `catalog` …). */
  name: string;
  /** `embedded` (PGlite, in-process bus) or `real` (PostgreSQL + NATS). */
  mode: 'embedded' | 'real';
  status: 'passed' | 'failed' | 'skipped';
  /** Why it was skipped or how it failed. */
  reason?: string;
  seconds: number;
  /** What the benchmark recorded (results.ts); absent when it wrote nothing. */
  result?: BenchResult;
}

/** Everything bench:all writes to bench/results/<date>.json. */
export interface RunRecord {
  /** ISO time the run started. */
  startedAt: string;
  command: string;
  machine: string;
  /** 1/5/15-minute load average before and after the run. */
  loadBefore: number[];
  loadAfter: number[];
  /** True when the run used shortened durations (--quick). */
  quick: boolean;
  /** Where the record is kept, relative to the repository (default bench/results/<date>.json). */
  resultsFile?: string;
  benches: BenchRun[];
}

/** How a target's ratio is formed and when it is met. */
export interface Target {
  /** What the row is called. */
  what: string;
  /** The metric measured (results.ts id). */
  metric: string;
  /** The text of the target, e.g. `≤ 1.5× baseline`. */
  target: string;
  /**
   * The ratio column: `ratio` — the metric is itself a ratio to a baseline, shown as is
   * (`baseline`: the metric id of the baseline's own value, for the baseline column);
   * `of` — value ÷ `bound`.
   */
  ratio: { kind: 'ratio'; baseline?: string } | { kind: 'of'; bound: number };
  /** Met when the ratio is at most (`max`) or at least (`min`) this. */
  met: { max: number } | { min: number };
}

/** The targets of the performance issue, in its order. */
export const TARGETS: Target[] = [
  { what: '1. Outbox relay throughput', metric: 'events.relay_per_s', target: '≥ 5,000 events/s', ratio: { kind: 'of', bound: 5000 }, met: { min: 1 } },
  { what: '1. Commit → WatchEvents lag p99 at 1,000 pushes/s', metric: 'events.lag_p99_ms', target: '< 100 ms', ratio: { kind: 'of', bound: 100 }, met: { max: 1 } },
  { what: '1. Lag drained after the load', metric: 'events.drain_ms', target: '≤ 1 s', ratio: { kind: 'of', bound: 1000 }, met: { max: 1 } },
  {
    what: '2. GET /v1/blocks p50, one connection',
    metric: 'latency.get.p50_ratio',
    target: '≤ 1.5× baseline',
    ratio: { kind: 'ratio', baseline: 'latency.get.p50_baseline' },
    met: { max: 1.5 },
  },
  {
    what: '2. PUT /v1/blocks p50, one connection',
    metric: 'latency.put.p50_ratio',
    target: '≤ 1.5× baseline',
    ratio: { kind: 'ratio', baseline: 'latency.put.p50_baseline' },
    met: { max: 1.5 },
  },
  { what: '3. CPU per booking + delivery at 20 bookings/s', metric: 'booking-cpu.system_ms', target: '≤ 2 ms', ratio: { kind: 'of', bound: 2 }, met: { max: 1 } },
  {
    what: '4. Property upsert at scale (CPU per op)',
    metric: 'scale.property_upsert.ratio',
    target: '≤ 1.2× small database',
    ratio: { kind: 'ratio', baseline: 'scale.property_upsert.small' },
    met: { max: 1.2 },
  },
  {
    what: '4. Listing lookup at scale (CPU per op)',
    metric: 'scale.listing_lookup.ratio',
    target: '≤ 1.2× small database',
    ratio: { kind: 'ratio', baseline: 'scale.listing_lookup.small' },
    met: { max: 1.2 },
  },
  {
    what: '4. PUT /v1/blocks at scale (CPU per op)',
    metric: 'scale.put_block.ratio',
    target: '≤ 1.2× small database',
    ratio: { kind: 'ratio', baseline: 'scale.put_block.small' },
    met: { max: 1.2 },
  },
  {
    what: '4. GET /v1/blocks page at scale (CPU per op)',
    metric: 'scale.get_blocks.ratio',
    target: '≤ 1.2× small database',
    ratio: { kind: 'ratio', baseline: 'scale.get_blocks.small' },
    met: { max: 1.2 },
  },
  { what: '5. RSS growth in the soak (after warm-up)', metric: 'soak.rss_growth_pct', target: '< 5 %', ratio: { kind: 'of', bound: 5 }, met: { max: 1 } },
];

/** Every metric of the run by id; of a benchmark run in both modes, the later run's (real, after embedded) wins. */
function metricsOf(run: RunRecord): Map<string, { metric: Metric; bench: BenchRun }> {
  const out = new Map<string, { metric: Metric; bench: BenchRun }>();
  for (const bench of run.benches) for (const metric of bench.result?.metrics ?? []) out.set(metric.id, { metric, bench });
  return out;
}

/** A number the way the tables print it: 3 significant digits, thousands separated. */
export function formatNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const abs = Math.abs(v);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function valueText(m: Metric): string {
  return m.unit === '×' ? `${formatNumber(m.value)}×` : `${formatNumber(m.value)} ${m.unit}`;
}

/** The targets table. */
export function targetsTable(run: RunRecord): string[] {
  const metrics = metricsOf(run);
  const lines = ['| target | goal | measured | baseline / bound | ratio | met | benchmark |', '|---|---|---:|---:|---:|---|---|'];
  for (const t of TARGETS) {
    const found = metrics.get(t.metric);
    if (!found) {
      const bench = run.benches.find((b) => t.metric.startsWith(`${b.name}.`));
      const why = bench ? (bench.status === 'passed' ? 'no value recorded' : `${bench.status}${bench.reason ? `: ${bench.reason}` : ''}`) : 'not run';
      lines.push(`| ${t.what} | ${t.target} | — | — | — | — (${why}) | ${bench ? `${bench.name} (${bench.mode})` : '—'} |`);
      continue;
    }
    const { metric, bench } = found;
    let ratio: number;
    let reference: string;
    if (t.ratio.kind === 'ratio') {
      ratio = metric.value;
      const base = t.ratio.baseline === undefined ? undefined : metrics.get(t.ratio.baseline)?.metric;
      reference = base ? `${base.label}: ${valueText(base)}` : '—';
    } else {
      ratio = metric.value / t.ratio.bound;
      reference = `${formatNumber(t.ratio.bound)} ${metric.unit}`;
    }
    const met = 'max' in t.met ? ratio <= t.met.max : ratio >= t.met.min;
    const metText = Number.isNaN(ratio) ? '—' : met ? '**yes**' : '**no**';
    lines.push(
      `| ${t.what} | ${t.target} | ${valueText(metric)}${metric.note ? ` (${metric.note})` : ''} | ${reference} | ${formatNumber(ratio)}× | ${metText} | ${bench.name} (${bench.mode}) |`,
    );
  }
  return lines;
}

/** One row per benchmark run: status, time, load, peak RSS of each of its processes. */
export function benchesTable(run: RunRecord): string[] {
  const lines = ['| benchmark | mode | status | time | load (1 min) start → end | peak RSS |', '|---|---|---|---:|---|---|'];
  for (const b of run.benches) {
    const peaks = b.result?.peakRss.map((p) => `${p.process} ${Math.round(p.peakMiB)} MiB`).join(', ') ?? '—';
    const load = b.result ? `${b.result.load.start.toFixed(1)} → ${b.result.load.end.toFixed(1)}` : '—';
    const status = b.status === 'passed' ? 'passed' : `**${b.status}**${b.reason ? `: ${b.reason}` : ''}`;
    lines.push(`| ${b.name} | ${b.mode} | ${status} | ${Math.round(b.seconds)} s | ${load} | ${peaks} |`);
  }
  return lines;
}

/**
 * Every other metric the benchmarks recorded, by benchmark: a target's metric is left out
 * only where the targets table shows it (a benchmark run in both modes records the same
 * ids, and the targets table takes the later run's).
 */
export function metricsTable(run: RunRecord): string[] {
  const metrics = metricsOf(run);
  const inTargets = new Set(TARGETS.map((t) => t.metric));
  const lines = ['| benchmark | measurement | value |', '|---|---|---:|'];
  for (const b of run.benches) {
    for (const m of b.result?.metrics ?? []) {
      if (inTargets.has(m.id) && metrics.get(m.id)?.bench === b) continue;
      lines.push(`| ${b.name} (${b.mode}) | ${m.label} | ${valueText(m)}${m.note ? ` (${m.note})` : ''} |`);
    }
  }
  return lines;
}

/** The Markdown bench:all puts between the markers. */
export function renderTables(run: RunRecord): string {
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' / ');
  return [
    `Generated by \`npm run bench:all\` (bench/all.ts) on ${run.startedAt.slice(0, 16).replace('T', ' ')} UTC; raw results in \`${run.resultsFile ?? `bench/results/${run.startedAt.slice(0, 10)}.json`}\`.`,
    '',
    `- Command: \`${run.command}\`${run.quick ? ' — **quick run** (shortened durations: indicative only)' : ''}`,
    `- Machine: ${run.machine}`,
    `- Load average (1/5/15 min) before: ${load(run.loadBefore)}, after: ${load(run.loadAfter)}${Math.max(run.loadBefore[0] ?? 0, run.loadAfter[0] ?? 0) > 2 ? ' — **the machine was loaded by other work**: latencies and rates are noisy, CPU per operation less so' : ''}`,
    '',
    '### Targets',
    '',
    ...targetsTable(run),
    '',
    '### Benchmarks run',
    '',
    ...benchesTable(run),
    '',
    '### Other measurements',
    '',
    ...metricsTable(run),
  ].join('\n');
}

/**
 * `doc` with the text between the markers replaced by `content` (the markers kept);
 * without markers, a `## Summary of all benchmarks` section holding them is added at the end.
 */
export function replaceBetweenMarkers(doc: string, content: string): string {
  const start = doc.indexOf(START_MARKER);
  const end = doc.indexOf(END_MARKER);
  if (start >= 0 && end > start) return `${doc.slice(0, start + START_MARKER.length)}\n${content}\n${doc.slice(end)}`;
  if (start >= 0 || end >= 0) throw new Error(`docs/performance.md has one of ${START_MARKER} and ${END_MARKER} without the other (or in the wrong order)`);
  return `${doc.replace(/\n*$/, '\n')}\n## Summary of all benchmarks\n\n${START_MARKER}\n${content}\n${END_MARKER}\n`;
}
