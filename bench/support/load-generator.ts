/** Which HTTP load generator a bench uses: BENCH_LOADGEN, else wrk when installed, else autocannon. */
import { wrkVersion } from './wrk';

export interface LoadGenerator {
  name: 'wrk' | 'autocannon';
  /** For the report: "wrk 4.1.0 (one thread, its own process)". */
  description: string;
}

export function chooseLoadGenerator(): LoadGenerator {
  const forced = process.env.BENCH_LOADGEN;
  if (forced !== undefined && forced !== 'wrk' && forced !== 'autocannon') throw new Error(`BENCH_LOADGEN must be wrk or autocannon, not ${forced}`);
  const wrk = forced === 'autocannon' ? undefined : wrkVersion();
  if (forced === 'wrk' && wrk === undefined) throw new Error('BENCH_LOADGEN=wrk but wrk is not installed (apt-get install wrk)');
  if (wrk !== undefined) return { name: 'wrk', description: `wrk ${wrk} (one thread, its own process)` };
  return { name: 'autocannon', description: 'autocannon (in the bench process)' };
}
