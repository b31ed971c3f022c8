/**
 * The delivery worker: sends due deliveries, records the outcome, schedules retries.
 *
 * Durability and concurrency (docs/notifications.md, "Durability"):
 * - Deliveries live in `notifications.deliveries`; a worker claims due rows in a short
 *   transaction (`FOR UPDATE SKIP LOCKED`) by writing a lease (a fresh token and
 *   `lease_until`), sends outside any transaction, then records the outcome only if
 *   it still holds that lease. Replicas never claim the same row at once; a worker
 *   that dies leaves its lease to expire (LEASE_MS) and the delivery is sent again,
 *   with the same event_id (at-least-once; partners dedupe on event_id).
 * - With the embedded database there is only one process, so leases left by a
 *   previous run are released at start-up instead of waiting for them to expire.
 * - Per endpoint at most PER_ENDPOINT_CONCURRENCY attempts run at once in a process
 *   (and MAX_IN_FLIGHT in all): the claim query skips saturated endpoints, so one
 *   slow partner holds at most its own slots and never delays the others.
 * - stop() (SIGTERM) claims nothing more, lets in-flight attempts finish within the
 *   grace period, then aborts the rest and releases their leases without counting
 *   an attempt, so another replica can send them at once.
 *
 * Retries (config.webhookRetrySchedule = [d1 … dn]): the first attempt at once, then
 * one retry after each delay: n + 1 attempts. Any 2xx delivers; anything else
 * (time-out, connection failure, refused address, 3xx, 4xx, 5xx) is a failed attempt.
 * After the last one the delivery is `abandoned`: a warn log line, a metric, and
 * `psync deliveries list --state abandoned`.
 *
 * The body: a delivered delivery drops it at once; an abandoned one keeps it, so that
 * `psync deliveries replay` (delivery-replay.ts) sends it again, until the delivery is
 * pruned 30 days later (deletion-requests.ts). An erasure scrubs the guest's name from
 * it meanwhile (intake.ts).
 */
import { randomUUID } from 'node:crypto';
import { context } from '@opentelemetry/api';
import { contextFromHeaders } from '../kit/telemetry';
import type { Sql } from '../kit/database';
import type { Logger } from '../kit/logger';
import type { EventKind } from './envelope';
import { GroupCommit } from '../kit/group-commit';
import { notificationsMetrics } from './metrics';
import { openPrevious, SecretBox, SecretDecryptionError } from './secret-box';
import { signatureHeaders } from './signature';
import type { WebhookPoster } from './webhook-poster';

/** Deliveries in flight per endpoint per process. */
export const PER_ENDPOINT_CONCURRENCY = 8;
/** Deliveries in flight per process. */
export const MAX_IN_FLIGHT = 64;
/** Time-out of one delivery attempt (connect, TLS, request, response head). */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** How long a claim is valid; well over one attempt, so a live worker never loses it. */
export const LEASE_MS = 30_000;
/** Abandoned deliveries in a row (no 2xx between them) that suspend an active endpoint. */
export const SUSPEND_AFTER_ABANDONED = 5;
/** Response bytes read (and discarded) at most. */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** Rows looked at per claim. */
const SCAN_LIMIT = 256;
/** Outcomes written in one statement at most. */
const OUTCOME_BATCH = 64;

export interface DispatcherOptions {
  sql: Sql;
  log: Logger;
  /** Undefined when no secrets-encryption key is configured (nothing can be signed). */
  box: SecretBox | undefined;
  poster: WebhookPoster;
  /** Delays in seconds between attempts (config.webhookRetrySchedule). */
  schedule: number[];
  /** True with the embedded database: this is the only process, stale leases are released at start. */
  soleWorker: boolean;
  /** Idle poll interval (due retries are found by polling); default 250 ms. */
  pollMs?: number;
}

interface ClaimedRow {
  id: string;
  workspace_id: string;
  event_id: string;
  event_type: EventKind;
  body: string;
  attempts: number;
  url: string | null;
  status: string | null;
  events: string[] | null;
  secret_ciphertext: Buffer | null;
  previous_secret_ciphertext: Buffer | null;
  previous_valid: boolean | null;
  traceparent: string | null;
}

