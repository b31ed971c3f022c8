/**
 * What the photo pipeline's fair claim needs to know about this process's work
 * (docs/catalog.md "Fair scheduling"), the photo counterpart of the webhook
 * dispatcher's per-endpoint counts and lanes (services/notifications/dispatcher.ts):
 *
 * - how many photos of each workspace are in flight here: the claim gives a workspace
 *   at most `perWorkspace` at once, and a workspace with fewer in flight is served
 *   before one with more (its next photo's turn is its in-flight count plus one);
 * - two lanes of `concurrency` slots each. A photo runs in the fast lane unless its
 *   workspace is slow when it is claimed; a photo still running SLOW_FETCH_MS after it
 *   started moves to the slow lane, so it stops holding a fast slot. A workspace is
 *   slow while one of its photos has run that long, or while its recent photos took
 *   longer than that on average (a time-out counts as its whole duration). Whatever
 *   slow or hostile photo hosts do, they hold fast slots for SLOW_FETCH_MS at most,
 *   and the fast lane stays with the workspaces whose hosts answer.
 * - Everything in flight stays within both lanes together (2 × concurrency): a photo
 *   moved to a full slow lane still counts, and new work waits for room.
 *
 * Counts are per process, like the dispatcher's: each catalog replica keeps the rule
 * for its own workers, so it holds cluster-wide in proportion, with no shared counter
 * to keep right across crashes.
 */

/** A photo running longer than this (fetch, decode and result) moves to the slow lane; a workspace whose photos take longer on average is slow. The dispatcher's SLOW_ATTEMPT_MS. */
export const SLOW_FETCH_MS = 2000;
/** Workspaces whose photo times are remembered per process at most (the least recently updated are forgotten first). */
const LATENCY_MEMORY = 10_000;
/** Weight of the newest sample in the moving average (the dispatcher's 0.3). */
const NEWEST_WEIGHT = 0.3;

export interface PhotoLaneLimits {
  /** PHOTO_CONCURRENCY: slots of each lane in this process. */
  concurrency: number;
  /** PHOTO_WORKSPACE_CONCURRENCY: photos of one workspace in flight in this process. */
  perWorkspace: number;
}

/** What one claim may take: the statement's inputs. */
export interface ClaimAllowance {
  /** Photos the claim may take in all (room left within both lanes together). */
  free: number;
  /** Of which, at most this many in the fast lane (workspaces not slow)… */
  freeFast: number;
  /** …and at most this many in the slow lane (slow workspaces). */
  freeSlow: number;
  /** Photos in flight here per workspace (workspace id, count). */
  busy: [string, number][];
  /** Workspaces that draw from the slow lane. */
  slow: string[];
}

/** A photo in flight. */
interface Running {
  workspaceId: string;
  startedAt: number;
  /** Claimed for a slow workspace. */
  slowLane: boolean;
}

/** A handle on a photo in flight, given back to ended(). */
export type RunningPhoto = Readonly<Running>;

export class PhotoLanes {
  private readonly running = new Set<Running>();
  private readonly perWorkspace = new Map<string, Running[]>();
  /** Moving average of photo time (ms) per workspace, most recently updated last. */
  private readonly latency = new Map<string, number>();

  constructor(
    readonly limits: PhotoLaneLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Photos in flight here. */
  get inFlight(): number {
    return this.running.size;
  }

  /** Photos of `workspaceId` in flight here. */
  inFlightOf(workspaceId: string): number {
    return this.perWorkspace.get(workspaceId)?.length ?? 0;
  }

  /** A photo of `workspaceId` starts, claimed in the slow lane or not. */
  started(workspaceId: string, slowLane: boolean): RunningPhoto {
    const r: Running = { workspaceId, startedAt: this.now(), slowLane };
    this.running.add(r);
    const list = this.perWorkspace.get(workspaceId);
    if (list) list.push(r);
    else this.perWorkspace.set(workspaceId, [r]);
    return r;
  }

  /**
   * The photo `r` ended; `sample` says whether its duration says anything about the
   * photo host (false: given up without a fetch, or aborted by shutdown).
   */
  ended(r: RunningPhoto, sample: boolean): void {
    if (!this.running.delete(r)) return;
    const list = this.perWorkspace.get(r.workspaceId)!;
    list.splice(list.indexOf(r), 1);
    if (list.length === 0) this.perWorkspace.delete(r.workspaceId);
    if (sample) this.noteLatency(r.workspaceId, this.now() - r.startedAt);
  }

  /** Whether `workspaceId` draws from the slow lane now. */
  isSlow(workspaceId: string): boolean {
    const avg = this.latency.get(workspaceId);
    if (avg !== undefined && avg > SLOW_FETCH_MS) return true;
    const oldest = this.perWorkspace.get(workspaceId)?.[0];
    return oldest !== undefined && this.isLong(oldest);
  }

  /** What a claim may take now. */
  allowance(): ClaimAllowance {
    const { concurrency } = this.limits;
    let slowUsed = 0;
    for (const r of this.running) if (r.slowLane || this.isLong(r)) slowUsed++;
    const fastUsed = this.running.size - slowUsed;
    const slow = new Set<string>();
    for (const ws of this.latency.keys()) if (this.isSlow(ws)) slow.add(ws);
    for (const ws of this.perWorkspace.keys()) if (this.isSlow(ws)) slow.add(ws);
    const free = Math.max(0, 2 * concurrency - this.running.size);
    return {
      free,
      freeFast: Math.min(free, Math.max(0, concurrency - fastUsed)),
      freeSlow: Math.min(free, Math.max(0, concurrency - slowUsed)),
      busy: [...this.perWorkspace].map(([ws, list]) => [ws, list.length]),
      slow: [...slow],
    };
  }

  /** Running longer than SLOW_FETCH_MS: counted in the slow lane. */
  private isLong(r: Running): boolean {
    return this.now() - r.startedAt > SLOW_FETCH_MS;
  }

  private noteLatency(workspaceId: string, ms: number): void {
    const prev = this.latency.get(workspaceId);
    this.latency.delete(workspaceId);
    this.latency.set(workspaceId, prev === undefined ? ms : prev * (1 - NEWEST_WEIGHT) + ms * NEWEST_WEIGHT);
    if (this.latency.size > LATENCY_MEMORY) this.latency.delete(this.latency.keys().next().value!);
  }
}
