/**
 * Graceful shutdown: SIGTERM (and SIGINT) run the registered hooks in reverse order
 * of registration — stop accepting work, drain in-flight requests and deliveries,
 * then close the bus and the database — and exit 0. A hook that fails or hangs past
 * the grace period is logged and skipped, so Kubernetes never waits forever.
 */
import { logEvent, type Logger } from '../base';

type Hook = { name: string; run: () => Promise<void> | void };

export class Shutdown {
  private readonly hooks: Hook[] = [];
  private running: Promise<void> | undefined;

  constructor(
    private readonly log: Logger,
    private readonly graceMs: number,
  ) {}

  /** Registers a hook; hooks run last-registered first. */
  add(name: string, run: Hook['run']): void {
    this.hooks.push({ name, run });
  }

  /** Installs the SIGTERM/SIGINT handlers that call `run()` and exit. */
  installSignalHandlers(): void {
    const onSignal = (signal: NodeJS.Signals) => {
      this.log.info({ signal }, 'shutting down: draining in-flight work');
      this.run().then(
        () => {
          this.log.info({ event: logEvent('process.shutdown.complete') }, 'shutdown complete');
          process.exit(0);
        },
        (err) => {
          this.log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    // A second signal during the drain is ignored: the drain is already under way and
    // bounded by the grace period (exiting on it would skip the clean exit 0).
    let received = false;
    const handler = (signal: NodeJS.Signals) => {
      if (received) return;
      received = true;
      onSignal(signal);
    };
    process.on('SIGTERM', handler);
    process.on('SIGINT', handler);
  }

  /** Runs every hook once (idempotent), bounded by the grace period. */
  run(): Promise<void> {
    this.running ??= this.runHooks();
    return this.running;
  }

  private async runHooks(): Promise<void> {
    const deadline = Date.now() + this.graceMs;
    for (const hook of [...this.hooks].reverse()) {
      const left = Math.max(deadline - Date.now(), 100);
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          Promise.resolve().then(hook.run),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`"${hook.name}" did not finish within the grace period`)), left);
          }),
        ]);
      } catch (err) {
        this.log.warn({ err, hook: hook.name }, 'shutdown hook failed');
      } finally {
        clearTimeout(timer);
      }
    }
  }
}
