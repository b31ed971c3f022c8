/**
 * An endpoint's delivery state (docs/notifications.md, "Scheduling and isolation"):
 * its circuit breaker, the holds a partner asks for with Retry-After, how much of the
 * dispatcher an endpoint may use, and its suspension (410 Gone, a run of abandoned
 * deliveries, a backlog that waited behind the breaker past the retry schedule). The state lives in
 * `notifications.endpoint_health`, shared by every replica; the pure rules are here
 * so that they can be unit-tested, the statements that apply them below.
 *
 * Breaker: `closed` (deliveries flow, up to PER_ENDPOINT_CONCURRENCY at once, one at a
 * time while attempts fail) → `open` after BREAKER_THRESHOLD failed attempts in a row
 * (nothing is sent; the endpoint's deliveries wait, uncounted) → after the open
 * interval, `half_open`: one replica sends one delivery (the probe) → a 2xx closes it,
 * a failure opens it again for twice as long (capped).
 */
import type { Sql } from '../kit/db';
import { logEvent, type Logger } from '../kit/base';
import { lockRows } from '../kit/work';
import { deliveryQueue } from './delivery-claim';
import { SUSPEND_AFTER_ABANDONED } from './delivery-limits';
import { notificationsMetrics } from './metrics';

/** Failed attempts in a row (any delivery of the endpoint, no 2xx between) that open the breaker. */
export const BREAKER_THRESHOLD = 5;
/** The longest the breaker stays open before the next probe. */
export const BREAKER_MAX_OPEN_S = 300;
/** The longest Retry-After honoured: a later date or more seconds are cut to this. */
export const RETRY_AFTER_MAX_S = 3600;

export type BreakerState = 'closed' | 'open' | 'half_open';

/** The health of one endpoint as the claim reads it (no row: closed and clean). */
export interface EndpointHealth {
  breaker: BreakerState;
  consecutiveFailures: number;
  /** Nothing may be sent before this. */
  notBefore: Date | null;
}

/**
 * Seconds a Retry-After header asks to wait, capped at RETRY_AFTER_MAX_S; undefined
 * when absent or malformed. RFC 9110 §10.2.3: delay-seconds (digits) or an HTTP-date;
 * a date in the past means "now" (0).
 */
export function parseRetryAfter(header: string | string[] | undefined, nowMs = Date.now()): number | undefined {
  const raw = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!raw) return undefined;
  if (/^\d+$/.test(raw)) return Math.min(RETRY_AFTER_MAX_S, Number(raw));
  // An HTTP-date always names a weekday and GMT; Date.parse also takes looser forms, so insist on those.
  if (!/^[A-Za-z]{3},? .*\d{2}:\d{2}:\d{2} GMT$/.test(raw) && !/^[A-Za-z]+, \d{2}-[A-Za-z]{3}-\d{2} \d{2}:\d{2}:\d{2} GMT$/.test(raw)) return undefined;
  const at = Date.parse(raw);
  if (Number.isNaN(at)) return undefined;
  return Math.min(RETRY_AFTER_MAX_S, Math.max(0, Math.ceil((at - nowMs) / 1000)));
}

/** The statuses whose Retry-After is honoured (RFC 9110: 503 and 429; RFC 6585). */
export function honoursRetryAfter(status: number): boolean {
  return status === 429 || status === 503;
}

/**
 * How long the breaker stays open after its `failedProbes`-th failed probe (0 when it
 * has just opened): the retry schedule's first delay, doubled per failed probe, capped
 * at the schedule's longest delay and at BREAKER_MAX_OPEN_S. With the default schedule:
 * 30, 60, 120, 240, 300, 300 … seconds.
 */
export function breakerOpenSeconds(failedProbes: number, schedule: readonly number[]): number {
  const first = schedule[0] ?? 30;
  const cap = Math.min(BREAKER_MAX_OPEN_S, Math.max(first, ...schedule));
  return Math.min(cap, first * 2 ** Math.min(failedProbes, 20));
}

/** Seconds from queueing to the last scheduled attempt. */
export function scheduleSpanSeconds(schedule: readonly number[]): number {
  return schedule.reduce((a, b) => a + b, 0);
}

