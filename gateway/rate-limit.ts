/**
 * Rate-limit headers (spec "Limits"; docs/decisions.md "Gateway contract").
 *
 * The counting is identity's (one atomic statement inside Authorize, shared by every
 * gateway replica); the gateway only reports the state on every response under /v1,
 * success or error:
 *
 *   RateLimit-Policy: <quota>;w=3600
 *   RateLimit-Limit: <quota>
 *   RateLimit-Remaining: <left in the window, counting this request>
 *   RateLimit-Reset: <seconds until the window ends>
 *   RateLimit: "default";r=<remaining>;t=<reset>      (the current IETF draft's field)
 *
 * and `Retry-After` on a 429. Without a known key (a 401, an unknown route without a
 * token, identity unreachable) the full quota is shown with the seconds left in the
 * current epoch-aligned window.
 */
import type { RateLimitStatus } from '../gen/psync/identity/v1/identity_pb';
import { RATE_WINDOW_SECONDS } from '../services/kit/base';
import { secondsLeftInWindow } from '../services/domain';

/** What the headers say. */
export interface RateLimitView {
  limit: number;
  windowSeconds: number;
  remaining: number;
  resetSeconds: number;
}

/** The state shown when no key is known: the full quota, reset at the end of the current window. */
export function defaultView(limit: number, nowMs = Date.now()): RateLimitView {
  return { limit, windowSeconds: RATE_WINDOW_SECONDS, remaining: limit, resetSeconds: secondsLeftInWindow(nowMs / 1000) };
}

/** The state identity reported for a key. */
export function viewFromStatus(s: RateLimitStatus, fallbackLimit: number): RateLimitView {
  const limit = s.limit > 0 ? s.limit : fallbackLimit;
  const windowSeconds = s.windowSeconds > 0 ? s.windowSeconds : RATE_WINDOW_SECONDS;
  return {
    limit,
    windowSeconds,
    remaining: Math.max(0, Math.min(limit, s.remaining)),
    resetSeconds: s.resetSeconds > 0 ? Math.min(windowSeconds, s.resetSeconds) : secondsLeftInWindow(Date.now() / 1000, windowSeconds),
  };
}

/** Header fields of a view (names as the spec writes them). */
export function rateLimitHeaders(v: RateLimitView): Record<string, string> {
  return {
    'RateLimit-Policy': `${v.limit};w=${v.windowSeconds}`,
    'RateLimit-Limit': String(v.limit),
    'RateLimit-Remaining': String(v.remaining),
    'RateLimit-Reset': String(v.resetSeconds),
    RateLimit: `"default";r=${v.remaining};t=${v.resetSeconds}`,
  };
}

/** `Retry-After` for a limited key: at least one second. */
export function retryAfterSeconds(s: Pick<RateLimitStatus, 'retryAfterSeconds' | 'resetSeconds'>): number {
  return Math.max(1, s.retryAfterSeconds || s.resetSeconds || secondsLeftInWindow(Date.now() / 1000));
}
