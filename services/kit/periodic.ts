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