/**
 * How long a delivery may wait behind an open breaker before it is abandoned unsent:
 * the schedule's span (when it would have been abandoned without a breaker) plus one
 * longest open interval, since probes may lag the schedule by that much.
 */
export function breakerWaitLimitSeconds(schedule: readonly number[]): number {
  return scheduleSpanSeconds(schedule) + BREAKER_MAX_OPEN_S;
}

/** A failed attempt as the breaker sees it. */
export interface AttemptFailure {
  workspaceId: string;
  status: number | null;
  error: string;
  /** Seconds the partner asked to wait (Retry-After on a 429/503), already capped. */
  retryAfterS?: number;
  /** The claim token, when this attempt was the half-open probe. */
  probeToken?: string;
}

/** The health after a failure was recorded. */
export interface FailureResult {
  breaker: BreakerState;
  consecutiveFailures: number;
  /** The breaker opened (or re-opened after a failed probe) with this attempt. */
  opened: boolean;
  notBefore: Date | null;
}

/** The statements that keep `endpoint_health`. */
export class EndpointHealthStore {
  /** `asyncSql`: the same database committing asynchronously (a success's reset, the breaker's abandonments). */
  constructor(
    private readonly sql: Sql,
    private readonly asyncSql: Sql,
    private readonly schedule: readonly number[],
    private readonly log: Logger,
  ) {}

  /**
   * Records a failed attempt: one more failure in a row; the breaker opens at the
   * threshold (or again when this was the probe); `not_before` moves to the later of
   * the breaker's reopening and the partner's Retry-After.
   */
  async failure(f: AttemptFailure): Promise<FailureResult> {
    const sql = this.sql;
    const first = breakerOpenSeconds(0, this.schedule);
    const maxOpen = breakerOpenSeconds(1000, this.schedule);
    await sql`insert into notifications.endpoint_health (workspace_id) values (${f.workspaceId}) on conflict do nothing`;
    // Every expression below reads the row as it was before this update (under its lock).
    const reopen = sql`(h.breaker = 'half_open' and h.probe_owner = ${f.probeToken ?? ''})`;
    const opening = sql`(h.breaker = 'closed' and h.consecutive_failures + 1 >= ${BREAKER_THRESHOLD})`;
    const breakerUntil = sql`(case
      when ${reopen} then now() + least(${maxOpen}::float8, ${first}::float8 * power(2, least(h.failed_probes + 1, 20))) * interval '1 second'
      when ${opening} then now() + ${first}::float8 * interval '1 second' end)`;
    const retryUntil = sql`(case when ${f.retryAfterS ?? null}::float8 is not null then now() + ${f.retryAfterS ?? null}::float8 * interval '1 second' end)`;
    const heldUntil = sql`(case when h.not_before > now() then h.not_before end)`;
    const notBefore = sql`greatest(${heldUntil}, ${breakerUntil}, ${retryUntil})`;
    const [r] = await sql<{ breaker: BreakerState; consecutive_failures: number; opened: boolean; not_before: Date | null }[]>`
      update notifications.endpoint_health h set
        consecutive_failures = h.consecutive_failures + 1,
        breaker = case when ${reopen} or ${opening} then 'open' else h.breaker end,
        failed_probes = case when ${reopen} then h.failed_probes + 1 when ${opening} then 0 else h.failed_probes end,
        not_before = ${notBefore},
        hold_reason = case
          when ${notBefore} is null then null
          when ${notBefore} = ${breakerUntil} then 'breaker'
          when ${notBefore} = ${retryUntil} then 'retry_after'
          else h.hold_reason end,
        probe_owner = case when ${reopen} then null else h.probe_owner end,
        probe_until = case when ${reopen} then null else h.probe_until end,
        opened_at = case when ${reopen} or ${opening} then now() else h.opened_at end,
        last_failure_at = now(), last_status = ${f.status}, last_error = ${f.error}, updated_at = now()
      where h.workspace_id = ${f.workspaceId}
      returning h.breaker, h.consecutive_failures, (h.opened_at = now()) as opened, h.not_before`;
    return { breaker: r!.breaker, consecutiveFailures: r!.consecutive_failures, opened: r!.opened, notBefore: r!.not_before };
  }

