/**
 * Waiting on a condition with a bound, for tests: never a fixed sleep. One helper for
 * every test (test/notifications/support/harness.ts re-exports it); the calendar
 * tests' own `eventually` (test/calendar/support.ts) differs on purpose: it lets an
 * error of `fn` fail the test at once.
 */

/** Polls `fn` every `everyMs` until it returns something truthy, or fails after `timeoutMs` with the last error. */
export async function eventually<T>(fn: () => Promise<T | undefined | false | null>, timeoutMs = 20_000, what = 'condition', everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Polls the boolean `cond` every `everyMs` until it holds, or fails after `timeoutMs` naming `what`. */
export async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 20_000, everyMs = 25): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/**
 * A negative wait: `cond` (what must keep being true: no duplicate arrived, the other
 * workspace received nothing) is checked every `everyMs` for `windowMs`, and the test
 * fails at once, naming `what`, when it stops holding. The one place a test spends a
 * fixed time on purpose: that something does NOT happen can only be seen over a window,
 * and the window is named by the caller (a `QUIET_MS`). Wait for the positive
 * condition first (and, where the stream is ordered, for a sentinel sent after the
 * thing that must not arrive: then no window is needed at all).
 */
export async function holdsFor(what: string, cond: () => boolean | Promise<boolean>, windowMs: number, everyMs = 25): Promise<void> {
  const end = Date.now() + windowMs;
  for (;;) {
    if (!(await cond())) throw new Error(`${what}: no longer held after ${windowMs - (end - Date.now())} ms of a ${windowMs} ms window`);
    if (Date.now() >= end) return;
    await sleep(Math.min(everyMs, Math.max(1, end - Date.now())));
  }
}

/**
 * A fixed wait. Only where time itself is what a test checks (a real server's timer, a
 * window that must pass) — say so beside the call; to wait for something, use
 * `eventually` or `waitFor`.
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
