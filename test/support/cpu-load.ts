/**
 * Busy cores for the concurrency tests (test/calendar/race, move-lock, stream-order).
 * With PSYNC_TEST_CPU_LOAD set — `cores` (one busy process per core) or a number — they
 * start this load before their writers and stop it after: their properties (no night
 * sold twice, a move waits for both locks, a gapless stream in commit order) must hold
 * when the scheduler is starved, where interleavings are widest. Without it they run
 * as they are (CI's time is not spent on burning cores). `npm run test:races` runs them
 * ten times in a row under the load (test/races/run.ts).
 */
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';

/** Starts the configured load; the returned function stops it (harmless when none was started). */
export function startCpuLoad(setting = process.env.PSYNC_TEST_CPU_LOAD): () => void {
  if (!setting) return () => undefined;
  const n = setting === 'cores' ? availableParallelism() : Number(setting);
  if (!Number.isInteger(n) || n < 1) throw new Error(`PSYNC_TEST_CPU_LOAD must be "cores" or a positive integer, not ${JSON.stringify(setting)}`);
  // A plain busy loop in its own process: the OS shares the cores between it and the system under test.
  const burners = Array.from({ length: n }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  return () => {
    for (const b of burners) b.kill('SIGKILL');
  };
}
