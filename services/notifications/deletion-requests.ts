/**
 * Deletion requests: what a user.erased delivery asks a partner to delete, and the
 * partner's acknowledgement (spec POST /deletion-requests/{event_id}/acknowledge).
 *
 * - One request per user.erased delivery, created with it (intake.ts).
 * - Acknowledge: workspace-scoped; an unknown event_id and another workspace's get
 *   the same NOT_FOUND. `completed_at` defaults to the time of receipt; one more than
 *   COMPLETED_AT_MAX_AHEAD_MS ahead of this service's clock is INVALID_ARGUMENT
 *   (`completed_at`, `maximum`), checked before anything is looked up; one ahead by
 *   less (clock skew) is recorded as the time of receipt, so `completed_at` is never
 *   after `acknowledged_at`. A second
 *   acknowledgement answers the first `acknowledged_at` (and `completed_at`) again.
 *   There is no failure state.
 * - Escalation: a request still unacknowledged DELETION_ESCALATION_SECONDS (default
 *   7 days) after it was created escalates once: an error-level log line, a metric,
 *   and state `escalated` in `psync deletion-requests list`. Acknowledging later is
 *   still accepted. A test request (a test user.erased, test-events.ts) never escalates:
 *   nobody's data is waiting to be deleted.
 * - Our own erasure never waits for any of this (intake.ts scrubs at once).
 *
 * The same periodic sweep also prunes finished deliveries after RETENTION_DAYS.
 */
import type { Sql } from '../kit/db';
import { logEvent, systemClock, type Clock, type Logger } from '../kit/base';
import { PeriodicJob } from '../kit/work';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { notFound } from '../kit/rpc';
import { isUuid } from './errors';
import { canonicalUuid } from '../kit/base';
import { invalidRequest } from '../kit/rpc';

export type DeletionRequestState = 'open' | 'acknowledged' | 'escalated';

export interface DeletionRequestRow {
  event_id: string;
  workspace_id: string;
  booking_references: string[];
  provider_ids: string[];
  occurred_at: Date;
  created_at: Date;
  acknowledged_at: Date | null;
  completed_at: Date | null;
  escalated_at: Date | null;
  /** A test user.erased's request (test-events.ts): never escalates. */
  test: boolean;
}

export function stateOf(r: DeletionRequestRow): DeletionRequestState {
  if (r.acknowledged_at) return 'acknowledged';
  return r.escalated_at ? 'escalated' : 'open';
}

/** Finished deliveries are kept this long for operators (psync deliveries list). */
export const RETENTION_DAYS = 30;
/** How often the housekeeping of finished deliveries runs (beside the escalation sweep). */
const PRUNE_EVERY_MS = 3_600_000;

const notFoundError = () => notFound(ErrorReason.DELETION_REQUEST_NOT_FOUND, 'no deletion request with that event_id');

/**
 * How far ahead of the receiving clock `completed_at` may be: the clock skew tolerated
 * between a partner's machines and ours (the same five minutes as the signature
 * timestamp tolerance, spec "Limits"). Deletion cannot have been completed later than
 * its acknowledgement: within the bound the value is clamped to the time of receipt,
 * beyond it refused (docs/decisions.md). The gateway applies the same bound
 * (gateway/routes/deletion-requests.ts; a test pins both).
 */
export const COMPLETED_AT_MAX_AHEAD_MS = 5 * 60_000;

export class DeletionRequests {
  private job: PeriodicJob | null = null;
  private readonly clock: Clock;

  constructor(private readonly deps: { sql: Sql; log: Logger; escalationSeconds: number; clock?: Clock }) {
    this.clock = deps.clock ?? systemClock;
  }

  /** Records the acknowledgement (once); returns the first acknowledged_at and completed_at. */
  async acknowledge(workspaceId: string, eventId: string, completedAt: Date | undefined): Promise<{ eventId: string; acknowledgedAt: Date; completedAt: Date }> {
    if (completedAt && completedAt.getTime() > this.clock.now() + COMPLETED_AT_MAX_AHEAD_MS) {
      throw invalidRequest([{ field: 'completed_at', code: 'maximum' }]);
    }
    // A malformed id can name no request: the same answer as an unknown one.
    if (!isUuid(workspaceId) || !isUuid(eventId)) throw notFoundError();
    const { sql } = this.deps;
    const [first] = await sql<{ event_id: string; acknowledged_at: Date; completed_at: Date }[]>`
      update notifications.deletion_requests
      set acknowledged_at = now(), completed_at = least(coalesce(${completedAt ?? null}::timestamptz, now()), now())
      where workspace_id = ${workspaceId} and event_id = ${eventId} and acknowledged_at is null
      returning event_id, acknowledged_at, completed_at`;
    if (first) {
      this.deps.log.info({ workspace_id: workspaceId, event_id: eventId }, 'deletion request acknowledged');
      return { eventId: first.event_id, acknowledgedAt: first.acknowledged_at, completedAt: first.completed_at };
    }
    const [again] = await sql<{ event_id: string; acknowledged_at: Date | null; completed_at: Date | null }[]>`
      select event_id, acknowledged_at, completed_at from notifications.deletion_requests
      where workspace_id = ${workspaceId} and event_id = ${eventId}`;
    if (!again?.acknowledged_at) throw notFoundError();
    return { eventId: again.event_id, acknowledgedAt: again.acknowledged_at, completedAt: again.completed_at ?? again.acknowledged_at };
  }

