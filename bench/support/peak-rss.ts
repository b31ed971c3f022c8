/**
 * Peak resident memory of a benchmark's processes, printed by every benchmark when it
 * ends: the bench process itself (getrusage's maxrss) and each process it watches
 * (`watchPeakRss`: the systems under test), whose peak is the kernel's VmHWM from
 * /proc/<pid>/status. VmHWM is the process's own high-water mark, so reading it any
 * time before the process exits gives its peak so far; a watched process is read
 * every second and once more by `samplePeakRss` (call it just before stopping the
 * process) — only growth in a process's last second before an unannounced exit can
 * be missed.
 *
 * The figures also go into the benchmark's result file (results.ts) for `npm run
 * bench:all`. Importing this module is enough for the bench process's own line.
 */
import { readFileSync } from 'node:fs';

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

process.once('exit', () => {
  process.stderr.write(`${formatPeakRss(peakRssSoFar())}\n`);
});