  /**
   * Records a 2xx: the breaker closes, the run of failures and any hold end. Returns
   * the breaker state it had (to log a closing), or null when there was nothing to reset.
   */
  async success(workspaceId: string): Promise<BreakerState | null> {
    const [r] = await this.asyncSql<{ was: BreakerState }[]>`
      with prev as (select breaker from notifications.endpoint_health where workspace_id = ${workspaceId} for update)
      update notifications.endpoint_health h
      set breaker = 'closed', consecutive_failures = 0, failed_probes = 0, not_before = null, hold_reason = null,
          probe_owner = null, probe_until = null, last_success_at = now(), updated_at = now()
      from prev
      where h.workspace_id = ${workspaceId}
        and (h.breaker <> 'closed' or h.consecutive_failures <> 0 or h.not_before is not null)
      returning prev.breaker as was`;
    return r?.was ?? null;
  }

  /** Gives a half-open probe back without an outcome (shutdown, no signing key): the next claim probes again. */
  async releaseProbe(workspaceId: string, token: string): Promise<void> {
    await this.sql`
      update notifications.endpoint_health
      set breaker = 'open', probe_owner = null, probe_until = null, updated_at = now()
      where workspace_id = ${workspaceId} and breaker = 'half_open' and probe_owner = ${token}`;
  }

  /** With the embedded database (one process): probes left by a previous run are released at start. */
  async releaseAllProbes(): Promise<number> {
    const r = await this.sql`
      update notifications.endpoint_health set breaker = 'open', probe_owner = null, probe_until = null
      where breaker = 'half_open'`;
    return r.count;
  }

  /** Endpoints by breaker state (closed counts only endpoints with a row), for the scrape-time gauge. */
  async breakerCounts(): Promise<Record<BreakerState, number>> {
    const rows = await this.sql<{ breaker: BreakerState; n: number }[]>`
      select breaker, count(*)::int as n from notifications.endpoint_health group by breaker`;
    const out: Record<BreakerState, number> = { closed: 0, open: 0, half_open: 0 };
    for (const r of rows) out[r.breaker] = Number(r.n);
    return out;
  }

  /** 410 Gone: the partner says the endpoint is gone for good; suspend it at once (docs/notifications.md, "Status"). */
  async suspendGone(workspaceId: string): Promise<void> {
    const [s] = await this.sql<{ workspace_id: string }[]>`
      update notifications.endpoints set status = 'suspended', suspended_at = now()
      where workspace_id = ${workspaceId} and status = 'active'
      returning workspace_id`;
    if (!s) return;
    notificationsMetrics.inc('endpoints_suspended');
    notificationsMetrics.inc('endpoints_gone');
    this.log.warn(
      { event: logEvent('webhook.endpoint.suspended'), workspace_id: workspaceId, reason: 'gone', status: 410 },
      'webhook endpoint suspended: it answered 410 Gone; a registration whose challenge is echoed reactivates it',
    );
  }

  /** A run of abandoned deliveries without a 2xx between them suspends an active endpoint. */
  async countAbandoned(workspaceId: string, n: number): Promise<void> {
    const [s] = await this.sql<{ consecutive_abandoned: number; status: string }[]>`
      update notifications.endpoints
      set consecutive_abandoned = consecutive_abandoned + ${n},
          status = case when status = 'active' and consecutive_abandoned + ${n} >= ${SUSPEND_AFTER_ABANDONED} then 'suspended' else status end,
          suspended_at = case when status = 'active' and consecutive_abandoned + ${n} >= ${SUSPEND_AFTER_ABANDONED} then now() else suspended_at end
      where workspace_id = ${workspaceId} and status = 'active'
      returning consecutive_abandoned, status`;
    if (s?.status === 'suspended') {
      notificationsMetrics.inc('endpoints_suspended');
      this.log.warn(
        { event: logEvent('webhook.endpoint.suspended'), workspace_id: workspaceId, reason: 'abandoned', consecutive_abandoned: s.consecutive_abandoned },
        'webhook endpoint suspended: deliveries keep being abandoned; a registration whose challenge is echoed reactivates it',
      );
    }
  }

