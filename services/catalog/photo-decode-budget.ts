/**
 * The per-process decode budget: a weighted, first-come-first-served semaphore over
 * the estimated memory of photo decodes (photo-decode-cost.ts).
 *
 * PHOTO_CONCURRENCY bounds how many photos are fetched and processed at once, but not
 * what they cost: a 1600-pixel photo needs ~35 MB to decode and re-encode, a 100-MP
 * progressive JPEG of 880 KB over 340 MB (docs/catalog.md "Memory bounds"). So every decode first takes its
 * estimated bytes from this budget and gives them back when it ends, whatever the
 * outcome: the sum of the estimates of the decodes in flight never exceeds the
 * capacity, however many photos are fetched at once. A photo whose estimate alone is
 * over the capacity can never run; the caller rejects it (`too_large`) instead of
 * asking (acquire() refuses it with a RangeError rather than waiting for ever).
 *
 * Waiters are served strictly in arrival order: a large decode at the head is not
 * overtaken by a stream of small ones (it would starve), and a small one waits only
 * for the decodes ahead of it.
 */

/** Thrown by acquire() when the signal aborts the wait. */
export class DecodeWaitAborted extends Error {
  constructor() {
    super('aborted while waiting for decode memory');
    this.name = 'DecodeWaitAborted';
  }
}

interface Waiter {
  weight: number;
  grant: (release: () => void) => void;
}

export class DecodeBudget {
  private used = 0;
  private peak = 0;
  private readonly queue: Waiter[] = [];

  /** @param capacity the most the decodes in flight may add up to (bytes of the estimate). */
  constructor(readonly capacity: number) {
    if (!Number.isFinite(capacity) || capacity <= 0) throw new RangeError(`decode budget capacity must be positive, got ${capacity}`);
  }

  /** Sum of the weights held now. */
  get inUse(): number {
    return this.used;
  }

  /** Largest sum of weights ever held at once (for tests and diagnostics). */
  get highWater(): number {
    return this.peak;
  }

  /** Acquisitions waiting for room. */
  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Waits until `weight` fits (after every earlier waiter), then holds it. Resolves
   * with the release function (calling it more than once releases once). Rejects
   * with a RangeError if `weight` can never fit, with DecodeWaitAborted if `signal`
   * aborts first.
   */
  acquire(weight: number, signal?: AbortSignal): Promise<() => void> {
    if (!(weight > 0) || !Number.isFinite(weight)) return Promise.reject(new RangeError(`decode weight must be positive, got ${weight}`));
    if (weight > this.capacity) return Promise.reject(new RangeError(`decode weight ${weight} exceeds the budget of ${this.capacity}`));
    if (signal?.aborted) return Promise.reject(new DecodeWaitAborted());
    if (this.queue.length === 0 && this.used + weight <= this.capacity) return Promise.resolve(this.take(weight));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.queue.indexOf(waiter);
        if (i >= 0) this.queue.splice(i, 1);
        reject(new DecodeWaitAborted());
        // The head may have been the one blocking the others.
        this.drain();
      };
      const waiter: Waiter = {
        weight,
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  /** Runs `fn` holding `weight`, released when `fn` settles (also when it throws). */
  async run<T>(weight: number, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const release = await this.acquire(weight, signal);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  private take(weight: number): () => void {
    this.used += weight;
    this.peak = Math.max(this.peak, this.used);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= weight;
      this.drain();
    };
  }

  /** Grants waiters from the head while the head fits. */
  private drain(): void {
    while (this.queue.length > 0 && this.used + this.queue[0]!.weight <= this.capacity) {
      const w = this.queue.shift()!;
      w.grant(this.take(w.weight));
    }
  }
}
