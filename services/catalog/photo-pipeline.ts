/**
 * The photo pipeline: fetches and processes pending photos in the background,
 * durably, with bounded concurrency.
 *
 * The queue is `catalog.photos` itself, a lease queue of the kit (kit/work): a `pending`
 * row is work. A worker claims up to its free slots, fairly per workspace (below), so
 * that replicas never take the same row, and stamps a lease (`lease_token`, `lease_until`
 * = now + PHOTO_LEASE_SECONDS), renewed every third of the lease while the fetch runs. If the process dies, the
 * renewals stop, the lease runs out and any replica (or the restarted process)
 * claims the row again: processing resumes after a crash. A row claimed more than
 * MAX_ATTEMPTS times (a photo that kills its worker every time) is rejected as
 * `unreachable` instead of looping for ever; and a photo claimed again after a claim
 * that never finished is decoded alone (the whole decode budget), so that a photo
 * that kills its process takes no other photo's attempts with it.
 *
 * Memory is bounded before that can happen: photos are judged on their
 * header and decoded within the per-process decode budget (photo-processor.ts), and
 * one that could never fit is settled `too_large` at its first claim, never retried.
 *
 * A result is written in one transaction that first locks the property, then checks
 * the row is still pending under this claim (a photo dropped by a newer push, or
 * re-claimed after a lost lease, is discarded), stores the derivative in
 * `catalog.photo_blobs` (deduplicated by sha256), settles the row and republishes the
 * property — so `photos_processing` clears, publishability and the listing id follow
 * and the listing event is written without any partner action.
 *
 * At shutdown in-flight fetches are aborted and their claims released, so the next
 * process picks them up at once instead of after the lease.
 *
 * Fair scheduling (docs/catalog.md "Fair scheduling", house rule 17), the same shape
 * as the webhook dispatcher's per-endpoint claim: one workspace's slow or hostile photo
 * hosts never hold the workers the others need. A claim walks the workspaces that have
 * pending photos and takes each one's oldest, at most PHOTO_WORKSPACE_CONCURRENCY of a
 * workspace in flight in this process, round-robin with the workspaces that have the
 * fewest in flight first (every workspace's first before anyone's second); a photo
 * still running after SLOW_FETCH_MS moves from the fast lane (PHOTO_CONCURRENCY slots)
 * to a slow lane of as many, and slow workspaces draw from the slow lane only
 * (photo-lanes.ts). The per-photo time budget is unchanged: a time-out is still
 * `unreachable`.
 */
import { randomUUID } from 'node:crypto';
import type { Sql } from '../kit/db';
import { logEvent, systemClock, type Clock, type Logger } from '../kit/base';
import { fetchAndProcessPhoto, type PhotoOutcome } from './photo-processor';
import { republishById } from './publication';
import { recordPhotoProcessed } from '../kit/telemetry';
import { LeaseQueue, PeriodicJob, Worker, type RoundResult } from '../kit/work';
import { PhotoLanes, type ClaimAllowance } from './photo-lanes';

/** Claims of one photo before it is given up as unreachable. */
export const MAX_ATTEMPTS = 5;
/** Unreferenced stored images older than this are deleted by housekeeping. */
const ORPHAN_GRACE_HOURS = 1;
const HOUSEKEEPING_EVERY_MS = 10 * 60 * 1000;
/** How often pending photos queued by a previous release (no workspace yet) are looked for. */
const ADOPT_EVERY_MS = 5000;

/** The photos as a lease queue (kit/work): claimed per workspace, leased by `lease_token`. */
const photoQueue = new LeaseQueue({ table: 'catalog.photos', key: ['property_id', 'url'], group: 'workspace_id', owner: 'lease_token' });

export interface PhotoPipelineOptions {
  sql: Sql;
  log: Logger;
  /** PHOTO_CONCURRENCY: photos in flight at once in this process in each lane (fast, slow: photo-lanes.ts). */
  concurrency: number;
  /** PHOTO_WORKSPACE_CONCURRENCY: photos of one workspace in flight at once in this process. */
  workspaceConcurrency: number;
  /** PHOTO_LEASE_SECONDS. */
  leaseSeconds: number;
  /** PHOTO_FETCH_TIMEOUT_MS. */
  fetchTimeoutMs: number;
  /** EGRESS_ALLOW_CIDRS. */
  allowCidrs: readonly string[];
  /** Called after a result wrote listing events (nudges the outbox relay). */
  onEvents: () => void;
  /** Idle poll interval (picks up other replicas' pushes and expired leases); default 1000 ms. */
  pollMs?: number;
  /** The fetch-and-decode step; injectable for unit tests. */
  process?: PhotoStep;
  /** The loop's waits, lease renewals and housekeeping period; default the system's. */
  clock?: Clock;
}

