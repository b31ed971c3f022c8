import { backoffMs, WakeSignal, Worker, type RoundResult } from './worker';
import { sleep, waitFor as waitUntil } from '../../../test/support/eventually';

/** A worker round takes a few milliseconds: these conditions are polled every 2 ms so none is missed. */
const waitFor = (what: string, cond: () => boolean, timeoutMs = 5000) => waitUntil(what, cond, timeoutMs, 2);

describe('backoffMs', () => {
  test('doubles from the base, is capped, and spreads by ± the jitter without passing the cap', () => {
    const p = { baseMs: 100, maxMs: 1000 };
    expect([1, 2, 3, 4, 5, 9].map((n) => backoffMs(n, p, () => 0.5))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(backoffMs(1, p, () => 0)).toBe(80);
    expect(backoffMs(1, p, () => 0.999999)).toBe(120);
    expect(backoffMs(4, p, () => 0.999999)).toBe(960);
    expect(backoffMs(5, p, () => 0.999999)).toBe(1000);
    expect(backoffMs(3, { ...p, jitter: 0 }, () => 0.9)).toBe(400);
    expect(backoffMs(1000, p)).toBeLessThanOrEqual(1000);
  });
});

describe('Worker', () => {
  const workers: Worker[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });
  function worker(round: () => Promise<RoundResult>, opts: Partial<ConstructorParameters<typeof Worker>[0]> = {}): Worker {
    const w = new Worker({ name: 'test', idleMs: 60_000, round, onError: () => undefined, ...opts });
    workers.push(w);
    return w;
  }

  test('goes again at once while a round says more is waiting, then waits; a nudge ends the wait', async () => {
    let rounds = 0;
    let backlog = 3;
    const w = worker(async () => {
      rounds++;
      const more = backlog > 0;
      backlog = Math.max(0, backlog - 1);
      return { items: more ? 1 : 0, more };
    });
    w.start();
    w.start(); // harmless
    await waitFor('the backlog', () => rounds === 4);
    await sleep(50);
    expect(rounds).toBe(4); // idle: waiting 60 s
    w.nudge();
    await waitFor('the nudged round', () => rounds === 5);
    await sleep(30);
    expect(rounds).toBe(5);
  });

  test('the first round runs on a later tick, after firstDelayMs', async () => {
    let rounds = 0;
    const w = worker(async () => ({ items: rounds++ && 0, more: false }), { firstDelayMs: 40 });
    w.start();
    expect(rounds).toBe(0);
    await sleep(15);
    expect(rounds).toBe(0);
    await waitFor('the first round', () => rounds === 1);
  });

  test('a nudge during a round runs another round right after it', async () => {
    let rounds = 0;
    let release!: () => void;
    const w = worker(async () => {
      rounds++;
      if (rounds === 1) await new Promise<void>((r) => (release = r));
      return { items: 0, more: false };
    });
    w.start();
    await waitFor('round 1', () => rounds === 1);
    w.nudge();
    release();
    await waitFor('round 2', () => rounds === 2);
  });

  test('a failed round is retried after a growing back-off that a nudge does not cut short; onError hears each', async () => {
    const errors: { retryInMs: number; failures: number }[] = [];
    let rounds = 0;
    const w = worker(
      async () => {
        rounds++;
        if (rounds <= 3) throw new Error(`boom ${rounds}`);
        return { items: 0, more: false };
      },
      { backoff: { baseMs: 40, maxMs: 100, jitter: 0 }, onError: (_err, retryInMs, failures) => void errors.push({ retryInMs, failures }) },
    );
    const t0 = Date.now();
    w.start();
    await waitFor('the first failure', () => rounds === 1);
    w.nudge();
    await sleep(20);
    expect(rounds).toBe(1);
    await waitFor('recovery', () => rounds === 4);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(40 + 80 + 100 - 10);
    expect(errors).toEqual([
      { retryInMs: 40, failures: 1 },
      { retryInMs: 80, failures: 2 },
      { retryInMs: 100, failures: 3 },
    ]);
  });

  test('a timer-driven worker ignores nudges', async () => {
    let rounds = 0;
    const w = worker(async () => ({ items: rounds++, more: false }), { wakeOnNudge: false, idleMs: 60_000 });
    w.start();
    await waitFor('round 1', () => rounds === 1);
    w.nudge();
    await sleep(30);
    expect(rounds).toBe(1);
  });

  test('stop() ends the wait or the back-off at once and waits for the round in progress', async () => {
    let finished = false;
    const w = worker(async () => {
      await sleep(40);
      finished = true;
      return { items: 0, more: false };
    });
    w.start();
    await sleep(5);
    await w.stop();
    expect(finished).toBe(true);
    expect(w.isStopping).toBe(true);

    const failing = worker(async () => Promise.reject(new Error('down')), { backoff: { baseMs: 60_000, maxMs: 60_000 } });
    failing.start();
    await sleep(10);
    const t0 = Date.now();
    await failing.stop();
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  test('tasks: counted, their end nudges the loop; stop() drains within the grace, then aborts the rest', async () => {
    let rounds = 0;
    const events: string[] = [];
    const w = worker(async () => {
      rounds++;
      if (rounds === 1) {
        w.spawn(async () => {
          await sleep(20);
          events.push('quick done');
        });
        w.spawn(
          (signal) =>
            new Promise<void>((resolve) => {
              signal.addEventListener('abort', () => {
                events.push('slow aborted');
                resolve();
              });
            }),
        );
      }
      return { items: rounds === 1 ? 2 : 0, more: false };
    });
    w.start();
    await waitFor('two tasks', () => w.inFlight === 2);
    await waitFor('the quick task to free its slot and nudge', () => rounds === 2);
    expect(w.inFlight).toBe(1);
    const t0 = Date.now();
    expect(await w.stop(50)).toBe(1);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(45);
    expect(events).toEqual(['quick done', 'slow aborted']);
    expect(w.inFlight).toBe(0);
  });

  test('nudgeOnTaskEnd: asked after the task (and a throwing task) ends; false leaves the loop idle, true nudges it', async () => {
    let rounds = 0;
    let answer = false;
    const asked: number[] = [];
    const w = worker(async () => ({ items: rounds++ && 0, more: false }), {
      nudgeOnTaskEnd: () => {
        asked.push(w.inFlight);
        return answer;
      },
    });
    w.start();
    await waitFor('round 1', () => rounds === 1);
    w.spawn(async () => {
      await sleep(10);
    });
    await waitFor('the first task to end', () => asked.length === 1);
    expect(asked).toEqual([0]); // its slot is free by the time it is asked
    await sleep(40);
    expect(rounds).toBe(1); // not nudged: idle for 60 s
    answer = true;
    w.spawn(async () => {
      throw new Error('task failed');
    });
    await waitFor('the nudged round', () => rounds === 2);
    expect(asked).toEqual([0, 0]);
  });

  test('idleCheck: asked only before a round that follows an idle wait that ran out; false skips the round', async () => {
    let rounds = 0;
    let checks = 0;
    let waiting = false;
    const checksAtRound: number[] = [];
    const w = worker(
      async () => {
        rounds++;
        checksAtRound.push(checks);
        return { items: 0, more: false };
      },
      {
        idleMs: 20,
        idleCheck: async () => {
          checks++;
          return waiting;
        },
      },
    );
    w.start();
    await waitFor('the first round', () => rounds === 1);
    expect(checks).toBe(0); // the first round claims without asking
    await waitFor('idle polls', () => checks >= 3);
    expect(rounds).toBe(1); // nothing waiting: only the check ran
    waiting = true;
    await waitFor('a round after a true check', () => rounds >= 2);
    waiting = false;
    const before = checks;
    w.nudge();
    await waitFor('the nudged round', () => rounds >= 3);
    expect(checksAtRound[2]).toBeLessThanOrEqual(before + 1); // a nudge runs the round without asking (a poll may have raced it)
  });

  test('nudgeOnTaskEnd is not asked while stopping', async () => {
    let asked = 0;
    const w = worker(async () => ({ items: 0, more: false }), { nudgeOnTaskEnd: () => (asked++, true) });
    w.start();
    w.spawn(async (signal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve())));
    expect(await w.stop(0)).toBe(1);
    expect(asked).toBe(0);
  });

  test('without nudgeOnTaskEnd every task end nudges the loop', async () => {
    let rounds = 0;
    const w = worker(async () => ({ items: rounds++ && 0, more: false }));
    w.start();
    await waitFor('round 1', () => rounds === 1);
    for (let i = 0; i < 3; i++) {
      w.spawn(async () => {
        await sleep(5);
      });
      await waitFor(`round ${i + 2}`, () => rounds === i + 2);
    }
  });

  test('a task that throws goes to onTaskError', async () => {
    const errs: unknown[] = [];
    const w = worker(async () => ({ items: 0, more: false }), { onTaskError: (e) => void errs.push(e) });
    w.spawn(async () => {
      throw new Error('task failed');
    });
    await waitFor('the error', () => errs.length === 1);
    expect(w.inFlight).toBe(0);
  });

  test('leases are renewed while the worker runs, and no more after stop()', async () => {
    let renewals = 0;
    const w = worker(async () => ({ items: 0, more: false }), {
      lease: {
        everyMs: 10,
        renew: async () => {
          renewals++;
          if (renewals === 2) throw new Error('renewal failed'); // the caller's to log; the timer goes on
        },
      },
    });
    w.start();
    await waitFor('renewals', () => renewals >= 4);
    await w.stop();
    const after = renewals;
    await sleep(40);
    expect(renewals).toBe(after);
  });

  test('a stopped worker can start again', async () => {
    let rounds = 0;
    const w = worker(async () => ({ items: rounds++, more: false }));
    w.start();
    await waitFor('round 1', () => rounds === 1);
    await w.stop();
    w.start();
    await waitFor('round 2', () => rounds === 2);
  });
});

describe('WakeSignal', () => {
  test('notify() wakes every waiter; a time limit, an abort and close() end a wait too', async () => {
    const s = new WakeSignal();
    const woken: string[] = [];
    const a = s.wait(null).then(() => woken.push('a'));
    const b = s.wait(60_000).then(() => woken.push('b'));
    await sleep(5);
    expect(woken).toEqual([]);
    s.notify();
    await Promise.all([a, b]);
    expect(woken.sort()).toEqual(['a', 'b']);

    const t0 = Date.now();
    await s.wait(20);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(15);

    const abort = new AbortController();
    const c = s.wait(null, abort.signal);
    abort.abort();
    await c;
    await s.wait(null, abort.signal); // already aborted

    const d = s.wait(null);
    s.close();
    await d;
    expect(s.isClosed).toBe(true);
    await s.wait(null); // closed: at once
  });

  test('a notify between reading the generation and waiting is not lost', async () => {
    const s = new WakeSignal();
    const seen = s.generation;
    s.notify(); // while the waiter was busy
    const t0 = Date.now();
    await s.wait(60_000, undefined, seen);
    expect(Date.now() - t0).toBeLessThan(100);
    let woken = false;
    const w = s.wait(60_000, undefined, s.generation).then(() => (woken = true));
    await sleep(10);
    expect(woken).toBe(false);
    s.notify();
    await w;
  });
});
