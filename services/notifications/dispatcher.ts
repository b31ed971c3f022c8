/**
 * The delivery worker: sends due deliveries, records the outcome, schedules retries.
 *
 * Durability and concurrency (docs/notifications.md, "Durability"):
 * - Deliveries live in `notifications.deliveries`, a lease queue of the kit (kit/work):
 *   a worker claims due rows in one statement by writing a lease (a fresh token and
 *   `lease_until`), sends outside any transaction, then records the outcome only if
 *   it still holds that lease. Replicas never claim the same row at once; a worker
 *   that dies leaves its lease to expire (LEASE_MS) and the delivery is sent again,
 *   with the same event_id (at-least-once; partners dedupe on event_id).
 * - With the embedded database there is only one process, so leases left by a
 *   previous run are released at start-up instead of waiting for them to expire.
 * - Scheduling is fair and isolated (docs/notifications.md, "Scheduling and
 *   isolation"): a claim walks the endpoints that have pending deliveries and takes
 *   each one's due deliveries in order, at most PER_ENDPOINT_CONCURRENCY in flight per
 *   endpoint in a process (one while its attempts fail), round-robin across endpoints
 *   (every endpoint's first before anyone's second), so one endpoint's backlog never
 *   sits ahead of another's fresh event. Endpoints whose attempts fail or are slow
 *   draw from a lane of their own (SLOW_LANE_SLOTS), healthy ones from FAST_LANE_SLOTS:
 *   however many endpoints are in trouble, they never hold the slots healthy ones need.
 * - Adaptive (endpoint-health.ts): a circuit breaker per endpoint, shared by replicas
 *   through `endpoint_health`; Retry-After on a 429 or 503 holds the endpoint; a 410
 *   suspends it. Deliveries held back wait uncounted; a delivery that has waited
 *   behind an open breaker longer than the whole retry schedule (plus one longest open
 *   interval) is abandoned.
 * - A delivery of a booking is not sent while an earlier one of the same booking (in
 *   the same workspace) is pending: per-booking order holds through retries.
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
 * Every attempt that gets an outcome is also a row of `delivery_attempts` (when it
 * started, how long it took, the status, the outcome, the retry it scheduled), written in
 * the statement that records the outcome: the partners' delivery log (delivery-log.ts).
 *
 * The body: a delivered delivery drops it at once (a test event's, which names nobody, is
 * kept for a resend); an abandoned one keeps it, so that
 * `psync deliveries replay` (delivery-replay.ts) sends it again, until the delivery is
 * pruned 30 days later (deletion-requests.ts). An erasure scrubs the guest's name from
 * it meanwhile (intake.ts).
 */
import { randomUUID } from 'node:crypto';
import { context } from '@opentelemetry/api';
import { contextFromHeaders } from '../kit/telemetry';
import type { Sql } from '../kit/db';
import { logEvent, systemClock, type Clock, type Logger } from '../kit/base';
import { GroupCommit } from '../kit/base';
import { Worker, type RoundResult } from '../kit/work';
import { EndpointHealthStore } from './endpoint-health';
import type { SecretBox } from './secret-box';
import type { WebhookPoster } from './webhook-poster';
import { claimDeliveries, deliveryQueue, startableNow, type ClaimedRow } from './delivery-claim';
import { abandonDelivery, writeOutcomes, type AttemptTiming, type Outcome, type OutcomeWrite } from './delivery-outcomes';
import { FAST_LANE_SLOTS, SLOW_ATTEMPT_MS, SLOW_LANE_SLOTS } from './delivery-limits';
import {
  handleFailedDispatch,
  handleSuccessfulDispatch,
  makeHttpCall,
  POSTPONE_S,
  prepareDispatch,
  recordEndpointHealth,
  type Handled,
  type OutcomeWriter,
} from './delivery-steps';
/** Outcomes written in one statement at most. */
const OUTCOME_BATCH = 64;
/** How often deliveries stuck behind an open breaker past their schedule are looked for. */
const SWEEP_MS = 5000;
/** Endpoints whose attempt latency is remembered per process at most. */
const LATENCY_MEMORY = 10_000;

export interface DispatcherOptions {
  sql: Sql;
  /**
   * The same database committing asynchronously (ServiceContext.asyncCommitSql): the
   * claim's leases and the attempts' outcomes, whose loss in a crash only means an
   * attempt is made again (receivers deduplicate on event_id).
   */
  asyncCommitSql: Sql;
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
  /** The claim loop's waits and the breaker sweep's period; default the system's. */
  clock?: Clock;
}