/** Fetches and processes one photo; `alone` asks for a decode with the whole budget. */
export type PhotoStep = (url: string, signal: AbortSignal, opts: { alone: boolean }) => Promise<PhotoOutcome>;

interface Claim {
  property_id: string;
  workspace_id: string;
  url: string;
  attempts: number;
}

export class PhotoPipeline {
  private readonly sql: Sql;
  private readonly log: Logger;
  private readonly process: PhotoStep;
  /** The claim token of each photo in flight, by `property_id url`. */
  private readonly inflight = new Map<string, string>();
  private readonly worker: Worker;
  private readonly housekeeping: PeriodicJob;
  /** In-flight counts per workspace and slow workspaces: the fair claim's inputs. */
  private readonly lanes: PhotoLanes;
  private lastAdopt = -Infinity;
  private readonly clock: Clock;

  constructor(private readonly opts: PhotoPipelineOptions) {
    this.sql = opts.sql;
    this.log = opts.log;
    const pollMs = opts.pollMs ?? 1000;
    this.clock = opts.clock ?? systemClock;
    this.lanes = new PhotoLanes({ concurrency: opts.concurrency, perWorkspace: opts.workspaceConcurrency });
    this.process = opts.process ?? ((url, signal, { alone }) => fetchAndProcessPhoto(url, { allowCidrs: opts.allowCidrs, timeoutMs: opts.fetchTimeoutMs, signal, alone }));
    this.worker = new Worker({
      name: 'photo-pipeline',
      clock: this.clock,
      idleMs: pollMs,
      backoff: { baseMs: pollMs * 2, maxMs: 10_000 },
      round: () => this.round(),
      onError: (err, retryInMs) => this.log.error({ err, retry_in_ms: retryInMs }, 'photo pipeline: claiming work failed; retrying'),
      // Every third of the lease while fetches run, so a slow one is not taken by another worker.
      lease: { everyMs: Math.max(500, (opts.leaseSeconds * 1000) / 3), renew: () => this.renewLeases() },
    });
    this.housekeeping = new PeriodicJob(
      () => this.deleteUnreferencedBlobs(),
      HOUSEKEEPING_EVERY_MS,
      (err) =>
        // A concurrent reference (foreign key) or a database hiccup: try again next round.
        this.log.warn({ err }, 'photo pipeline: housekeeping failed'),
      'photo-blobs-prune',
      this.clock,
    );
  }

  start(): void {
    this.worker.start();
    this.housekeeping.start();
  }

  /** Wakes the pipeline now (after a push queued photos). */
  nudge(): void {
    this.worker.nudge();
  }

  /** Stops claiming, aborts in-flight fetches, releases their claims and waits for them. */
  async stop(): Promise<void> {
    await Promise.all([this.worker.stop(0), this.housekeeping.stop()]);
  }

  /** Claims work for the free slots and starts it; a finished job nudges the worker (a slot is free). */
  private async round(): Promise<RoundResult> {
    const allowance = this.lanes.allowance();
    if (allowance.freeFast <= 0 && allowance.freeSlow <= 0) return { items: 0, more: false };
    if (this.clock.now() - this.lastAdopt >= ADOPT_EVERY_MS) {
      this.lastAdopt = this.clock.now();
      await this.adoptUnassigned();
    }
    const claims = await this.claim(allowance);
    const slow = new Set(allowance.slow);
    let fast = 0;
    for (const c of claims) {
      const slowLane = slow.has(c.workspace_id);
      if (!slowLane) fast++;
      this.startJob(c, slowLane);
    }
    // A lane filled: more may be waiting. A claim held back by a workspace's limit is
    // not; a job's end nudges, and a photo moving to the slow lane (which frees a fast
    // slot without an event) is seen by the next idle poll.
    const filled = (fast > 0 && fast === allowance.freeFast) || (claims.length - fast > 0 && claims.length - fast === allowance.freeSlow);
    return { items: claims.length, more: filled };
  }

