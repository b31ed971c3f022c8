/**
 * `npm run test:races`: the concurrency tests (test/calendar/race, move-lock and
 * stream-order) ten times in a row (RACE_RUNS to change it) with every core kept busy by
 * a load each test starts itself (PSYNC_TEST_CPU_LOAD=cores, test/support/cpu-load.ts),
 * on the real PostgreSQL and NATS of DATABASE_URL and NATS_URL (they are skipped without
 * them). Stops at the first failing run and exits non-zero; prints each run's time.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');
const runs = Number(process.env.RACE_RUNS ?? 10);
if (!process.env.DATABASE_URL || !process.env.NATS_URL) {
  console.error('test:races needs DATABASE_URL and NATS_URL (a real PostgreSQL and NATS): the embedded default is one session');
  process.exit(2);
}
const files = ['test/calendar/race.test.ts', 'test/calendar/move-lock.test.ts', 'test/calendar/stream-order.test.ts'];
for (let i = 1; i <= runs; i++) {
  const started = Date.now();
  const jest = spawnSync(process.execPath, [join(root, 'node_modules', 'jest', 'bin', 'jest.js'), '--runInBand', ...files], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, PSYNC_TEST_CPU_LOAD: process.env.PSYNC_TEST_CPU_LOAD ?? 'cores' },
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  console.log(`test:races: run ${i}/${runs} ${jest.status === 0 ? 'passed' : 'FAILED'} in ${seconds} s`);
  if (jest.status !== 0) process.exit(1);
}
console.log(`test:races: ${runs} consecutive runs passed under a load on every core`);
