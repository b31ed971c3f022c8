/**
 * The rate-limit window arithmetic, for the gateway (RateLimit-Reset, Retry-After) and
 * identity (the counters) alike: fixed windows of RATE_WINDOW_SECONDS aligned to the
 * Unix epoch. identity.rate_window_start() is the same rule in SQL
 * (test/kit/limits-agree.test.ts).
 */
import { RATE_WINDOW_SECONDS } from '../kit/base';

/** Seconds left in the epoch-aligned window containing `nowEpochSeconds`, 1..windowSeconds. */
export function secondsLeftInWindow(nowEpochSeconds: number, windowSeconds = RATE_WINDOW_SECONDS): number {
  const end = (Math.floor(nowEpochSeconds / windowSeconds) + 1) * windowSeconds;
  return Math.min(windowSeconds, Math.max(1, Math.ceil(end - nowEpochSeconds)));
}