  /**
   * Gives pending photos queued by the previous release (during an upgrade, which
   * writes no workspace_id: migration 0002) their property's workspace, so the fair
   * claim sees them.
   */
  private async adoptUnassigned(): Promise<void> {
    const adopted = await this.sql`
      update catalog.photos p set workspace_id = pr.workspace_id
      from catalog.properties pr
      where p.workspace_id is null and p.state = 'pending' and pr.id = p.property_id
    `;
    if (adopted.count > 0) this.log.info({ adopted: adopted.count }, 'photo pipeline: pending photos queued without a workspace were given theirs');
  }

  /**
   * Claims pending photos whose lease is free, fairly, in one statement of the lease
   * queue (kit/work: the workspaces with pending photos `ws`, this process's in-flight
   * counts `used` and slow workspaces `slow`, then lock and lease, one more attempt
   * counted), with the pipeline's fairness rules:
   * 1. eps: each workspace's room (PHOTO_WORKSPACE_CONCURRENCY less what this process
   *    has in flight for it) and lane (slow or not: photo-lanes.ts);
   * 2. cand: each workspace's oldest free photos up to its room, each with its turn: the
   *    workspace's in-flight count plus its rank, so the workspaces with the fewest in
   *    flight come first and every workspace's next photo comes before anyone's one after;
   * 3. chosen: by turn (then age), each lane's candidates up to its free slots, all of
   *    them up to the room left within both lanes.
   */
  private async claim(a: ClaimAllowance): Promise<(Claim & { token: string })[]> {
    const sql = this.sql;
    const token = randomUUID();
    const rows = await photoQueue.claim<Claim>(sql, {
      token,
      leaseSeconds: this.opts.leaseSeconds,
      busy: a.busy,
      slow: a.slow,
      rules: sql`eps as (
        select ws.workspace_id, coalesce(u.n, 0) as busy, ${this.lanes.limits.perWorkspace}::int - coalesce(u.n, 0) as room,
               s.workspace_id is not null as slow_lane
        from ws
        left join used u on u.workspace_id = ws.workspace_id
        left join slow s on s.workspace_id = ws.workspace_id
        where ws.workspace_id is not null
      ), cand as (
        select eps.workspace_id, eps.slow_lane, x.property_id, x.url, x.created_at,
               eps.busy + row_number() over (partition by eps.workspace_id order by x.created_at, x.property_id, x.url) as turn
        from eps cross join lateral (
          select p.property_id, p.url, p.created_at from catalog.photos p
          where p.workspace_id = eps.workspace_id and ${photoQueue.free(sql, 'p')}
          order by p.created_at, p.property_id, p.url
          limit greatest(eps.room, 0)
        ) x
        where eps.room > 0
      ), lane as (
        select cand.*, row_number() over (partition by cand.slow_lane order by cand.turn, cand.created_at, cand.property_id, cand.url) as pos
        from cand
      ), chosen as (
        select property_id, url from (
          select lane.property_id, lane.url, row_number() over (order by lane.turn, lane.created_at, lane.property_id, lane.url) as n
          from lane where lane.pos <= case when lane.slow_lane then ${a.freeSlow}::int else ${a.freeFast}::int end
        ) e
        where e.n <= ${a.free}::int
      )`,
      take: sql`select property_id, url from chosen`,
      set: sql`attempts = t.attempts + 1`,
      returning: sql`t.property_id, t.workspace_id, t.url, t.attempts`,
      result: sql`select property_id, workspace_id, url, attempts from leased`,
    });
    return rows.map((r) => ({ ...r, token }));
  }

  private startJob(c: Claim & { token: string }, slowLane: boolean): void {
    const key = `${c.property_id} ${c.url}`;
    this.inflight.set(key, c.token);
    const running = this.lanes.started(c.workspace_id, slowLane);
    let sample = false;
    this.worker.spawn((signal) =>
      this.runJob(c, signal)
        .then((fetched) => void (sample = fetched))
        .catch((err) => this.log.error({ err, property_id: c.property_id }, 'photo pipeline: job failed; the photo is retried when its lease ends'))
        .finally(() => {
          this.inflight.delete(key);
          this.lanes.ended(running, sample);
        }),
    );
  }

