import { benchesTable, END_MARKER, formatNumber, metricsTable, renderTables, replaceBetweenMarkers, START_MARKER, targetsTable, type RunRecord } from './performance-tables';

const peak = (process: string, peakMiB: number) => ({ process, pid: 1, peakMiB });

function record(): RunRecord {
  return {
    startedAt: '2031-03-04T05:06:07.000Z',
    command: 'npm run bench:all -- --quick',
    machine: '2 × Test CPU, 8.0 GiB RAM, Node v20.0.0',
    loadBefore: [0.5, 0.4, 0.3],
    loadAfter: [0.7, 0.5, 0.3],
    quick: true,
    benches: [
      {
        name: 'latency',
        mode: 'real',
        status: 'passed',
        seconds: 61.4,
        result: {
          bench: 'latency',
          load: { start: 0.5, end: 0.6 },
          peakRss: [peak('bench process', 150.2), peak('system', 248.7)],
          metrics: [
            { id: 'latency.get.p50_ratio', label: 'GET p50 full / baseline', value: 1.38, unit: '×', note: '3 rounds' },
            { id: 'latency.get.p50_baseline', label: 'GET p50 baseline', value: 0.77, unit: 'ms' },
            { id: 'latency.put.p50_ratio', label: 'PUT p50 full / baseline', value: 1.62, unit: '×' },
            { id: 'latency.get.cpu_full', label: 'GET CPU per request, full', value: 0.65, unit: 'ms' },
          ],
        },
      },
      {
        name: 'booking-cpu',
        mode: 'real',
        status: 'passed',
        seconds: 90,
        result: { bench: 'booking-cpu', load: { start: 1, end: 1 }, peakRss: [], metrics: [{ id: 'booking-cpu.system_ms', label: 'CPU per booking', value: 7.4, unit: 'ms' }] },
      },
      {
        name: 'events',
        mode: 'embedded',
        status: 'passed',
        seconds: 30,
        result: { bench: 'events', load: { start: 1, end: 1 }, peakRss: [], metrics: [{ id: 'events.relay_per_s', label: 'relay', value: 6200, unit: 'events/s' }] },
      },
      { name: 'soak', mode: 'real', status: 'skipped', reason: 'no NATS (NATS_URL)', seconds: 0 },
      { name: 'scale', mode: 'real', status: 'failed', reason: 'exit 1: boom', seconds: 12 },
    ],
  };
}

const rowOf = (lines: string[], start: string) => lines.find((l) => l.startsWith(`| ${start}`)) ?? '';

