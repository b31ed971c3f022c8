import { backoffMs, WakeSignal, Worker, type RoundResult } from './worker';
import { fakeClock, type FakeClock } from '../../../test/support/fake-clock';

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
  let clock: FakeClock;
  beforeEach(() => {
    clock = fakeClock();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });
  function worker(round: () => Promise<RoundResult>, opts: Partial<ConstructorParameters<typeof Worker>[0]> = {}): Worker {
    const w = new Worker({ name: 'test', idleMs: 60_000, round, onError: () => undefined, clock, ...opts });
    workers.push(w);
    return w;
  }
  /** A promise that the test resolves: a round or a task that takes as long as the test says. */
  function gate(): { promise: Promise<void>; open: () => void } {
    let open!: () => void;
    const promise = new Promise<void>((r) => (open = r));
    return { promise, open };
  }

  test('goes again at once while a round says more is waiting, then waits idleMs; a nudge ends the wait', async () => {
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
    await clock.settle();
    expect(rounds).toBe(4);
    await clock.tick(59_999);
    expect(rounds).toBe(4); // idle: waiting 60 s
    w.nudge();
    await clock.settle();
    expect(rounds).toBe(5);
    await clock.tick(59_999);
    expect(rounds).toBe(5);
    await clock.tick(1);
    expect(rounds).toBe(6); // the idle wait ran out
  });

  test('the first round runs on a later tick, after firstDelayMs', async () => {
    let rounds = 0;
    const w = worker(async () => ({ items: rounds++ && 0, more: false }), { firstDelayMs: 40 });
    w.start();
    expect(rounds).toBe(0);
    await clock.tick(39);
    expect(rounds).toBe(0);
    await clock.tick(1);
    expect(rounds).toBe(1);
  });

  test('a nudge during a round runs another round right after it', async () => {
    let rounds = 0;
    const first = gate();
    const w = worker(async () => {
      rounds++;
      if (rounds === 1) await first.promise;
      return { items: 0, more: false };
    });
    w.start();
    await clock.settle();
    expect(rounds).toBe(1);
    w.nudge();
    first.open();
    await clock.settle();
    expect(rounds).toBe(2);
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
    w.start();
    await clock.settle();
    expect(rounds).toBe(1);
    w.nudge();
    await clock.tick(39);
    expect(rounds).toBe(1);
    await clock.tick(1);
    expect(rounds).toBe(2);
    await clock.tick(79);
    expect(rounds).toBe(2);
    await clock.tick(1);
    expect(rounds).toBe(3);
    await clock.tick(100);
    expect(rounds).toBe(4);
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
    await clock.settle();
    expect(rounds).toBe(1);
    w.nudge();
    await clock.tick(59_999);
    expect(rounds).toBe(1);
    await clock.tick(1);
    expect(rounds).toBe(2);
  });

  test('stop() ends the wait or the back-off at once and waits for the round in progress', async () => {
    let finished = false;
    const slow = gate();
    const w = worker(async () => {
      await slow.promise;
      finished = true;
      return { items: 0, more: false };
    });
    w.start();
    await clock.settle();
    const stopped = w.stop();
    expect(w.isStopping).toBe(true);
    slow.open();
    await stopped;
    expect(finished).toBe(true);

    const failing = worker(async () => Promise.reject(new Error('down')), { backoff: { baseMs: 60_000, maxMs: 60_000 } });
    failing.start();
    await clock.settle();
    await failing.stop(); // no tick: the back-off's 60 s never had to pass
    expect(clock.pending()).toBe(0);
  });

  test('tasks: counted, their end nudges the loop; stop() drains within the grace, then aborts the rest', async () => {
    let rounds = 0;
    const events: string[] = [];
    const quick = gate();
    const w = worker(async () => {
      rounds++;
      if (rounds === 1) {
        w.spawn(async () => {
          await quick.promise;
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
    await clock.settle();
    expect(w.inFlight).toBe(2);
    quick.open();
    await clock.settle();
    expect(rounds).toBe(2); // the quick task freed its slot and nudged
    expect(w.inFlight).toBe(1);
    let aborted: number | undefined;
    const stopped = w.stop(50).then((n) => (aborted = n));
    await clock.tick(49);
    expect(aborted).toBeUndefined(); // within the grace
    await clock.tick(1);
    await stopped;
    expect(aborted).toBe(1);
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
    await clock.settle();
    expect(rounds).toBe(1);
    w.spawn(async () => undefined);
    await clock.settle();
    expect(asked).toEqual([0]); // its slot is free by the time it is asked
    await clock.tick(59_999);
    expect(rounds).toBe(1); // not nudged: idle for 60 s
    answer = true;
    w.spawn(async () => {
      throw new Error('task failed');
    });
    await clock.settle();
    expect(rounds).toBe(2);
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
    await clock.settle();
    expect([rounds, checks]).toEqual([1, 0]); // the first round claims without asking
    await clock.tick(60);
    expect([rounds, checks]).toEqual([1, 3]); // nothing waiting: only the check ran, once per idle wait
    waiting = true;
    await clock.tick(20);
    expect([rounds, checks]).toEqual([2, 4]);
    waiting = false;
    w.nudge();
    await clock.settle();
    expect([rounds, checks]).toEqual([3, 4]); // a nudge runs the round without asking
    expect(checksAtRound).toEqual([0, 4, 4]);
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
    await clock.settle();
    expect(rounds).toBe(1);
    for (let i = 0; i < 3; i++) {
      w.spawn(async () => undefined);
      await clock.settle();
      expect(rounds).toBe(i + 2);
    }
  });

  test('a task that throws goes to onTaskError', async () => {
    const errs: unknown[] = [];
    const w = worker(async () => ({ items: 0, more: false }), { onTaskError: (e) => void errs.push(e) });
    w.spawn(async () => {
      throw new Error('task failed');
    });
    await clock.settle();
    expect(errs).toEqual([new Error('task failed')]);
    expect(w.inFlight).toBe(0);
  });

  test('leases are renewed every everyMs while the worker runs, a failed renewal does not stop the timer, and none after stop()', async () => {
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
    await clock.tick(9);
    expect(renewals).toBe(0);
    await clock.tick(31);
    expect(renewals).toBe(4);
    await w.stop();
    await clock.tick(100);
    expect(renewals).toBe(4);
  });

  test('a stopped worker can start again', async () => {
    let rounds = 0;
    const w = worker(async () => ({ items: rounds++, more: false }));
    w.start();
    await clock.settle();
    expect(rounds).toBe(1);
    await w.stop();
    w.start();
    await clock.settle();
    expect(rounds).toBe(2);
  });
});

describe('WakeSignal', () => {
  test('notify() wakes every waiter; a time limit, an abort and close() end a wait too', async () => {
    const clock = fakeClock();
    const s = new WakeSignal(clock);
    const woken: string[] = [];
    const a = s.wait(null).then(() => woken.push('a'));
    const b = s.wait(60_000).then(() => woken.push('b'));
    await clock.settle();
    expect(woken).toEqual([]);
    s.notify();
    await Promise.all([a, b]);
    expect(woken.sort()).toEqual(['a', 'b']);

    let limited = false;
    const c = s.wait(20).then(() => (limited = true));
    await clock.tick(19);
    expect(limited).toBe(false);
    await clock.tick(1);
    await c;
    expect(limited).toBe(true);

    const abort = new AbortController();
    const d = s.wait(null, abort.signal);
    abort.abort();
    await d;
    await s.wait(null, abort.signal); // already aborted

    const e = s.wait(null);
    s.close();
    await e;
    expect(s.isClosed).toBe(true);
    await s.wait(null); // closed: at once
    expect(clock.pending()).toBe(0);
  });

  test('a notify between reading the generation and waiting is not lost', async () => {
    const clock = fakeClock();
    const s = new WakeSignal(clock);
    const seen = s.generation;
    s.notify(); // while the waiter was busy
    await s.wait(60_000, undefined, seen); // at once: no tick
    let woken = false;
    const w = s.wait(60_000, undefined, s.generation).then(() => (woken = true));
    await clock.settle();
    expect(woken).toBe(false);
    s.notify();
    await w;
  });
});