/** The result of one attempt, as recorded. */
type Outcome =
  | { delivered: true; status: number }
  | { delivered: false; status: number | null; error: string; /** made no connection because the endpoint was not active */ skipped?: boolean };

/** An outcome written in a batch: a delivery, or a failed attempt with its retry scheduled `delayS` from now. */
interface OutcomeWrite {
  id: string;
  token: string;
  attempts: number;
  delivered: boolean;
  status: number | null;
  error: string | null;
  delayS: number;
}

interface InFlight {
  workspaceId: string;
  abort: AbortController;
  done: Promise<void>;
}

export class DeliveryDispatcher {
  private readonly sql: Sql;
  private readonly log: Logger;
  private readonly opts: DispatcherOptions;
  private readonly pollMs: number;
  private readonly inFlight = new Map<string, InFlight>();
  private readonly perEndpoint = new Map<string, number>();
  private running = false;
  private stopping = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private nudged = false;
  /** Outcomes written in batches (writeOutcome). */
  private readonly outcomes: GroupCommit<OutcomeWrite, { next_attempt_at: Date | null } | null>;

  constructor(opts: DispatcherOptions) {
    this.opts = opts;
    this.sql = opts.sql;
    this.log = opts.log;
    this.pollMs = opts.pollMs ?? 250;
    this.outcomes = new GroupCommit({
      maxBatch: OUTCOME_BATCH,
      write: async (batch: OutcomeWrite[]) => {
        const written = await this.writeOutcomes(batch);
        return batch.map((w) => written.get(w.id) ?? null);
      },
    });
  }

  /** Starts the worker loop. */
  async start(): Promise<void> {
    if (this.running) return;
    if (this.opts.soleWorker) {
      const released = await this.sql`
        update notifications.deliveries set lease_owner = null, lease_until = null
        where state = 'pending' and lease_owner is not null`;
      if (released.count > 0) this.log.info({ released: released.count }, 'webhooks: released leases left by the previous run');
    }
    this.running = true;
    this.loop = this.run();
  }

  /** Wakes the worker now (a delivery was just created, or a slot freed). */
  nudge(): void {
    this.nudged = true;
    this.wake?.();
  }