export class DeliveryDispatcher {
  private readonly sql: Sql;
  private readonly asyncSql: Sql;
  private readonly log: Logger;
  private readonly opts: DispatcherOptions;
  private readonly perEndpoint = new Map<string, number>();
  /** In-flight attempts per lane in this process. */
  private readonly laneUse = { fast: 0, slow: 0 };
  /** Moving average of attempt latency (ms) per endpoint, most recently updated last. */
  private readonly latency = new Map<string, number>();
  private readonly health: EndpointHealthStore;
  private lastSweep = -Infinity;
  private readonly clock: Clock;
  private running = false;
  /**
   * The last claim may have left due deliveries that an attempt of this process ending
   * lets start (claimAndSend says when); the worker is nudged on a task's end only then.
   */
  private slotMayHelp = true;
  /** A claim is running: it saw the slots in use before it began, so a task ending now nudges. */
  private claiming = false;
  /** The claim loop (worker.ts); the attempts run as its tasks. */
  private readonly worker: Worker;
  /** Where the outcome steps write (handle). */
  private readonly writer: OutcomeWriter;

  constructor(opts: DispatcherOptions) {
    this.opts = opts;
    this.sql = opts.sql;
    this.asyncSql = opts.asyncCommitSql;
    this.log = opts.log;
    const pollMs = opts.pollMs ?? 250;
    this.clock = opts.clock ?? systemClock;
    this.health = new EndpointHealthStore(opts.sql, opts.asyncCommitSql, opts.schedule, opts.log);
    this.worker = new Worker({
      name: 'webhook-dispatcher',
      clock: this.clock,
      idleMs: pollMs,
      backoff: { baseMs: pollMs * 2, maxMs: 10_000 },
      round: () => this.round(),
      onError: (err, retryInMs) => this.log.error({ err, retry_in_ms: retryInMs }, 'webhooks: claiming deliveries failed'),
      onTaskError: (err) => this.log.error({ err }, 'webhooks: delivery attempt failed unexpectedly'),
      // The end of an attempt runs another claim only if the last one was held back by
      // something that end frees (claimAndSend); otherwise that claim would find nothing.
      nudgeOnTaskEnd: () => this.claiming || this.slotMayHelp,
      // An idle poll runs the claim only if something is due (anyDue): the claim statement
      // costs several times more, in Node and in PostgreSQL, and at rest it is what the
      // process would spend most of its idle CPU on.
      idleCheck: () => this.anyDue(),
    });
    const outcomes = new GroupCommit({
      maxBatch: OUTCOME_BATCH,
      write: async (batch: OutcomeWrite[]) => {
        const written = await writeOutcomes(this.asyncSql, batch);
        return batch.map((w) => written.get(w.id) ?? null);
      },
    });
    this.writer = {
      writeOutcome: (w) => outcomes.submit(w),
      abandon: (a) => abandonDelivery(this.asyncSql, a),
      countAbandoned: (ws, n) => this.health.countAbandoned(ws, n),
    };
  }

  /** Starts the worker loop. */
  async start(): Promise<void> {
    if (this.running) return;
    if (this.opts.soleWorker) {
      const released = await deliveryQueue.releaseAll(this.sql);
      if (released > 0) this.log.info({ released }, 'webhooks: released leases left by the previous run');
      const probes = await this.health.releaseAllProbes();
      if (probes > 0) this.log.info({ probes }, 'webhooks: released breaker probes left by the previous run');
    }
    this.running = true;
    this.worker.start();
  }

  /** Wakes the worker now (a delivery was just created, or a slot freed). */
  nudge(): void {
    this.worker.nudge();
  }

  /**
   * Stops claiming, waits up to `graceMs` for in-flight attempts, then aborts the rest
   * (their leases are released, their attempt not counted).
   */
  async stop(graceMs: number): Promise<void> {
    this.running = false;
    if (this.worker.inFlight > 0) this.log.info({ event: logEvent('webhook.dispatcher.draining'), in_flight: this.worker.inFlight }, 'webhooks: draining in-flight deliveries');
    await this.worker.stop(Math.max(1, graceMs), (aborted) =>
      this.log.warn({ event: logEvent('webhook.dispatcher.aborted'), aborted }, 'webhooks: grace period over; aborting in-flight deliveries (they stay pending)'),
    );
  }

