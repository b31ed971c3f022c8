import { BatchPruner, PeriodicJob } from './periodic';
import { fakeClock } from '../../../test/support/fake-clock';

describe('PeriodicJob', () => {
  test('runs after the first delay, then intervalMs after each run ends, never two at once; a failure goes to onError and the next run retries', async () => {
    const clock = fakeClock();
    const starts: number[] = [];
    let active = 0;
    let overlapped = false;
    const errors: unknown[] = [];
    const t0 = clock.now();
    const job = new PeriodicJob(
      async () => {
        starts.push(clock.now() - t0);
        overlapped ||= active > 0;
        active++;
        await new Promise<void>((r) => clock.setTimeout(r, 30)); // longer than the interval
        active--;
        if (starts.length === 2) throw new Error('boom');
      },
      10,
      (err) => errors.push(err),
      'test',
      clock,
    );
    job.start(5);
    await clock.tick(200);
    await job.stop();
    // 5: first; each next one 30 (the run) + 10 (the interval) later, the failed one included.
    expect(starts).toEqual([5, 45, 85, 125, 165]);
    expect(overlapped).toBe(false);
    expect(errors).toEqual([new Error('boom')]);
  });

  test('stop() waits for the run in flight and no run starts after it', async () => {
    const clock = fakeClock();
    let finished = false;
    let runs = 0;
    let release!: () => void;
    const job = new PeriodicJob(
      async () => {
        runs++;
        await new Promise<void>((r) => (release = r));
        finished = true;
      },
      5,
      () => undefined,
      'test',
      clock,
    );
    expect(job.isStopped).toBe(false);
    job.start(0);
    await clock.settle();
    const stopped = job.stop();
    expect(job.isStopped).toBe(true);
    release();
    await stopped;
    expect(finished).toBe(true);
    await clock.tick(50);
    expect(runs).toBe(1);
  });
});

describe('BatchPruner', () => {
  test('prunes batch after batch until one comes back short, reports the total, and runs again every everyMs', async () => {
    const clock = fakeClock();
    let rows = 25;
    const pruned: number[] = [];
    const pruner = new BatchPruner({
      pruneOnce: async () => {
        const n = Math.min(10, rows);
        rows -= n;
        return n;
      },
      batch: 10,
      everyMs: 1000,
      firstDelayMs: 100,
      onPruned: (n) => pruned.push(n),
      onError: () => undefined,
      clock,
    });
    pruner.start();
    await clock.tick(99);
    expect(pruned).toEqual([]);
    await clock.tick(1);
    expect(pruned).toEqual([25]);
    rows = 3;
    await clock.tick(999);
    expect(pruned).toEqual([25]);
    await clock.tick(1);
    expect(pruned).toEqual([25, 3]);
    await clock.tick(1000);
    expect(pruned).toEqual([25, 3]); // nothing deleted: nothing reported
    await pruner.stop();
  });
});
