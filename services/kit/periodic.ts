/**
 * A background job run now and then (hold expiry, event retention): first after
 * `firstDelayMs`, then `intervalMs` after each run ends, so runs never overlap. A run
 * that fails is handed to `onError` (a log line); the next one retries. stop() clears
 * the timer and waits for the run in flight: register it with ctx.shutdown. The timer
 * never keeps the process alive.
 */
export class PeriodicJob {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly run: () => Promise<unknown>,
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(firstDelayMs = this.intervalMs): void {
    this.stopped = false;
    this.schedule(firstDelayMs);
  }

  /** True once stop() was called: a long run may check it between steps. */
  get isStopped(): boolean {
    return this.stopped;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.run()
        .then(() => undefined, this.onError)
        .finally(() => {
          this.running = undefined;
          this.schedule(this.intervalMs);
        });
    }, ms);
    this.timer.unref();
  }
}

/**
 * Housekeeping that deletes in bounded batches: at start and every `everyMs`, runs
 * `pruneOnce` (one statement deleting at most `batch` rows, returning how many) until a
 * batch comes back short or stop() is called, then reports the total through
 * `onPruned`. A failure costs one warning and is retried at the next run.
 */
export class BatchPruner {
  private readonly job: PeriodicJob;

  constructor(
    private readonly opts: {
      pruneOnce: () => Promise<number>;
      batch: number;
      everyMs: number;
      /** Called after a run that deleted something. */
      onPruned: (deleted: number) => void;
      /** Called when a run failed. */
      onError: (err: unknown) => void;
    },
  ) {
    this.job = new PeriodicJob(async () => {
      const deleted = await this.pruneAll();
      if (deleted > 0) opts.onPruned(deleted);
    }, opts.everyMs, opts.onError);
  }

  start(): void {
    this.job.start(0);
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