  /**
   * Stops claiming, waits up to `graceMs` for in-flight attempts, then aborts the rest
   * (their leases are released, their attempt not counted).
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.running = false;
    this.wake?.();
    await this.loop;
    const pending = [...this.inFlight.values()];
    if (pending.length === 0) return;
    this.log.info({ in_flight: pending.length }, 'webhooks: draining in-flight deliveries');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      Promise.all(pending.map((f) => f.done)).then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), Math.max(0, graceMs)))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      const left = [...this.inFlight.values()];
      this.log.warn({ aborted: left.length }, 'webhooks: grace period over; aborting in-flight deliveries (they stay pending)');
      for (const f of left) f.abort.abort();
      await Promise.all(left.map((f) => f.done));
    }
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      this.nudged = false;
      const free = MAX_IN_FLIGHT - this.inFlight.size;
      let claimed = 0;
      if (free > 0) {
        try {
          claimed = await this.claimAndSend(free);
          failures = 0;
        } catch (err) {
          failures++;
          const backoff = Math.min(10_000, this.pollMs * 2 ** Math.min(failures, 6));
          this.log.error({ err, retry_in_ms: backoff }, 'webhooks: claiming deliveries failed');
          await this.sleep(backoff);
          continue;
        }
      }
      // A full claim means more may be due: go again at once (if slots are free).
      if (claimed > 0 && claimed === free) continue;
      if (!this.nudged) await this.sleep(this.pollMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  /** Claims up to `free` due deliveries, respecting per-endpoint slots; starts sending them. */
  private async claimAndSend(free: number): Promise<number> {
    const busy = [...this.perEndpoint];
    const token = randomUUID();
    // One statement (committed asynchronously, see record()): lock due rows with SKIP
    // LOCKED, keep at most PER_ENDPOINT_CONCURRENCY per endpoint counting what this
    // process already has in flight, at most `free` in all, lease them, and return them
    // with their endpoint.
    const rows = await this.sql<ClaimedRow[]>`
      with cfg as (
        select set_config('synchronous_commit', 'off', true)
      ), used as (
        select * from unnest(${this.sql.array(busy.map(([ws]) => ws))}::uuid[], ${this.sql.array(busy.map(([, n]) => n))}::int[]) as u(workspace_id, n)
      ), candidates as (
        select d.id, d.workspace_id, d.next_attempt_at
        from notifications.deliveries d, cfg
        where d.state = 'pending' and d.next_attempt_at <= now()
          and (d.lease_until is null or d.lease_until < now())
          and not exists (select 1 from used where used.workspace_id = d.workspace_id and used.n >= ${PER_ENDPOINT_CONCURRENCY})
        order by d.next_attempt_at, d.id
        limit ${SCAN_LIMIT}
        for update of d skip locked
      ), ranked as (
        select c.id, c.next_attempt_at,
               row_number() over (partition by c.workspace_id order by c.next_attempt_at, c.id) + coalesce(u.n, 0) as slot
        from candidates c left join used u on u.workspace_id = c.workspace_id
      ), chosen as (
        select id from ranked where slot <= ${PER_ENDPOINT_CONCURRENCY} order by next_attempt_at, id limit ${free}
      ), leased as (
        update notifications.deliveries d
        set lease_owner = ${token}, lease_until = now() + ${LEASE_MS / 1000}::float8 * interval '1 second'
        from chosen where d.id = chosen.id
        returning d.id, d.workspace_id, d.event_id, d.event_type, d.body, d.attempts, d.traceparent
      )
      select l.id, l.workspace_id, l.event_id, l.event_type, l.body, l.attempts, l.traceparent,
             e.url, e.status, e.events, e.secret_ciphertext, e.previous_secret_ciphertext,
             (e.previous_valid_until > now()) as previous_valid
      from leased l left join notifications.endpoints e on e.workspace_id = l.workspace_id
      order by l.id`;
    for (const row of rows) this.launch(row, token);
    return rows.length;
  }

  private launch(row: ClaimedRow, token: string): void {
    const abort = new AbortController();
    this.perEndpoint.set(row.workspace_id, (this.perEndpoint.get(row.workspace_id) ?? 0) + 1);
    // Each attempt continues the trace of the event that created the delivery (its
    // egress span is a child of the intake's consumer span); none: a trace of its own.
    const parent = contextFromHeaders(row.traceparent ? { traceparent: row.traceparent } : undefined);
    const done = context.with(parent, () => this.attempt(row, token, abort.signal))
      .catch((err) => this.log.error({ err, event_id: row.event_id, workspace_id: row.workspace_id }, 'webhooks: delivery attempt failed unexpectedly'))
      .finally(() => {
        this.inFlight.delete(row.id);
        const n = (this.perEndpoint.get(row.workspace_id) ?? 1) - 1;
        if (n <= 0) this.perEndpoint.delete(row.workspace_id);
        else this.perEndpoint.set(row.workspace_id, n);
        if (!this.stopping) this.nudge();
      });
    this.inFlight.set(row.id, { workspaceId: row.workspace_id, abort, done });
  }

