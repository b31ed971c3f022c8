/**
 * CPU time of each thread of a process, grouped by thread name (Linux
 * /proc/<pid>/task/<tid>/comm and stat): the JavaScript main thread (the process's
 * own name), V8's platform workers (optimising compiler, concurrent GC marking:
 * `V8 DefaultWorke`), libuv's thread pool (`libuv-worker`: crypto, DNS, file system)
 * and the rest. Shows how much of a process's CPU is not on its event loop at all.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** CPU ms per thread name so far (threads of the same name summed). */
export function threadCpuMs(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const name = tid === String(pid) ? 'main (JavaScript)' : comm;
      out.set(name, (out.get(name) ?? 0) + ((Number(f[11]) + Number(f[12])) * 1000) / 100);
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** What each thread name used between two snapshots (ms). */
export function threadCpuBetween(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, ms] of after) out.set(name, ms - (before.get(name) ?? 0));
  return out;
}
