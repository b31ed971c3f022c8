/**
 * A clock a test moves by hand (services/kit/base/clock.ts `Clock`), on
 * @sinonjs/fake-timers' `createClock`: nothing it schedules runs until the test ticks,
 * so a back-off, a lease renewal, an expiry or a periodic job is checked to the
 * millisecond without waiting for it. Only the code handed this clock is faked; the
 * rest of the process (Jest, the database driver) keeps real time.
 */
import { createClock } from '@sinonjs/fake-timers';
import type { Clock } from '../../services/kit/base';

export interface FakeClock extends Clock {
  /**
   * Moves time forward by `ms`, firing each timer that falls due on the way, and lets the
   * promise jobs each one starts run before the next (fake-timers' `tickAsync`).
   */
  tick(ms: number): Promise<void>;
  /** Lets queued promise jobs and zero-delay timers run without moving time. */
  settle(): Promise<void>;
  /** How many timers are scheduled. */
  pending(): number;
}

/** A fake clock at `start` (default 2030-01-01T00:00:00Z). */
export function fakeClock(start = Date.UTC(2030, 0, 1)): FakeClock {
  const fake = createClock(start);
  return {
    now: () => fake.now,
    setTimeout: (fn, ms) => fake.setTimeout(fn, ms),
    clearTimeout: (timer) => fake.clearTimeout(timer as never),
    setInterval: (fn, ms) => fake.setInterval(fn, ms),
    clearInterval: (timer) => fake.clearInterval(timer as never),
    tick: async (ms) => {
      await fake.tickAsync(ms);
    },
    settle: async () => {
      // A few real turns: a chain of awaits that crosses a macrotask (a resolved stream, an
      // emitter) settles too; zero-delay fake timers fire.
      for (let i = 0; i < 5; i++) await fake.tickAsync(0);
    },
    pending: () => fake.countTimers(),
  };
}
