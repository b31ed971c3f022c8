/**
 * Group commit, shared by the intake (events → delivery rows) and the dispatcher
 * (attempt outcomes): items submitted while a write is running go into the next write,
 * at most `maxBatch` per write. A busy writer serves many items per round trip; an idle
 * one writes each item at once. `submit` resolves with the item's result once its
 * batch is written, or rejects if the write failed.
 */
export interface GroupCommitOptions<T, R> {
  /** Most items in one write. */
  maxBatch: number;
  /** Writes one batch; returns one result per item, in the batch's order. */
  write: (batch: T[]) => Promise<R[]>;
  /**
   * When a batch fails, write its items again one by one, so that only the item at fault
   * fails. Without this option every item of the failed batch fails.
   */
  isolateFailures?: boolean;
}

interface Queued<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
}

export class GroupCommit<T, R> {
  private readonly queue: Queued<T, R>[] = [];
  private writing = false;

  constructor(private readonly opts: GroupCommitOptions<T, R>) {}

  /** Queues `item` for the next write; resolves with its result once that write is done. */
  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.opts.maxBatch);
        try {
          const results = await this.opts.write(batch.map((q) => q.item));
          batch.forEach((q, i) => q.resolve(results[i] as R));
        } catch (err) {
          if (!this.opts.isolateFailures || batch.length === 1) {
            for (const q of batch) q.reject(err);
            continue;
          }
          // Find the item at fault: each on its own.
          for (const q of batch) {
            try {
              const [result] = await this.opts.write([q.item]);
              q.resolve(result as R);
            } catch (e) {
              q.reject(e);
            }
          }
        }
      }
    } finally {
      this.writing = false;
    }
  }
}