  /**
   * Deliveries that waited behind an open (or half-open) breaker for longer than the
   * whole retry schedule (plus one longest open interval) since they were queued are abandoned without another attempt
   * (`last_error` `circuit_open`): a dead endpoint's backlog ends on the same clock as
   * it would have without the breaker, and counts towards suspension.
   */
  async abandonExpiredBehindBreaker(): Promise<void> {
    const span = breakerWaitLimitSeconds(this.schedule);
    const sql = this.asyncSql;
    const rows = await sql<{ workspace_id: string; event_id: string; event_type: string; attempts: number; last_status: number | null }[]>`
      with gone as (${lockRows(sql, {
        columns: sql`d.id`,
        from: sql`notifications.deliveries d
          join notifications.endpoint_health h on h.workspace_id = d.workspace_id and h.breaker <> 'closed'
          join notifications.endpoints e on e.workspace_id = d.workspace_id and e.status = 'active'`,
        of: 'd',
        where: sql`h.breaker <> 'closed' and ${deliveryQueue.free(sql, 'd')} and d.created_at < now() - ${span}::float8 * interval '1 second'`,
        orderBy: sql`d.id`,
        limit: 500,
      })})
      update notifications.deliveries d
      set state = 'abandoned', last_error = 'circuit_open', next_attempt_at = null, lease_owner = null, lease_until = null, finished_at = now()
      from gone where d.id = gone.id
      returning d.workspace_id, d.event_id, d.event_type, d.attempts, d.last_status`;
    if (rows.length === 0) return;
    const perEndpoint = new Map<string, number>();
    for (const r of rows) {
      notificationsMetrics.inc('abandoned', { event_type: r.event_type });
      this.log.warn(
        {
          event: logEvent('webhook.delivery.abandoned'),
          workspace_id: r.workspace_id,
          event_id: r.event_id,
          event_type: r.event_type,
          attempts: r.attempts,
          status: r.last_status,
          error: 'circuit_open',
        },
        'webhook delivery abandoned after its last attempt',
      );
      perEndpoint.set(r.workspace_id, (perEndpoint.get(r.workspace_id) ?? 0) + 1);
    }
    for (const [ws, n] of perEndpoint) await this.countAbandoned(ws, n);
  }
}

/** An endpoint's health as operators see it (GetEndpoint, `psync webhook health`). */
export interface EndpointHealthView {
  breaker: BreakerState;
  consecutive_failures: number;
  not_before: Date | null;
  hold_reason: string | null;
  opened_at: Date | null;
  last_failure_at: Date | null;
  last_status: number | null;
  last_error: string | null;
  last_success_at: Date | null;
  pending: number;
  due: number;
}

/**
 * Reads one endpoint's health and backlog (no row: closed, nothing failing).
 * `last_success_at` is the later of the row's (written only when a 2xx reset something:
 * `success` above) and the newest delivered delivery's `finished_at`: a healthy
 * endpoint's 2xx is not written to this table (the dispatcher skips the statement
 * when there is nothing to reset), and the deliveries record every one of them until
 * they are pruned.
 */
export async function readEndpointHealth(sql: Sql, workspaceId: string): Promise<EndpointHealthView> {
  const [r] = await sql<EndpointHealthView[]>`
    select coalesce(h.breaker, 'closed') as breaker, coalesce(h.consecutive_failures, 0) as consecutive_failures,
           case when h.not_before > now() then h.not_before end as not_before,
           case when h.not_before > now() then h.hold_reason end as hold_reason,
           h.opened_at, h.last_failure_at, h.last_status, h.last_error,
           greatest(h.last_success_at, (
             select max(d.finished_at) from notifications.deliveries d where d.workspace_id = ${workspaceId} and d.state = 'delivered'
           )) as last_success_at,
           (select count(*)::int from notifications.deliveries d where d.workspace_id = ${workspaceId} and d.state = 'pending') as pending,
           (select count(*)::int from notifications.deliveries d where d.workspace_id = ${workspaceId} and d.state = 'pending' and d.next_attempt_at <= now()) as due
    from (select 1) one left join notifications.endpoint_health h on h.workspace_id = ${workspaceId}`;
  return r!;
}
