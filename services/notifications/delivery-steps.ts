/**
 * One delivery attempt as named steps, each with a typed result, run in this order by
 * the dispatcher (dispatcher.ts) on a claimed row:
 *
 *   prepareDispatch → makeHttpCall → recordEndpointHealth
 *                                  → handleSuccessfulDispatch | handleFailedDispatch
 *
 * - prepareDispatch: what to do with the row, with no I/O: skip it (the endpoint is not
 *   active: the attempt counts, nothing is sent), postpone it (its signing secret cannot
 *   be opened: our fault, no attempt spent), or send it (URL, body, signed headers).
 * - makeHttpCall: the POST, timed, classified, its latency observed; or `aborted` when
 *   shutdown aborted it (the dispatcher then releases the lease).
 * - recordEndpointHealth: the endpoint's breaker, holds and suspension (endpoint-health.ts).
 * - handleSuccessfulDispatch / handleFailedDispatch: the outcome written under the
 *   lease: delivered, a retry scheduled, or abandoned after the last attempt.
 *
 * Effects other than the POST go through small interfaces (HealthRecorder,
 * OutcomeWriter), so that each step is unit-tested without a database
 * (delivery-steps.test.ts).
 */
import { logEvent, type Logger } from '../kit/base';
import type { ClaimedRow } from './delivery-claim';
import { ATTEMPT_TIMEOUT_MS } from './delivery-limits';
import { classifyResponse, type AttemptTiming, type Outcome, type OutcomeWrite } from './delivery-outcomes';
import type { EndpointHealthStore } from './endpoint-health';
import { notificationsMetrics } from './metrics';
import { openPrevious, type SecretBox, SecretDecryptionError } from './secret-box';
import { signatureHeaders } from './signature';
import type { WebhookPoster } from './webhook-poster';

/** Response bytes read (and discarded) at most. */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** How long a delivery whose signing secret cannot be opened waits before it is tried again. */
export const POSTPONE_S = 60;

/** A failed attempt's outcome. */
export type Failure = Extract<Outcome, { delivered: false }>;

/** What prepareDispatch decided for a claimed delivery. */
export type Prepared =
  /** Paused, unsubscribed, pending_verification or suspended: nothing is sent there; the attempt counts. */
  | { kind: 'skip'; outcome: Failure }
  /** The signing secret cannot be opened: no attempt is spent; the delivery waits POSTPONE_S. */
  | { kind: 'postpone'; err: unknown }
  | { kind: 'send'; url: string; body: string; headers: Record<string, string> };

/** Decides what to do with a claimed delivery and, to send it, signs its body. */
export function prepareDispatch(row: ClaimedRow, box: SecretBox | undefined): Prepared {
  const active = row.status === 'active' && (row.events ?? []).includes(row.event_type) && row.url !== null;
  // spec "Webhook endpoint status": nothing is sent to an endpoint that is not active.
  if (!active) return { kind: 'skip', outcome: { delivered: false, status: null, error: 'endpoint_not_active', skipped: true } };
  let keys;
  try {
    if (!box) throw new SecretDecryptionError('no secrets-encryption key configured');
    keys = {
      current: box.open(row.secret_ciphertext!, row.workspace_id),
      previous: row.previous_valid && row.previous_secret_ciphertext ? openPrevious(box, row.previous_secret_ciphertext, row.workspace_id) : undefined,
    };
  } catch (err) {
    return { kind: 'postpone', err };
  }
  const headers = { ...signatureHeaders(keys, row.body), 'Content-Type': 'application/json', 'User-Agent': 'PartnerSync-Webhooks/1' };
  return { kind: 'send', url: row.url!, body: row.body, headers };
}

/** What makeHttpCall got. */
export type CallResult =
  /** Shutdown aborted the POST: no outcome; the delivery stays pending. */
  | { kind: 'aborted' }
  /** `ms`: the attempt's latency, for the endpoint's moving average. */
  | { kind: 'answered'; outcome: Outcome; timing: AttemptTiming; ms: number };