  /** Fetches, processes and settles one claimed photo; true when its time says something about its host (it was fetched, not aborted). */
  private async runJob(c: Claim & { token: string }, signal: AbortSignal): Promise<boolean> {
    let outcome: PhotoOutcome;
    let fetched = false;
    if (c.attempts > MAX_ATTEMPTS) {
      outcome = { ok: false, reason: 'unreachable', detail: `given up after ${MAX_ATTEMPTS} attempts` };
    } else {
      const started = Date.now();
      // attempts > 1: an earlier claim ended without a result (a crash, a lost lease, or a shutdown).
      outcome = await this.process(c.url, signal, { alone: c.attempts > 1 });
      fetched = true;
      this.log.debug({ property_id: c.property_id, ok: outcome.ok, reason: outcome.ok ? undefined : outcome.reason, ms: Date.now() - started }, 'photo processed');
    }
    if (!outcome.ok && outcome.reason === 'aborted') {
      await photoQueue.release(this.sql, { property_id: c.property_id, url: c.url }, c.token);
      return false;
    }
    if (!outcome.ok) this.log.info({ event: logEvent('catalog.photo.rejected'), property_id: c.property_id, reason: outcome.reason, detail: outcome.detail }, 'photo rejected');
    recordPhotoProcessed(outcome.ok ? 'ready' : outcome.reason);
    const events = await this.settle(c, outcome);
    if (events > 0) this.opts.onEvents();
    return fetched;
  }

  /** Writes the outcome and republishes the property; returns how many events were written. */
  private async settle(c: Claim & { token: string }, outcome: Exclude<PhotoOutcome, { reason: 'aborted' }>): Promise<number> {
    return this.sql.begin<number>(async (tx) => {
      // Property first, then photo: the same lock order as UpsertProperty.
      const [property] = await tx`select id from catalog.properties where id = ${c.property_id} for update`;
      if (!property) return 0;
      const [mine] = await tx`
        select 1 from catalog.photos p
        where p.property_id = ${c.property_id} and p.url = ${c.url} and ${photoQueue.held(tx, 'p', c.token)}
        for update
      `;
      if (!mine) return 0; // dropped by a newer push, or re-claimed after the lease ran out
      if (outcome.ok) {
        const ph = outcome.photo;
        // Touching created_at keeps housekeeping off a blob that is about to be referenced again.
        await tx`
          insert into catalog.photo_blobs (sha256, content_type, width, height, bytes)
          values (${ph.sha256}, ${ph.contentType}, ${ph.width}, ${ph.height}, ${ph.bytes})
          on conflict (sha256) do update set created_at = now()
        `;
        await tx`
          update catalog.photos
          set state = 'processed', blob_sha256 = ${ph.sha256},
              source_content_type = ${ph.source.contentType}, source_width = ${ph.source.width},
              source_height = ${ph.source.height}, source_bytes = ${ph.source.bytes},
              lease_token = null, lease_until = null, finished_at = now()
          where property_id = ${c.property_id} and url = ${c.url}
        `;
      } else {
        await tx`
          update catalog.photos
          set state = 'rejected', rejection_reason = ${outcome.reason},
              lease_token = null, lease_until = null, finished_at = now()
          where property_id = ${c.property_id} and url = ${c.url}
        `;
      }
      const result = await republishById(tx, c.property_id, { contentChanged: false, photosChanged: true });
      return result.events.length;
    });
  }

  /** Extends the leases of the photos in flight, so a slow fetch is not taken by another worker. */
  private async renewLeases(): Promise<void> {
    const tokens = [...new Set(this.inflight.values())];
    try {
      await photoQueue.renew(this.sql, tokens, this.opts.leaseSeconds);
    } catch (err) {
      this.log.warn({ err }, 'photo pipeline: renewing leases failed');
    }
  }

  /** Deletes stored images no photo refers to any more (photos dropped by later pushes). */
  private async deleteUnreferencedBlobs(): Promise<void> {
    const deleted = await this.sql`
      delete from catalog.photo_blobs b
      where b.created_at < now() - make_interval(hours => ${ORPHAN_GRACE_HOURS})
        and not exists (select 1 from catalog.photos p where p.blob_sha256 = b.sha256)
    `;
    if (deleted.count > 0) this.log.info({ deleted: deleted.count }, 'photo pipeline: unreferenced stored images deleted');
  }
}
