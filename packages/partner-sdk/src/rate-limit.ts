/**
 * The rate-limit state the API states on every response (`RateLimit-Policy`,
 * `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`) and the wait a `429`
 * asks for (`Retry-After`, seconds).
 */

/** What the last response said about the key's quota. */
export interface RateLimitInfo {
  /** Requests allowed per window (`RateLimit-Limit`). */
  limit: number;
  /** Requests left in the current window, this one counted (`RateLimit-Remaining`). */
  remaining: number;
  /** Seconds until the window resets, as of `observedAt` (`RateLimit-Reset`). */
  resetSeconds: number;
  /** Window length in seconds (the `w` of `RateLimit-Policy`), when stated. */
  windowSeconds?: number;
  /** When the response carrying these headers arrived (milliseconds since the epoch, the client's clock). */
  observedAt: number;
}

function nonNegativeInt(raw: string | null): number | undefined {
  if (raw === null || !/^\s*\d+\s*$/.test(raw)) return undefined;
  return Number(raw.trim());
}

/** The rate-limit headers of `headers`, or undefined when the response carries none. */
export function parseRateLimit(headers: Headers, observedAt: number): RateLimitInfo | undefined {
  const limit = nonNegativeInt(headers.get('RateLimit-Limit'));
  const remaining = nonNegativeInt(headers.get('RateLimit-Remaining'));
  const resetSeconds = nonNegativeInt(headers.get('RateLimit-Reset'));
  if (limit === undefined || remaining === undefined || resetSeconds === undefined) return undefined;
  const window = /;\s*w=(\d+)/.exec(headers.get('RateLimit-Policy') ?? '');
  return { limit, remaining, resetSeconds, ...(window ? { windowSeconds: Number(window[1]) } : {}), observedAt };
}

/**
 * `Retry-After` in seconds: delta-seconds or an HTTP date (RFC 9110); undefined when
 * absent or unreadable. A date in the past is 0.
 */
export function parseRetryAfter(headers: Headers, now: number): number | undefined {
  const raw = headers.get('Retry-After');
  if (raw === null) return undefined;
  const seconds = nonNegativeInt(raw);
  if (seconds !== undefined) return seconds;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
