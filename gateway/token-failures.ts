/**
 * Failed token exchanges are throttled (docs/decisions.md "Failed token exchanges").
 *
 * A refused exchange costs identity a key lookup and a log line; without a limit one
 * client could spend them without end. Failures are counted in fixed windows:
 *
 * - per client address: over TOKEN_FAILURES_PER_ADDRESS in TOKEN_FAILURE_WINDOW_SECONDS,
 *   that address's exchanges are answered `429` with `Retry-After` *before* identity is
 *   asked (no lookup, no log line);
 * - per presented key id (the public part of `psk_<key_id>_<secret>`): over
 *   TOKEN_FAILURES_PER_KEY, further *failures* for that key id are answered `429`
 *   instead of `401`. The exchange is still checked, so the right secret always gets
 *   its token: knowing a partner's key id (it is logged and printed) never lets anyone
 *   lock the partner out.
 *
 * Counts live in this gateway replica's memory (bounded: the oldest entries are dropped
 * beyond MAX_ENTRIES), so with N replicas behind a load balancer a client gets up to N
 * times the limit; it is a cost guard, not an accounting rule, and needs no database
 * round trip on the refusal path.
 */

/** How many addresses or key ids are remembered at most (oldest dropped first). */
const MAX_ENTRIES = 100_000;

interface Window {
  /** Epoch ms the window started. */
  start: number;
  failures: number;
}

/** Failures per key in fixed windows of `windowMs`; at most `limit` before refusing. */
export class FailureCounter {
  private readonly windows = new Map<string, Window>();

  constructor(
    readonly limit: number,
    private readonly windowMs: number,
    private readonly maxEntries = MAX_ENTRIES,
  ) {}

  /** Seconds until `key` may fail again (0 when it is under the limit). */
  retryAfterSeconds(key: string, now = Date.now()): number {
    const w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs || w.failures < this.limit) return 0;
    return Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000));
  }

  /** Records one failure of `key`. */
  fail(key: string, now = Date.now()): void {
    let w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs) {
      this.windows.delete(key); // re-inserted last: Map order is the eviction order
      if (this.windows.size >= this.maxEntries) this.windows.delete(this.windows.keys().next().value!);
      w = { start: now, failures: 0 };
      this.windows.set(key, w);
    }
    w.failures++;
  }

  /** Entries held (for tests). */
  get size(): number {
    return this.windows.size;
  }
}

/** The key id of a presented API key (`psk_<key_id>_<secret>`), if it has that shape. */
export function presentedKeyId(apiKey: string | undefined): string | undefined {
  return apiKey ? /^psk_([a-z2-7]{16})_/.exec(apiKey)?.[1] : undefined;
}

export interface TokenFailureLimits {
  perAddress: number;
  perKey: number;
  windowSeconds: number;
}

/** The two counters of the token endpoint. */
export class TokenFailureThrottle {
  readonly byAddress: FailureCounter;
  readonly byKey: FailureCounter;

  constructor(readonly limits: TokenFailureLimits) {
    this.byAddress = new FailureCounter(limits.perAddress, limits.windowSeconds * 1000);
    this.byKey = new FailureCounter(limits.perKey, limits.windowSeconds * 1000);
  }

  /** A refused exchange from `address`, presenting `keyId` when the key had that shape. */
  fail(address: string, keyId: string | undefined): void {
    this.byAddress.fail(address);
    if (keyId) this.byKey.fail(keyId);
  }
}