  private async attempt(row: ClaimedRow, token: string, signal: AbortSignal): Promise<void> {
    const active = row.status === 'active' && (row.events ?? []).includes(row.event_type) && row.url !== null;
    let outcome: Outcome;
    if (!active) {
      // Paused, unsubscribed, pending_verification or suspended: nothing is sent there
      // (spec "Webhook endpoint status"); the attempt counts, so the delivery ends.
      outcome = { delivered: false, status: null, error: 'endpoint_not_active', skipped: true };
    } else {
      let keys;
      try {
        if (!this.opts.box) throw new SecretDecryptionError('no secrets-encryption key configured');
        keys = {
          current: this.opts.box.open(row.secret_ciphertext!, row.workspace_id),
          previous: row.previous_valid && row.previous_secret_ciphertext ? openPrevious(this.opts.box, row.previous_secret_ciphertext, row.workspace_id) : undefined,
        };
      } catch (err) {
        // Our fault, not the partner's: do not spend an attempt; look again in a minute.
        this.log.error({ err, workspace_id: row.workspace_id, event_id: row.event_id }, 'webhooks: cannot decrypt the signing secret; delivery postponed');
        await this.sql`
          update notifications.deliveries set lease_owner = null, lease_until = null, next_attempt_at = now() + interval '60 seconds'
          where id = ${row.id} and lease_owner = ${token}`;
        return;
      }
      const headers = { ...signatureHeaders(keys, row.body), 'Content-Type': 'application/json', 'User-Agent': 'PartnerSync-Webhooks/1' };
      notificationsMetrics.inc('attempts', { event_type: row.event_type });
      const res = await this.opts.poster.post(row.url!, row.body, headers, {
        timeoutMs: ATTEMPT_TIMEOUT_MS,
        maxResponseBytes: MAX_RESPONSE_BYTES,
        signal,
        endpoint: row.workspace_id,
      });
      if (signal.aborted && this.stopping) {
        await this.sql`update notifications.deliveries set lease_owner = null, lease_until = null where id = ${row.id} and lease_owner = ${token}`;
        this.log.info({ event_id: row.event_id, workspace_id: row.workspace_id }, 'webhooks: attempt aborted by shutdown; delivery stays pending');
        return;
      }
      if ('status' in res) {
        outcome = res.status >= 200 && res.status < 300
          ? { delivered: true, status: res.status }
          : { delivered: false, status: res.status, error: res.status >= 300 && res.status < 400 ? 'redirect' : 'http_status' };
      } else {
        outcome = { delivered: false, status: null, error: res.error };
      }
    }
    await this.record(row, token, outcome);
  }

  /**
   * Writes the outcome, committed asynchronously (`synchronous_commit = off`): a crash
   * can lose the last few hundred milliseconds of outcomes (and claims), which at worst
   * repeats an attempt with the same event_id — at-least-once, as promised — while
   * saving a disk flush per attempt. Deliveries and scheduled retries are written in
   * batches (writeOutcome); the last failed attempt (abandonment) on its own.
   */
  private async record(row: ClaimedRow, token: string, outcome: Outcome): Promise<void> {
    const sql = this.sql;
    const attempts = row.attempts + 1;
    const log = { workspace_id: row.workspace_id, event_id: row.event_id, event_type: row.event_type, attempts };
    if (outcome.delivered) {
      const r = await this.writeOutcome({ id: row.id, token, attempts, delivered: true, status: outcome.status, error: null, delayS: 0 });
      if (!r) return this.lostLease(row);
      notificationsMetrics.inc('delivered', { event_type: row.event_type });
      this.log.debug({ ...log, status: outcome.status }, 'webhook delivered');
      return;
    }
    if (!outcome.skipped) notificationsMetrics.inc('failed_attempts', { event_type: row.event_type, error: outcome.error });
    const schedule = this.opts.schedule;
    if (attempts <= schedule.length) {
      const delayS = schedule[attempts - 1]!;
      const r = await this.writeOutcome({ id: row.id, token, attempts, delivered: false, status: outcome.status, error: outcome.error, delayS });
      if (!r) return this.lostLease(row);
      this.log.info({ ...log, status: outcome.status, error: outcome.error, next_attempt_at: r.next_attempt_at }, 'webhook attempt failed; retry scheduled');
      return;
    }
    // Abandoned: the body stays, for a replay (cleared only by the 30-day prune).
    const [r] = await sql<{ workspace_id: string }[]>`
      with cfg as (select set_config('synchronous_commit', 'off', true))
      update notifications.deliveries
      set state = 'abandoned', attempts = ${attempts}, last_status = ${outcome.status}, last_error = ${outcome.error},
          next_attempt_at = null, lease_owner = null, lease_until = null, finished_at = now()
      from cfg
      where id = ${row.id} and lease_owner = ${token}
      returning workspace_id`;
    if (!r) return this.lostLease(row);
    notificationsMetrics.inc('abandoned', { event_type: row.event_type });
    this.log.warn({ ...log, status: outcome.status, error: outcome.error }, 'webhook delivery abandoned after its last attempt');
    if (outcome.skipped) return;
    // A run of abandoned deliveries without a 2xx between them suspends an active endpoint.
    const [s] = await sql<{ consecutive_abandoned: number; status: string }[]>`
      update notifications.endpoints
      set consecutive_abandoned = consecutive_abandoned + 1,
          status = case when status = 'active' and consecutive_abandoned + 1 >= ${SUSPEND_AFTER_ABANDONED} then 'suspended' else status end,
          suspended_at = case when status = 'active' and consecutive_abandoned + 1 >= ${SUSPEND_AFTER_ABANDONED} then now() else suspended_at end
      where workspace_id = ${row.workspace_id} and status = 'active'
      returning consecutive_abandoned, status`;
    if (s?.status === 'suspended') {
      notificationsMetrics.inc('endpoints_suspended');
      this.log.warn({ workspace_id: row.workspace_id, consecutive_abandoned: s.consecutive_abandoned }, 'webhook endpoint suspended: deliveries keep being abandoned; a registration whose challenge is echoed reactivates it');
    }
  }

