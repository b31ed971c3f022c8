/**
 * Timer-driven background jobs (hold expiry, event retention, outbox housekeeping), on
 * the kit's Worker (worker.ts): no nudges, no overlap.
 */
import { systemClock, type Clock } from '../base';
import { Worker } from './worker';

/**
 * A background job run now and then: first after `firstDelayMs`, then `intervalMs`
 * after each run ends, so runs never overlap. A run that fails is handed to `onError`
 * (a log line); the next one retries after the interval. stop() clears the timer and
 * waits for the run in flight: register it with ctx.shutdown. The timer never keeps
 * the process alive.
 */
export class PeriodicJob {
  private worker: Worker | null = null;
  private stopped = false;

  constructor(
    private readonly run: () => Promise<unknown>,
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void,
    /** Metrics label (worker.ts); default `periodic`. */
    private readonly name = 'periodic',
    /** The timers' clock; default the system's. */
    private readonly clock: Clock = systemClock,
  ) {}

  start(firstDelayMs = this.intervalMs): void {
    this.stopped = false;
    this.worker = new Worker({
      name: this.name,
      idleMs: this.intervalMs,
      firstDelayMs,
      wakeOnNudge: false,
      clock: this.clock,
      // A failed run waits one interval, like any other.
      backoff: { baseMs: this.intervalMs, maxMs: this.intervalMs, jitter: 0 },
      round: async () => {
        await this.run();
        return { items: 1, more: false };
      },
      onError: (err) => this.onError(err),
    });
    this.worker.start();
  }

  /** True once stop() was called: a long run may check it between steps. */
  get isStopped(): boolean {
    return this.stopped;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.worker?.stop();
  }
}

/**
 * Housekeeping that deletes in bounded batches: `firstDelayMs` (default 0) after start
 * and then every `everyMs`, runs `pruneOnce` (one statement deleting at most `batch`
 * rows, returning how many) until a batch comes back short or stop() is called, then
 * reports the total through `onPruned`. A failure costs one warning and is retried at
 * the next run.
 */
export class BatchPruner {
  private readonly job: PeriodicJob;

  constructor(
    private readonly opts: {
      pruneOnce: () => Promise<number>;
      batch: number;
      everyMs: number;
      /** Delay of the first run; default 0. */
      firstDelayMs?: number;
      /** Metrics label (worker.ts); default `pruner`. */
      name?: string;
      /** Called after a run that deleted something. */
      onPruned: (deleted: number) => void;
      /** Called when a run failed. */
      onError: (err: unknown) => void;
      /** The timers' clock; default the system's. */
      clock?: Clock;
    },
  ) {
    this.job = new PeriodicJob(
      async () => {
        const deleted = await this.pruneAll();
        if (deleted > 0) opts.onPruned(deleted);
      },
      opts.everyMs,
      opts.onError,
      opts.name ?? 'pruner',
      opts.clock,
    );
  }

  start(): void {
    this.job.start(this.opts.firstDelayMs ?? 0);
  }

  /** Stops the timer and waits for the batch in flight. */
  async stop(): Promise<void> {
    await this.job.stop();
  }

  /** Prunes batch after batch until one comes back short (or stop()); returns how many were deleted. */
  async pruneAll(): Promise<number> {
    let deleted = 0;
    for (;;) {
      const n = await this.opts.pruneOnce();
      deleted += n;
      if (n < this.opts.batch || this.job.isStopped) return deleted;
    }
  }
}