  /** One claim round: the breaker sweep when due, then due deliveries for the free slots of each lane. */
  private async round(): Promise<RoundResult> {
    const freeFast = FAST_LANE_SLOTS - this.laneUse.fast;
    const freeSlow = SLOW_LANE_SLOTS - this.laneUse.slow;
    if (this.clock.now() - this.lastSweep >= SWEEP_MS) {
      this.lastSweep = this.clock.now();
      await this.health.abandonExpiredBehindBreaker();
    }
    if (freeFast <= 0 && freeSlow <= 0) {
      this.slotMayHelp = true;
      return { items: 0, more: false };
    }
    let claimed: { fast: number; slow: number };
    this.claiming = true;
    try {
      claimed = await this.claimAndSend(Math.max(0, freeFast), Math.max(0, freeSlow));
    } catch (err) {
      this.slotMayHelp = true;
      throw err;
    } finally {
      this.claiming = false;
    }
    // A lane filled: more may be due; go again at once (if slots are free by then).
    const filled = (claimed.fast > 0 && claimed.fast === freeFast) || (claimed.slow > 0 && claimed.slow === freeSlow);
    return { items: claimed.fast + claimed.slow, more: filled };
  }

  /** Whether any delivery could start now (startableNow): one statement on the deliveries_due index. */
  private async anyDue(): Promise<boolean> {
    const [row] = await this.sql<{ due: boolean }[]>`
      select exists (select from notifications.deliveries d where ${startableNow(this.sql, 'd')}) as due`;
    return row?.due === true;
  }

  /** Endpoints whose recent attempts in this process were slow. */
  private slowEndpoints(): string[] {
    const out: string[] = [];
    for (const [ws, ms] of this.latency) if (ms > SLOW_ATTEMPT_MS) out.push(ws);
    return out;
  }

  private noteLatency(workspaceId: string, ms: number): void {
    const prev = this.latency.get(workspaceId);
    this.latency.delete(workspaceId);
    this.latency.set(workspaceId, prev === undefined ? ms : prev * 0.7 + ms * 0.3);
    if (this.latency.size > LATENCY_MEMORY) this.latency.delete(this.latency.keys().next().value!);
  }

  /**
   * Claims due deliveries fairly and starts sending them: up to `freeFast` to healthy
   * endpoints and `freeSlow` to endpoints in trouble (failing, slow, probed). Sets
   * `slotMayHelp` (see the comment before the end).
   */
  private async claimAndSend(freeFast: number, freeSlow: number): Promise<{ fast: number; slow: number }> {
    const busy = [...this.perEndpoint];
    const token = randomUUID();
    const rows = await claimDeliveries(this.asyncSql, { busy, slowEndpoints: this.slowEndpoints(), freeFast, freeSlow, token });
    const claimed = { fast: 0, slow: 0 };
    let held = false;
    for (const row of rows) {
      if (row.slow_lane) claimed.slow++;
      else claimed.fast++;
      held ||= row.room_used || row.behind || row.mode === 'probe';
      this.launch(row, token);
    }
    // Whether an attempt of this process ending may let a due delivery start that this
    // claim left. An attempt's end frees a lane slot and a slot of its endpoint's room,
    // takes its delivery out of `pending` (or leases it no more) and may change its
    // endpoint's health (a 2xx closes the breaker and ends holds; a 410 suspends it).
    // Within the claim above, that matters only when:
    // - a lane's free slots were all used (`chosen` stopped at them; none free counts);
    // - an endpoint's room was all used (`cand` stopped at it: room_used);
    // - an endpoint had attempts in flight here (`busy` non-empty): its room was smaller
    //   by them (none at all when used up: `eps.room > 0` dropped it), a delivery of the
    //   same booking may wait behind one of them (`cand`'s not-exists), and its health
    //   (a hold, a breaker opened meanwhile) can change with their outcome;
    // - a claimed delivery has others of its booking pending behind it (`behind`): they
    //   become due to send when it ends;
    // - a probe was claimed: its 2xx closes the breaker, and the endpoint's other
    //   deliveries flow again.
    // Otherwise every due delivery the claim could see was taken (those of endpoints
    // held with nothing in flight here, of unleased retries not yet due, or leased by
    // another replica wait for the idle poll whatever ends here), and a claim run when an
    // attempt ends would find nothing new. Deliveries queued meanwhile nudge on their
    // own (module.ts: the intake's onDeliveryCreated, test events' and resends'
    // deliveriesQueued); an attempt ending while a claim runs nudges anyway
    // (`claiming`), as that claim saw the slots in use before it began.
    this.slotMayHelp = held || busy.length > 0 || claimed.fast >= freeFast || claimed.slow >= freeSlow;
    return claimed;
  }

