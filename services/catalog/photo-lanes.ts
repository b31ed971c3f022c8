/**
 * What the photo pipeline's fair claim needs to know about this process's work
 * (docs/catalog.md "Fair scheduling"), the photo counterpart of the webhook
 * dispatcher's per-endpoint counts and lanes (services/notifications/dispatcher.ts):
 *
 * - how many photos of each workspace are in flight here: the claim gives a workspace
 *   at most `perWorkspace` at once, and a workspace with fewer in flight is served
 *   before one with more (its next photo's turn is its in-flight count plus one);
 * - which workspaces are slow: their recent fetches took longer than SLOW_FETCH_MS on
 *   average (a time-out counts as its whole duration), or one of their fetches has
 *   been running longer than that now. Slow workspaces draw from one shared slow lane
 *   of `perWorkspace` slots between all of them, so however many workspaces have
 *   slow or hostile photo hosts, they hold together no more workers than one workspace
 *   may, and the other `concurrency − perWorkspace` stay with healthy workspaces.
 *
 * Counts are per process, like the dispatcher's: each catalog replica keeps the rule
 * for its own workers, so it holds cluster-wide in proportion (each replica leaves
 * `concurrency − perWorkspace` of its workers to the others), with no shared counter
 * to keep right across crashes.
 */

/** A workspace whose photos take longer than this to fetch and process (moving average, or one fetch running now) is slow. */
export const SLOW_FETCH_MS = 5000;
/** Workspaces whose fetch times are remembered per process at most (the least recently updated are forgotten first). */
const LATENCY_MEMORY = 10_000;
/** Weight of the newest sample in the moving average (the dispatcher's 0.3). */
const NEWEST_WEIGHT = 0.3;

export interface PhotoLaneLimits {
  /** PHOTO_CONCURRENCY: photos in flight in this process. */
  concurrency: number;
  /** PHOTO_WORKSPACE_CONCURRENCY: photos of one workspace in flight in this process; also the slow lane's slots. */
  perWorkspace: number;
}

/** What one claim may take: the statement's inputs. */
export interface ClaimAllowance {
  /** Photos the claim may take in all (free workers). */
  free: number;
  /** Of which, at most this many for slow workspaces. */
  freeSlow: number;
  /** Photos in flight here per workspace (workspace id, count). */
  busy: [string, number][];
  /** Workspaces that draw from the slow lane. */
  slow: string[];
}

export class PhotoLanes {
  /** Start times (ms) of the photos in flight here, per workspace. */
  private readonly running = new Map<string, number[]>();
  /** Moving average of fetch-and-process time (ms) per workspace, most recently updated last. */
  private readonly latency = new Map<string, number>();
  private total = 0;

  constructor(
    readonly limits: PhotoLaneLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Photos in flight here. */
  get inFlight(): number {
    return this.total;
  }

  /** Photos of `workspaceId` in flight here. */
  inFlightOf(workspaceId: string): number {
    return this.running.get(workspaceId)?.length ?? 0;
  }

  /** A photo of `workspaceId` starts; returns its start time, to give back to ended(). */
  started(workspaceId: string): number {
    const at = this.now();
    const list = this.running.get(workspaceId);
    if (list) list.push(at);
    else this.running.set(workspaceId, [at]);
    this.total++;
    return at;
  }

  /**
   * The photo of `workspaceId` started at `startedAt` ended; `sample` says whether its
   * duration says anything about the photo host (false: given up without a fetch, or
   * aborted by shutdown).
   */
  ended(workspaceId: string, startedAt: number, sample: boolean): void {
    const list = this.running.get(workspaceId);
    const i = list?.indexOf(startedAt) ?? -1;
    if (!list || i < 0) return;
    list.splice(i, 1);
    if (list.length === 0) this.running.delete(workspaceId);
    this.total--;
    if (sample) this.noteLatency(workspaceId, this.now() - startedAt);
  }

  /** Whether `workspaceId` draws from the slow lane now. */
  isSlow(workspaceId: string): boolean {
    const avg = this.latency.get(workspaceId);
    if (avg !== undefined && avg > SLOW_FETCH_MS) return true;
    const oldest = this.running.get(workspaceId)?.[0];
    return oldest !== undefined && this.now() - oldest > SLOW_FETCH_MS;
  }

  /** What a claim may take now (free workers, free slow-lane slots, in-flight counts, slow workspaces). */
  allowance(): ClaimAllowance {
    const slow = new Set<string>();
    for (const ws of this.latency.keys()) if (this.isSlow(ws)) slow.add(ws);
    for (const ws of this.running.keys()) if (this.isSlow(ws)) slow.add(ws);
    let slowInFlight = 0;
    for (const ws of slow) slowInFlight += this.inFlightOf(ws);
    return {
      free: Math.max(0, this.limits.concurrency - this.total),
      freeSlow: Math.max(0, this.limits.perWorkspace - slowInFlight),
      busy: [...this.running].map(([ws, list]) => [ws, list.length]),
      slow: [...slow],
    };
  }

  private noteLatency(workspaceId: string, ms: number): void {
    const prev = this.latency.get(workspaceId);
    this.latency.delete(workspaceId);
    this.latency.set(workspaceId, prev === undefined ? ms : prev * (1 - NEWEST_WEIGHT) + ms * NEWEST_WEIGHT);
    if (this.latency.size > LATENCY_MEMORY) this.latency.delete(this.latency.keys().next().value!);
  }
}
