/**
 * The standard gRPC health-checking protocol (`grpc.health.v1.Health`), served by
 * every internal service process so Kubernetes gRPC probes and any stock gRPC client
 * can ask "are you serving?".
 *
 * A service is SERVING only once its migrations ran and its live checks (database
 * `select 1`, bus ping) pass; the empty service name "" stands for the whole process.
 * Only an authenticated caller learns about one service, or that a name is not hosted
 * (NOT_FOUND); anyone else is answered about the whole process (askedAbout).
 */
import type { ConnectRouter } from '@connectrpc/connect';
import { Code, ConnectError } from '@connectrpc/connect';
import { Health, HealthCheckResponse_ServingStatus as Status } from '../../../gen/grpc/health/v1/health_pb';
import { CALLER } from './internal-auth';

export { Status as ServingStatus };

/** Health-check name that only says "the process is alive". */
export const LIVENESS = 'liveness';

/** A live check run on every Check call; throwing means NOT_SERVING. */
export type LiveCheck = () => Promise<void>;

/** Health state of one process: which services it hosts and whether they are ready. */
export class HealthState {
  private readonly ready = new Map<string, boolean>();
  private readonly checks: LiveCheck[] = [];
  private readonly listeners = new Set<() => void>();
  private shuttingDown = false;

  /** Declares a hosted service (fully-qualified name), initially NOT_SERVING. */
  declare(service: string): void {
    this.ready.set(service, false);
  }

  /** Marks a hosted service ready (migrations done, workers started). */
  setReady(service: string, ready = true): void {
    this.ready.set(service, ready);
    this.notify();
  }

  /** Adds a dependency check (database, bus) evaluated on every probe. */
  addCheck(check: LiveCheck): void {
    this.checks.push(check);
  }

  /** From now on every service reports NOT_SERVING (SIGTERM drain). */
  startShutdown(): void {
    this.shuttingDown = true;
    this.notify();
  }

  /**
   * Status of `service` ("" = the whole process); undefined when not hosted here.
   * The name "liveness" is SERVING while the process runs (Kubernetes liveness must
   * not restart pods because the database is down; readiness covers that).
   */
  async status(service: string): Promise<Status | undefined> {
    if (service === LIVENESS) return Status.SERVING;
    const known = service === '' ? this.ready.size > 0 : this.ready.has(service);
    if (!known) return undefined;
    if (this.shuttingDown) return Status.NOT_SERVING;
    const flags = service === '' ? [...this.ready.values()] : [this.ready.get(service)];
    if (!flags.every(Boolean)) return Status.NOT_SERVING;
    try {
      await Promise.all(this.checks.map((c) => withTimeout(c(), 2000)));
      return Status.SERVING;
    } catch {
      return Status.NOT_SERVING;
    }
  }

  /** Resolves at the next state change or when `signal` aborts. */
  changed(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.listeners.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.listeners.add(done);
      signal.addEventListener('abort', done);
    });
  }

  private notify(): void {
    for (const l of [...this.listeners]) l();
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`check timed out after ${ms} ms`)), ms);
    p.then(
      (v) => (clearTimeout(t), resolve(v)),
      (e) => (clearTimeout(t), reject(e)),
    );
  });
}

/**
 * What `service` means to a caller: an authenticated one (a configured role, or in
 * process) asks about that service; an anonymous one (a kubelet probe, a scanner) is
 * answered about the whole process whatever the name, so the answer never says which
 * services a port hosts (docs/security/internal-access.md). A probe naming the service
 * of its pod still gets that pod's truth: a process is SERVING only when all it hosts is.
 */
function askedAbout(service: string, authenticated: boolean): string {
  return authenticated || service === LIVENESS ? service : '';
}

/** Registers grpc.health.v1.Health on `router`, answering from `state`. */
export function registerHealth(router: ConnectRouter, state: HealthState): void {
  router.service(Health, {
    async check(req, ctx) {
      const status = await state.status(askedAbout(req.service, ctx.values.get(CALLER) !== undefined));
      if (status === undefined) throw new ConnectError(`unknown service "${req.service}"`, Code.NotFound);
      return { status };
    },
    async *watch(req, ctx) {
      const service = askedAbout(req.service, ctx.values.get(CALLER) !== undefined);
      // Per the protocol: send the current status now and again on every change.
      let last: Status | undefined;
      while (!ctx.signal.aborted) {
        const status = (await state.status(service)) ?? Status.SERVICE_UNKNOWN;
        if (status !== last) {
          last = status;
          yield { status };
        }
        await Promise.race([state.changed(ctx.signal), new Promise((r) => setTimeout(r, 5000))]);
      }
    },
  });
}