  private launch(row: ClaimedRow, token: string): void {
    this.perEndpoint.set(row.workspace_id, (this.perEndpoint.get(row.workspace_id) ?? 0) + 1);
    if (row.slow_lane) this.laneUse.slow++;
    else this.laneUse.fast++;
    // Each attempt continues the trace of the event that created the delivery (its
    // egress span is a child of the intake's consumer span); none: a trace of its own.
    const parent = contextFromHeaders(row.traceparent ? { traceparent: row.traceparent } : undefined);
    // A task of the worker: drained (then aborted) by stop(); its end frees a slot and nudges the loop.
    this.worker.spawn((signal) =>
      context
        .with(parent, () => this.attempt(row, token, signal))
        .catch((err) => this.log.error({ err, event_id: row.event_id, workspace_id: row.workspace_id }, 'webhooks: delivery attempt failed unexpectedly'))
        .finally(() => {
          if (row.slow_lane) this.laneUse.slow--;
          else this.laneUse.fast--;
          const n = (this.perEndpoint.get(row.workspace_id) ?? 1) - 1;
          if (n <= 0) this.perEndpoint.delete(row.workspace_id);
          else this.perEndpoint.set(row.workspace_id, n);
        }),
    );
  }

  /** One attempt as its steps (delivery-steps.ts); a shutdown or a secret we cannot open gives the claim back. */
  private async attempt(row: ClaimedRow, token: string, signal: AbortSignal): Promise<void> {
    const startedAt = new Date(this.clock.now());
    const prepared = prepareDispatch(row, this.opts.box);
    if (prepared.kind === 'skip') return void (await this.handle(row, token, prepared.outcome, { startedAt, durationMs: null }));
    if (prepared.kind === 'postpone') {
      // Our fault, not the partner's: do not spend an attempt; look again in a minute.
      this.log.error({ err: prepared.err, workspace_id: row.workspace_id, event_id: row.event_id }, 'webhooks: cannot decrypt the signing secret; delivery postponed');
      return this.release(row, token, POSTPONE_S);
    }
    const call = await makeHttpCall(this.opts.poster, prepared, row.workspace_id, signal, () => this.worker.isStopping);
    if (call.kind === 'aborted') {
      await this.release(row, token);
      this.log.info({ event_id: row.event_id, workspace_id: row.workspace_id }, 'webhooks: attempt aborted by shutdown; delivery stays pending');
      return;
    }
    this.noteLatency(row.workspace_id, call.ms);
    await recordEndpointHealth(this.health, this.log, row, token, call.outcome);
    await this.handle(row, token, call.outcome, call.timing);
  }

  /**
   * Writes the outcome, committed asynchronously (`synchronous_commit = off`): a crash
   * can lose the last few hundred milliseconds of outcomes (and claims), which at worst
   * repeats an attempt with the same event_id — at-least-once, as promised — while
   * saving a disk flush per attempt. Deliveries and scheduled retries are written in
   * batches (`outcomes`, group commit: one statement for everything queued while the
   * previous one ran, at most OUTCOME_BATCH, so a busy dispatcher writes many outcomes
   * per round trip and an idle one writes each at once); the last failed attempt
   * (abandonment) on its own.
   */
  private handle(row: ClaimedRow, token: string, outcome: Outcome, timing: AttemptTiming): Promise<Handled> {
    if (outcome.delivered) return handleSuccessfulDispatch(this.writer, this.log, row, token, outcome, timing);
    return handleFailedDispatch(this.writer, this.log, this.opts.schedule, row, token, outcome, timing);
  }

  /** Gives the claim back without an attempt (and the breaker's probe, if it was one); due again after `retryInS`. */
  private async release(row: ClaimedRow, token: string, retryInS?: number): Promise<void> {
    await deliveryQueue.release(this.sql, { id: row.id }, token, { retryInS });
    if (row.mode === 'probe') await this.health.releaseProbe(row.workspace_id, token);
  }
}