describe('bench:all tables', () => {
  it('gives each target its measured value, its ratio and whether it is met', () => {
    const lines = targetsTable(record());
    expect(rowOf(lines, '2. GET')).toBe(
      '| 2. GET /v1/blocks p50, one connection | ≤ 1.5× baseline | 1.38× (3 rounds) | GET p50 baseline: 0.770 ms | 1.38× | **yes** | latency (real) |',
    );
    expect(rowOf(lines, '2. PUT')).toContain('| 1.62× | **no** |');
    // A value against a bound: 7.4 ms of ≤ 2 ms is 3.7× the bound, not met.
    expect(rowOf(lines, '3. CPU')).toBe('| 3. CPU per booking + delivery at 20 bookings/s | ≤ 2 ms | 7.40 ms | 2.00 ms | 3.70× | **no** | booking-cpu (real) |');
    // A lower bound: 6,200 of ≥ 5,000 events/s is met.
    expect(rowOf(lines, '1. Outbox relay')).toBe('| 1. Outbox relay throughput | ≥ 5,000 events/s | 6,200 events/s | 5,000 events/s | 1.24× | **yes** | events (embedded) |');
  });

  it('says why a target has no value', () => {
    const lines = targetsTable(record());
    expect(rowOf(lines, '5. RSS')).toContain('— (skipped: no NATS (NATS_URL))');
    expect(rowOf(lines, '4. Property')).toContain('— (failed: exit 1: boom)');
    expect(rowOf(lines, '1. Commit')).toContain('— (no value recorded)');
  });

  it('lists every benchmark with its status, time and peak RSS', () => {
    const lines = benchesTable(record());
    expect(lines).toHaveLength(2 + 5);
    expect(rowOf(lines, 'latency')).toBe('| latency | real | passed | 61 s | 0.5 → 0.6 | bench process 150 MiB, system 249 MiB |');
    expect(rowOf(lines, 'soak')).toBe('| soak | real | **skipped**: no NATS (NATS_URL) | 0 s | — | — |');
  });

  it('puts the measurements that are not targets in their own table', () => {
    const lines = metricsTable(record());
    expect(lines).toContain('| latency (real) | GET CPU per request, full | 0.650 ms |');
    expect(lines.some((l) => l.includes('GET p50 full / baseline'))).toBe(false);
  });

  it('shows the event pipeline targets and, of a benchmark run in both modes, the later run in the targets', () => {
    const run = record();
    const events = (mode: 'embedded' | 'real', relay: number) => ({
      name: 'events',
      mode,
      status: 'passed' as const,
      seconds: 60,
      result: {
        bench: 'events',
        load: { start: 1, end: 1 },
        peakRss: [],
        metrics: [
          { id: 'events.relay_per_s', label: `relay, ${mode}`, value: relay, unit: 'events/s' },
          ...(mode === 'real'
            ? [
                { id: 'events.lag_p99_ms', label: 'lag p99', value: 240, unit: 'ms', note: '15 s' },
                { id: 'events.drain_ms', label: 'drain', value: 53, unit: 'ms' },
                { id: 'events.push_rate', label: 'pushes answered per second', value: 389, unit: 'pushes/s' },
              ]
            : []),
        ],
      },
    });
    run.benches = [events('embedded', 6200), events('real', 4100)];
    const targets = targetsTable(run);
    expect(rowOf(targets, '1. Outbox relay')).toBe('| 1. Outbox relay throughput | ≥ 5,000 events/s | 4,100 events/s | 5,000 events/s | 0.820× | **no** | events (real) |');
    expect(rowOf(targets, '1. Commit')).toBe('| 1. Commit → WatchEvents lag p99 at 1,000 pushes/s | < 100 ms | 240 ms (15 s) | 100 ms | 2.40× | **no** | events (real) |');
    expect(rowOf(targets, '1. Lag drained')).toBe('| 1. Lag drained after the load | ≤ 1 s | 53.0 ms | 1,000 ms | 0.053× | **yes** | events (real) |');
    const others = metricsTable(run);
    expect(others).toContain('| events (embedded) | relay, embedded | 6,200 events/s |');
    expect(others).toContain('| events (real) | pushes answered per second | 389 pushes/s |');
    expect(others.some((l) => l.includes('relay, real') || l.includes('lag p99'))).toBe(false);
  });

  it('heads the tables with the run: command, machine, load, quick', () => {
    const text = renderTables(record());
    expect(text).toContain('on 2031-03-04 05:06 UTC; raw results in `bench/results/2031-03-04.json`');
    expect(text).toContain('- Command: `npm run bench:all -- --quick` — **quick run**');
    expect(text).toContain('- Machine: 2 × Test CPU, 8.0 GiB RAM, Node v20.0.0');
    expect(text).toContain('before: 0.50 / 0.40 / 0.30, after: 0.70 / 0.50 / 0.30\n');
    expect(renderTables({ ...record(), resultsFile: 'bench/results/2031-03-04-091500.json' })).toContain('raw results in `bench/results/2031-03-04-091500.json`');
    const loaded = renderTables({ ...record(), loadBefore: [11, 9, 8] });
    expect(loaded).toContain('**the machine was loaded by other work**');
  });

  it('replaces only what is between the markers', () => {
    const doc = `# Performance\n\nkept before\n\n${START_MARKER}\nold tables\n${END_MARKER}\n\nkept after\n`;
    const out = replaceBetweenMarkers(doc, 'new tables');
    expect(out).toBe(`# Performance\n\nkept before\n\n${START_MARKER}\nnew tables\n${END_MARKER}\n\nkept after\n`);
    expect(replaceBetweenMarkers(out, 'newer')).toBe(`# Performance\n\nkept before\n\n${START_MARKER}\nnewer\n${END_MARKER}\n\nkept after\n`);
  });

  it('adds a section with the markers when the document has none, and refuses half a pair', () => {
    expect(replaceBetweenMarkers('# Performance\n\ntext\n', 'tables')).toBe(`# Performance\n\ntext\n\n## Summary of all benchmarks\n\n${START_MARKER}\ntables\n${END_MARKER}\n`);
    expect(() => replaceBetweenMarkers(`x\n${END_MARKER}\n${START_MARKER}\n`, 't')).toThrow(/without the other/);
  });

  it('prints numbers with three significant digits', () => {
    expect([formatNumber(6200), formatNumber(12.34), formatNumber(1.234), formatNumber(0.1234)]).toEqual(['6,200', '12.3', '1.23', '0.123']);
  });
});
