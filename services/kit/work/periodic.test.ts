import { PeriodicJob } from './periodic';
import { sleep } from '../../../test/support/eventually';

describe('PeriodicJob', () => {
  test('runs after the first delay, then again after each run ends, never two at once; a failure goes to onError and the next run retries', async () => {
    let active = 0;
    let overlapped = false;
    let runs = 0;
    const errors: unknown[] = [];
    const job = new PeriodicJob(
      async () => {
        runs++;
        overlapped ||= active > 0;
        active++;
        await sleep(30); // longer than the interval
        active--;
        if (runs === 2) throw new Error('boom');
      },
      10,
      (err) => errors.push(err),
    );
    job.start(0);
    await sleep(200);
    await job.stop();
    expect(runs).toBeGreaterThanOrEqual(3);
    expect(overlapped).toBe(false);
    expect(errors).toEqual([new Error('boom')]);
  });

  test('stop() waits for the run in flight and no run starts after it', async () => {
    let finished = false;
    let runs = 0;
    const job = new PeriodicJob(
      async () => {
        runs++;
        await sleep(50);
        finished = true;
      },
      5,
      () => undefined,
    );
    expect(job.isStopped).toBe(false);
    job.start(0);
    await sleep(10);
    await job.stop();
    expect(finished).toBe(true);
    expect(job.isStopped).toBe(true);
    await sleep(50);
    expect(runs).toBe(1);
  });
});
