/**
 * CPU time of a process from Linux /proc, for the benchmarks' "CPU per request"
 * figures (robust to what else the machine is doing, unlike req/s).
 */
import { readFileSync } from 'node:fs';

/** CPU time (ms, user + system) process `pid` has used so far; 0 when unreadable (gone, not Linux). */
export function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in USER_HZ (100)
  } catch {
    return 0;
  }
}