  /**
   * Queues a delivered outcome or a scheduled retry for the next batch write (group
   * commit: one statement for everything queued while the previous one ran, at most
   * OUTCOME_BATCH, so a busy dispatcher writes many outcomes per round trip and an idle
   * one writes each at once). Resolves once it is written: with the row's new
   * next_attempt_at, or null if this worker no longer held the lease (nothing written).
   */
  private writeOutcome(w: OutcomeWrite): Promise<{ next_attempt_at: Date | null } | null> {
    return this.outcomes.submit(w);
  }

  /** One statement: the outcomes of `batch` where the lease is still ours; the endpoints' abandonment runs reset on delivery. */
  private async writeOutcomes(batch: OutcomeWrite[]): Promise<Map<string, { next_attempt_at: Date | null }>> {
    const sql = this.sql;
    const rows = await sql<{ id: string; next_attempt_at: Date | null }[]>`
      with cfg as (
        select set_config('synchronous_commit', 'off', true)
      ), o as (
        select * from unnest(
          ${sql.array(batch.map((w) => w.id))}::bigint[],
          ${sql.array(batch.map((w) => w.token))}::text[],
          ${sql.array(batch.map((w) => w.attempts))}::int[],
          ${sql.array(batch.map((w) => w.delivered))}::bool[],
          ${sql.array(batch.map((w) => w.status ?? 0))}::int[],
          ${sql.array(batch.map((w) => w.error ?? ''))}::text[],
          ${sql.array(batch.map((w) => w.delayS))}::float8[]
        ) as o(id, token, attempts, delivered, status, error, delay_s)
      ), d as (
        update notifications.deliveries d
        set state = case when o.delivered then 'delivered' else 'pending' end,
            attempts = o.attempts, last_status = nullif(o.status, 0), last_error = nullif(o.error, ''),
            next_attempt_at = case when o.delivered then null else now() + o.delay_s * interval '1 second' end,
            lease_owner = null, lease_until = null,
            body = case when o.delivered then null else d.body end,
            finished_at = case when o.delivered then now() else d.finished_at end
        from o, cfg
        where d.id = o.id and d.lease_owner = o.token
        returning d.id, d.workspace_id, o.delivered, d.next_attempt_at
      ), reset as (
        update notifications.endpoints e set consecutive_abandoned = 0
        where e.workspace_id in (select workspace_id from d where delivered) and e.consecutive_abandoned <> 0
      )
      select id, next_attempt_at from d`;
    return new Map(rows.map((r) => [String(r.id), { next_attempt_at: r.next_attempt_at }]));
  }

  private lostLease(row: ClaimedRow): void {
    // Only if this worker stalled past LEASE_MS: another worker owns the delivery now.
    this.log.warn({ workspace_id: row.workspace_id, event_id: row.event_id }, 'webhooks: lease expired before the outcome was recorded; the new owner records it');
  }
}