/**
 * POSTs a prepared delivery to its endpoint (reusing that endpoint's connections) and
 * classifies the answer, observing the attempt's latency (`attempt_seconds`). An abort
 * counts as `aborted` only while `stopping()` (the worker's drain): any other abort is
 * the poster's answer like any failure.
 */
export async function makeHttpCall(
  poster: WebhookPoster,
  req: Extract<Prepared, { kind: 'send' }>,
  endpoint: string,
  signal: AbortSignal,
  stopping: () => boolean,
): Promise<CallResult> {
  const started = performance.now();
  const startedAt = new Date();
  const res = await poster.post(req.url, req.body, req.headers, { timeoutMs: ATTEMPT_TIMEOUT_MS, maxResponseBytes: MAX_RESPONSE_BYTES, signal, endpoint });
  if (signal.aborted && stopping()) return { kind: 'aborted' };
  const ms = performance.now() - started;
  const outcome = classifyResponse(res);
  notificationsMetrics.observe('attempt_seconds', ms / 1000, { outcome: outcome.delivered ? 'delivered' : outcome.error });
  return { kind: 'answered', outcome, timing: { startedAt, durationMs: Math.round(ms) }, ms };
}

/** The statements of endpoint-health.ts an attempt's outcome applies. */
export type HealthRecorder = Pick<EndpointHealthStore, 'success' | 'failure' | 'suspendGone'>;

/**
 * The endpoint's side of an attempt that reached the network (endpoint-health.ts): a
 * 2xx closes the breaker and ends holds (written only when there was something to
 * reset); a failure counts towards opening it, re-opens it after a failed probe, and
 * a Retry-After holds the endpoint; a 410 Gone suspends it. Never throws: the breaker
 * is an optimisation of the endpoint's load, never a reason to lose an outcome.
 */
export async function recordEndpointHealth(health: HealthRecorder, log: Logger, row: ClaimedRow, token: string, outcome: Outcome): Promise<void> {
  const ws = row.workspace_id;
  try {
    if (outcome.delivered) {
      if (!row.health_dirty && row.mode !== 'probe') return;
      const was = await health.success(ws);
      if (was === 'open' || was === 'half_open') {
        notificationsMetrics.inc('breaker_closed');
        log.info(
          { event: logEvent('webhook.endpoint.circuit_closed'), workspace_id: ws },
          'webhook endpoint circuit closed: a delivery got its 2xx; its waiting deliveries flow again',
        );
      }
      return;
    }
    const r = await health.failure({
      workspaceId: ws,
      status: outcome.status,
      error: outcome.error,
      retryAfterS: outcome.retryAfterS,
      probeToken: row.mode === 'probe' ? token : undefined,
    });
    if (outcome.retryAfterS !== undefined) {
      notificationsMetrics.inc('retry_after_honoured');
      log.info(
        { workspace_id: ws, status: outcome.status, retry_after_s: outcome.retryAfterS, not_before: r.notBefore },
        'webhook endpoint asked to wait (Retry-After); nothing is sent to it before not_before',
      );
    }
    if (r.opened) {
      notificationsMetrics.inc('breaker_opened');
      log.warn(
        { workspace_id: ws, consecutive_failures: r.consecutiveFailures, not_before: r.notBefore, status: outcome.status, error: outcome.error, probe: row.mode === 'probe' },
        'webhook endpoint circuit open: attempts keep failing; its deliveries wait (uncounted) until a probe gets a 2xx',
      );
    }
    if (outcome.status === 410) await health.suspendGone(ws);
  } catch (err) {
    log.error({ event: logEvent('webhook.endpoint.health_failed'), err, workspace_id: ws }, "webhooks: recording the endpoint's health failed");
  }
}

/** Where outcomes are written (delivery-outcomes.ts), each only while the lease is held. */
export interface OutcomeWriter {
  /** A delivery or a scheduled retry; null when the lease was no longer held. */
  writeOutcome(w: OutcomeWrite): Promise<{ next_attempt_at: Date | null } | null>;
  /** An abandonment after the last attempt; undefined when the lease was no longer held. */
  abandon(a: { id: string; token: string; attempts: number; status: number | null; error: string; attempt: AttemptTiming }): Promise<{ workspace_id: string } | undefined>;
  /** A run of abandoned deliveries suspends an endpoint (endpoint-health.ts). */
  countAbandoned(workspaceId: string, n: number): Promise<void>;
}

