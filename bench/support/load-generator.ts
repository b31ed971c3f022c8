/**
 * The HTTP load generator of the gateway bench: BENCH_LOADGEN, else wrk when installed,
 * else autocannon. Both run the same load — GET one URL with fixed headers over
 * `connections` keep-alive connections for `seconds` — and report the same LoadResult.
 * (The calendar and catalog benches send a different body per request, which only
 * autocannon's request hooks do; they call it themselves.)
 */
import { runWrk, wrkVersion, type LoadResult } from './wrk';

export type { LoadResult };

export interface LoadGenerator {
  name: 'wrk' | 'autocannon';
  /** For the report: "wrk 4.1.0 (one thread, its own process)". */
  description: string;
}

/** The part of autocannon's API used here (the package ships no type declarations). */
type Autocannon = (opts: { url: string; connections: number; duration: number; headers: Record<string, string> }, cb: (err: Error | null, res: LoadResult) => void) => unknown;

export function chooseLoadGenerator(): LoadGenerator {
  const forced = process.env.BENCH_LOADGEN;
  if (forced !== undefined && forced !== 'wrk' && forced !== 'autocannon') throw new Error(`BENCH_LOADGEN must be wrk or autocannon, not ${forced}`);
  const wrk = forced === 'autocannon' ? undefined : wrkVersion();
  if (forced === 'wrk' && wrk === undefined) throw new Error('BENCH_LOADGEN=wrk but wrk is not installed (apt-get install wrk)');
  if (wrk !== undefined) return { name: 'wrk', description: `wrk ${wrk} (one thread, its own process)` };
  return { name: 'autocannon', description: 'autocannon (in the bench process)' };
}

/** GETs `url` with `headers` over `connections` connections for `seconds`. */
export function runLoad(gen: LoadGenerator, url: string, headers: Record<string, string>, connections: number, seconds: number): Promise<LoadResult> {
  if (gen.name === 'wrk') return runWrk(url, headers, connections, seconds);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const autocannon = require('autocannon') as Autocannon;
  return new Promise((res, rej) => {
    autocannon({ url, connections, duration: seconds, headers }, (err, r) => (err ? rej(err) : res(r)));
  });
}
