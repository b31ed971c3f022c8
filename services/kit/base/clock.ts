/**
 * Time as a dependency: what the services' background loops, expiries and windows ask
 * for the current time and for timers. Production passes `systemClock`; a test passes
 * a fake one (test/support/fake-clock.ts, on @sinonjs/fake-timers) and drives it, so a
 * back-off, a lease renewal, a token's expiry or a periodic job is checked by moving
 * time forward instead of waiting for it.
 *
 * Rules whose time is the DATABASE's (`now()` in SQL: rate windows, leases, hold
 * expiry) are not on this clock on purpose: replicas agree on one clock, the
 * database's; tests of those rules call the SQL functions with explicit instants.
 */

/** A timer as the clock hands it out: something to clear. */
export type ClockTimer = object | number;

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Calls `fn` once after `ms`. On the system clock the timer never keeps the process alive. */
  setTimeout(fn: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer | undefined): void;
  /** Calls `fn` every `ms`. On the system clock the timer never keeps the process alive. */
  setInterval(fn: () => void, ms: number): ClockTimer;
  clearInterval(timer: ClockTimer | undefined): void;
}

/** Node's own clock and timers; every timer unref'd (a background timer never holds a process open). */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
  setInterval: (fn, ms) => setInterval(fn, ms).unref(),
  clearInterval: (timer) => clearInterval(timer as NodeJS.Timeout | undefined),
};

/** Resolves after `ms` on `clock` (its timer, so a fake clock moves it); sooner when `signal` aborts. */
export function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clock.clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = clock.setTimeout(done, ms);
    signal?.addEventListener('abort', done);
  });
}