  /** Newest first, at most 500; optionally one workspace and one state. */
  async list(workspaceId: string, state: DeletionRequestState | undefined): Promise<DeletionRequestRow[]> {
    const ws = workspaceId ? canonicalUuid(workspaceId) : null;
    const { sql } = this.deps;
    return sql<DeletionRequestRow[]>`
      select event_id, workspace_id, booking_references, provider_ids, occurred_at, created_at,
             acknowledged_at, completed_at, escalated_at, test
      from notifications.deletion_requests
      where (${ws}::uuid is null or workspace_id = ${ws}::uuid)
        and (${state ?? null}::text is null
             or (${state ?? null}::text = 'acknowledged' and acknowledged_at is not null)
             or (${state ?? null}::text = 'escalated' and acknowledged_at is null and escalated_at is not null)
             or (${state ?? null}::text = 'open' and acknowledged_at is null and escalated_at is null))
      order by created_at desc, event_id
      limit 500`;
  }

  /** Escalates every request open longer than the threshold; returns how many. */
  async escalateDue(): Promise<number> {
    const { sql, log, escalationSeconds } = this.deps;
    const rows = await sql<{ workspace_id: string; event_id: string; created_at: Date }[]>`
      update notifications.deletion_requests set escalated_at = now()
      where acknowledged_at is null and escalated_at is null and not test
        and created_at <= now() - ${escalationSeconds}::float8 * interval '1 second'
      returning workspace_id, event_id, created_at`;
    for (const r of rows) {
      log.error(
        { event: logEvent('deletion_request.escalated'), workspace_id: r.workspace_id, event_id: r.event_id, created_at: r.created_at, escalation_seconds: escalationSeconds },
        'deletion request not acknowledged in time: escalated to operators (psync deletion-requests list --state escalated)',
      );
    }
    return rows.length;
  }

  /**
   * Housekeeping: deletes deliveries that finished (delivered or abandoned) more than
   * RETENTION_DAYS ago — with them the bodies abandoned deliveries keep for a replay —
   * and the erased-booking marks as old; up to 10,000 rows a run.
   * Deletion requests are kept (they are the record of what partners were asked).
   */
  async prune(): Promise<number> {
    const { sql } = this.deps;
    const d = await sql`
      delete from notifications.deliveries where id in (
        select id from notifications.deliveries
        where state <> 'pending' and finished_at < now() - ${RETENTION_DAYS}::int * interval '1 day'
        limit 10000)`;
    await sql`
      delete from notifications.erased_bookings
      where (workspace_id, booking_reference) in (
        select workspace_id, booking_reference from notifications.erased_bookings
        where erased_at < now() - ${RETENTION_DAYS}::int * interval '1 day'
        limit 10000)`;
    return d.count;
  }

  /** Runs escalateDue periodically (every min(60 s, threshold / 2), at least 1 s), and prune() hourly. */
  start(): void {
    const everyMs = Math.max(1000, Math.min(60_000, (this.deps.escalationSeconds * 1000) / 2));
    let lastPrune = -Infinity;
    this.job = new PeriodicJob(
      async () => {
        await this.escalateDue();
        if (this.clock.now() - lastPrune <= PRUNE_EVERY_MS) return;
        lastPrune = this.clock.now();
        const deleted = await this.prune();
        if (deleted > 0) this.deps.log.info({ deleted, retention_days: RETENTION_DAYS }, 'webhooks: old finished deliveries deleted');
      },
      everyMs,
      (err) => this.deps.log.warn({ err }, 'deletion requests: escalation sweep failed'),
      'deletion-requests',
      this.clock,
    );
    this.job.start();
  }

  async stop(): Promise<void> {
    await this.job?.stop();
    this.job = null;
  }
}
