/**
 * The photo pipeline: fetches and processes pending photos in the background,
 * durably, with bounded concurrency.
 *
 * The queue is `catalog.photos` itself: a `pending` row is work. A worker claims up
 * to its free slots with `FOR UPDATE SKIP LOCKED` (so replicas never take the same
 * row) and stamps a lease (`lease_token`, `lease_until` = now + PHOTO_LEASE_SECONDS),
 * renewed every third of the lease while the fetch runs. If the process dies, the
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
 */
import { randomUUID } from 'node:crypto';
import type { Sql } from '../kit/database';
import type { Logger } from '../kit/logger';
import { fetchAndProcessPhoto, type PhotoOutcome } from './photo-processor';
import { republishById } from './publication';
import { recordPhotoProcessed } from '../kit/metrics';
import { PeriodicJob } from '../kit/periodic';
import { Worker, type RoundResult } from '../kit/worker';

/** Claims of one photo before it is given up as unreachable. */
export const MAX_ATTEMPTS = 5;
/** Unreferenced stored images older than this are deleted by housekeeping. */
const ORPHAN_GRACE_HOURS = 1;
const HOUSEKEEPING_EVERY_MS = 10 * 60 * 1000;

export interface PhotoPipelineOptions {
  sql: Sql;
  log: Logger;
  /** PHOTO_CONCURRENCY: photos in flight at once in this process. */
  concurrency: number;
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
}

/** Fetches and processes one photo; `alone` asks for a decode with the whole budget. */
export type PhotoStep = (url: string, signal: AbortSignal, opts: { alone: boolean }) => Promise<PhotoOutcome>;

interface Claim {
  property_id: string;
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

  constructor(private readonly opts: PhotoPipelineOptions) {
    this.sql = opts.sql;
    this.log = opts.log;
    const pollMs = opts.pollMs ?? 1000;
    this.process = opts.process ?? ((url, signal, { alone }) => fetchAndProcessPhoto(url, { allowCidrs: opts.allowCidrs, timeoutMs: opts.fetchTimeoutMs, signal, alone }));
    this.worker = new Worker({
      name: 'photo-pipeline',
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
    const free = this.opts.concurrency - this.worker.inFlight;
    if (free <= 0) return { items: 0, more: false };
    const claims = await this.claim(free);
    for (const c of claims) this.startJob(c);
    // Every free slot found work: more may be waiting (if a slot is still free).
    return { items: claims.length, more: claims.length === free && this.worker.inFlight < this.opts.concurrency };
  }

  /** Claims up to `n` pending photos whose lease is free. */
  private async claim(n: number): Promise<(Claim & { token: string })[]> {
    const token = randomUUID();
    const rows = await this.sql<Claim[]>`
      update catalog.photos p
      set lease_token = ${token},
          lease_until = now() + make_interval(secs => ${this.opts.leaseSeconds}),
          attempts = p.attempts + 1
      from (
        select property_id, url from catalog.photos
        where state = 'pending' and (lease_until is null or lease_until < now())
        order by created_at, property_id, url
        limit ${n}
        for update skip locked
      ) c
      where p.property_id = c.property_id and p.url = c.url
      returning p.property_id, p.url, p.attempts
    `;
    return rows.map((r) => ({ ...r, token }));
  }

  private startJob(c: Claim & { token: string }): void {
    const key = `${c.property_id} ${c.url}`;
    this.inflight.set(key, c.token);
    this.worker.spawn((signal) =>
      this.runJob(c, signal)
        .catch((err) => this.log.error({ err, property_id: c.property_id }, 'photo pipeline: job failed; the photo is retried when its lease ends'))
        .finally(() => this.inflight.delete(key)),
    );
  }

  private async runJob(c: Claim & { token: string }, signal: AbortSignal): Promise<void> {
    let outcome: PhotoOutcome;
    if (c.attempts > MAX_ATTEMPTS) {
      outcome = { ok: false, reason: 'unreachable', detail: `given up after ${MAX_ATTEMPTS} attempts` };
    } else {
      const started = Date.now();
      // attempts > 1: an earlier claim ended without a result (a crash, a lost lease, or a shutdown).
      outcome = await this.process(c.url, signal, { alone: c.attempts > 1 });
      this.log.debug({ property_id: c.property_id, ok: outcome.ok, reason: outcome.ok ? undefined : outcome.reason, ms: Date.now() - started }, 'photo processed');
    }
    if (!outcome.ok && outcome.reason === 'aborted') {
      await this.sql`
        update catalog.photos set lease_token = null, lease_until = null
        where property_id = ${c.property_id} and url = ${c.url} and lease_token = ${c.token} and state = 'pending'
      `;
      return;
    }
    if (!outcome.ok) this.log.info({ property_id: c.property_id, reason: outcome.reason, detail: outcome.detail }, 'photo rejected');
    recordPhotoProcessed(outcome.ok ? 'ready' : outcome.reason);
    const events = await this.settle(c, outcome);
    if (events > 0) this.opts.onEvents();
  }

  /** Writes the outcome and republishes the property; returns how many events were written. */
  private async settle(c: Claim & { token: string }, outcome: Exclude<PhotoOutcome, { reason: 'aborted' }>): Promise<number> {
    return this.sql.begin<number>(async (tx) => {
      // Property first, then photo: the same lock order as UpsertProperty.
      const [property] = await tx`select id from catalog.properties where id = ${c.property_id} for update`;
      if (!property) return 0;
      const [mine] = await tx`
        select 1 from catalog.photos
        where property_id = ${c.property_id} and url = ${c.url} and lease_token = ${c.token} and state = 'pending'
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
    if (tokens.length === 0) return;
    try {
      await this.sql`
        update catalog.photos set lease_until = now() + make_interval(secs => ${this.opts.leaseSeconds})
        where lease_token in ${this.sql(tokens)} and state = 'pending'
      `;
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
