/**
 * Rate-limit arithmetic (docs/decisions.md "Gateway contract": fixed windows of
 * RATE_WINDOW_SECONDS, 3600 s, aligned to the Unix epoch; docs/contract-gaps.md
 * "what counts toward the 600").
 *
 * The counting itself is PostgreSQL's (`identity.count_requests`, migration 0005): a
 * key's window row is created or locked and added to, stopping at the limit, so under
 * any concurrency, across any number of processes, exactly `limit` requests per window
 * are counted. Each request learns the window's count before it and, when counted, the
 * count including it (queries.ts). This module turns that outcome and the database
 * clock into the numbers the gateway sends.
 */
import { RATE_WINDOW_SECONDS } from '../kit/base';
import { secondsLeftInWindow } from '../domain';

/** The two counters of a key. */
export type Bucket = 'contract' | 'token';

/** What the gateway needs for `RateLimit-*` and `Retry-After`. */
export interface RateLimitState {
  limit: number;
  windowSeconds: number;
  /** Left in the window, counting this request; 0 when limited. */
  remaining: number;
  /** Seconds until the current window ends, 1..3600. */
  resetSeconds: number;
  /** The quota was used up: the request was not counted (or, when peeking, would not be). */
  limited: boolean;
  /** `resetSeconds` when limited, 0 otherwise. */
  retryAfterSeconds: number;
}

/** What the database reported for one request. */
export interface CounterOutcome {
  limit: number;
  /** Whether the request asked to be counted. */
  counting: boolean;
  /** The count after this request's increment, or null when nothing was incremented. */
  counted: number | null;
  /** The window's count before this statement (0 for a new window). */
  previous: number;
  /** The database clock, Unix seconds (fractional). */
  nowEpochSeconds: number;
}

/**
 * The state after one request:
 * - counted (a row came back): remaining = limit − count;
 * - counting but no row: limited, remaining 0, retry after the window's end;
 * - peeking (not counting): remaining = limit − current count, and `limited` says
 *   whether a counted request would be refused now.
 */
export function rateLimitState(o: CounterOutcome): RateLimitState {
  const resetSeconds = secondsLeftInWindow(o.nowEpochSeconds);
  let remaining: number;
  let limited: boolean;
  if (o.counting) {
    limited = o.counted === null;
    remaining = limited ? 0 : Math.max(0, o.limit - o.counted!);
  } else {
    limited = o.previous >= o.limit;
    remaining = Math.max(0, o.limit - o.previous);
  }
  return {
    limit: o.limit,
    windowSeconds: RATE_WINDOW_SECONDS,
    remaining,
    resetSeconds,
    limited,
    retryAfterSeconds: limited ? resetSeconds : 0,
  };
}