/** What handling an outcome wrote. */
export type Handled =
  | { kind: 'delivered' }
  | { kind: 'retry_scheduled'; nextAttemptAt: Date | null }
  | { kind: 'abandoned' }
  /** The lease ran out before the outcome was written: another worker owns the delivery now. */
  | { kind: 'lease_lost' };

/** Records a 2xx: the delivery is delivered (its body dropped, delivery-outcomes.ts). */
export async function handleSuccessfulDispatch(
  out: OutcomeWriter,
  log: Logger,
  row: ClaimedRow,
  token: string,
  outcome: Extract<Outcome, { delivered: true }>,
  attempt: AttemptTiming,
): Promise<Handled> {
  const attempts = row.attempts + 1;
  const r = await out.writeOutcome({ id: row.id, token, attempts, delivered: true, status: outcome.status, error: null, delayS: 0, attempt });
  if (!r) return lostLease(log, row);
  notificationsMetrics.inc('delivered', { event_type: row.event_type });
  log.debug({ event: logEvent('webhook.delivery.delivered'), ...logFields(row, attempts), status: outcome.status }, 'webhook delivered');
  return { kind: 'delivered' };
}

/**
 * Records a failed (or skipped) attempt. With the retry schedule [d1 … dn], attempt k
 * ≤ n schedules the next one dk seconds on (no earlier than a Retry-After asked); the
 * attempt after the last delay abandons the delivery (its body stays, for a replay)
 * and, unless nothing was sent, counts towards the endpoint's suspension.
 */
export async function handleFailedDispatch(
  out: OutcomeWriter,
  log: Logger,
  schedule: readonly number[],
  row: ClaimedRow,
  token: string,
  outcome: Failure,
  attempt: AttemptTiming,
): Promise<Handled> {
  const attempts = row.attempts + 1;
  const fields = logFields(row, attempts);
  if (!outcome.skipped) notificationsMetrics.inc('failed_attempts', { event_type: row.event_type, error: outcome.error });
  if (attempts <= schedule.length) {
    const delayS = Math.max(schedule[attempts - 1]!, outcome.retryAfterS ?? 0);
    const r = await out.writeOutcome({ id: row.id, token, attempts, delivered: false, status: outcome.status, error: outcome.error, delayS, attempt });
    if (!r) return lostLease(log, row);
    log.info({ ...fields, status: outcome.status, error: outcome.error, next_attempt_at: r.next_attempt_at }, 'webhook attempt failed; retry scheduled');
    return { kind: 'retry_scheduled', nextAttemptAt: r.next_attempt_at };
  }
  const r = await out.abandon({ id: row.id, token, attempts, status: outcome.status, error: outcome.error, attempt });
  if (!r) return lostLease(log, row);
  notificationsMetrics.inc('abandoned', { event_type: row.event_type });
  log.warn({ event: logEvent('webhook.delivery.abandoned'), ...fields, status: outcome.status, error: outcome.error }, 'webhook delivery abandoned after its last attempt');
  if (!outcome.skipped) await out.countAbandoned(row.workspace_id, 1);
  return { kind: 'abandoned' };
}

function logFields(row: ClaimedRow, attempts: number) {
  return { workspace_id: row.workspace_id, event_id: row.event_id, event_type: row.event_type, attempts };
}

function lostLease(log: Logger, row: ClaimedRow): Handled {
  // Only if this worker stalled past LEASE_MS: another worker owns the delivery now.
  log.warn(
    { event: logEvent('webhook.delivery.lease_expired'), workspace_id: row.workspace_id, event_id: row.event_id },
    'webhooks: lease expired before the outcome was recorded; the new owner records it',
  );
  return { kind: 'lease_lost' };
}
