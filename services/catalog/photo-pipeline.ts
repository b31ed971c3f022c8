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
 * Memory is bounded before that can happen (issue 13): photos are judged on their
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
  private readonly pollMs: number;
  private readonly process: PhotoStep;
  private readonly inflight = new Map<string, { token: string; abort: AbortController; done: Promise<void> }>();
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private nudged = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private lastHousekeeping = Date.now();

  constructor(private readonly opts: PhotoPipelineOptions) {
    this.sql = opts.sql;
    this.log = opts.log;
    this.pollMs = opts.pollMs ?? 1000;
    this.process =
      opts.process ??
      ((url, signal, { alone }) => fetchAndProcessPhoto(url, { allowCidrs: opts.allowCidrs, timeoutMs: opts.fetchTimeoutMs, signal, alone }));
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.heartbeat = setInterval(() => void this.renewLeases(), Math.max(500, (this.opts.leaseSeconds * 1000) / 3));
    this.loop = this.run();
  }

  /** Wakes the pipeline now (after a push queued photos). */
  nudge(): void {
    this.nudged = true;
    this.wake?.();
  }

  /** Stops claiming, aborts in-flight fetches, releases their claims and waits for them. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    for (const job of this.inflight.values()) job.abort.abort();
    await this.loop;
    await Promise.all([...this.inflight.values()].map((j) => j.done));
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      this.nudged = false;
      const free = this.opts.concurrency - this.inflight.size;
      let claimed = 0;
      if (free > 0) {
        try {
          const claims = await this.claim(free);
          claimed = claims.length;
          failures = 0;
          for (const c of claims) this.startJob(c);
        } catch (err) {
          failures++;
          this.log.error({ err }, 'photo pipeline: claiming work failed; retrying');
          await this.sleep(Math.min(10000, this.pollMs * 2 ** Math.min(failures, 4)));
          continue;
        }
      }
      await this.housekeeping();
      if (!this.running) break;
      // Go again at once if a push or a finished job asked for it while we were claiming,
      // or if every free slot found work (more may be waiting) and a slot is still free.
      if (this.nudged && this.inflight.size < this.opts.concurrency) continue;
      if (claimed === free && free > 0 && this.inflight.size < this.opts.concurrency) continue;
      await this.sleep(this.pollMs);
    }
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
    const abort = new AbortController();
    const done = this.runJob(c, abort.signal)
      .catch((err) => this.log.error({ err, property_id: c.property_id }, 'photo pipeline: job failed; the photo is retried when its lease ends'))
      .finally(() => {
        this.inflight.delete(key);
        // A slot is free: claim again now (nudged covers a finish between claim and sleep).
        this.nudged = true;
        this.wake?.();
      });
    this.inflight.set(key, { token: c.token, abort, done });
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
    return (await this.sql.begin(async (tx) => {
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
    })) as number;
  }

  /** Extends the leases of the photos in flight, so a slow fetch is not taken by another worker. */
  private async renewLeases(): Promise<void> {
    const tokens = [...new Set([...this.inflight.values()].map((j) => j.token))];
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
  private async housekeeping(): Promise<void> {
    if (Date.now() - this.lastHousekeeping < HOUSEKEEPING_EVERY_MS) return;
    this.lastHousekeeping = Date.now();
    try {
      const deleted = await this.sql`
        delete from catalog.photo_blobs b
        where b.created_at < now() - make_interval(hours => ${ORPHAN_GRACE_HOURS})
          and not exists (select 1 from catalog.photos p where p.blob_sha256 = b.sha256)
      `;
      if (deleted.count > 0) this.log.info({ deleted: deleted.count }, 'photo pipeline: unreferenced stored images deleted');
    } catch (err) {
      // A concurrent reference (foreign key) or a database hiccup: try again next round.
      this.log.warn({ err }, 'photo pipeline: housekeeping failed');
    }
  }

  /** Waits `ms`, or less if nudged or a job finishes meanwhile. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.wake === done) this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }
}
