/**
 * Replay of abandoned deliveries (`psync deliveries replay`; docs/notifications.md,
 * "Replay").
 *
 * - Only `abandoned` deliveries of the given workspace are replayed: one by event_id,
 *   or all of them. Delivered and pending ones are left alone and not counted. An
 *   event_id the workspace has no delivery for is NOT_FOUND (another workspace's
 *   deliveries are invisible: every lookup is scoped to the workspace).
 * - A replayed delivery is pending again as if just queued: attempts 0, no last
 *   status or error, next attempt now (the retry schedule starts over), no lease,
 *   `created_at` = now (so the backlog-age gauge measures from the replay). It keeps
 *   its event_id, kind, occurred_at and trace, and its body: an abandoned delivery
 *   keeps the exact body it was abandoned with (dispatcher.ts; guest name scrubbed if
 *   the guest was erased meanwhile, intake.ts). A delivery abandoned before replay
 *   existed has no body: it stays abandoned and is counted as not replayable.
 * - One statement: it locks the selected abandoned rows (no dispatcher worker holds
 *   them: workers claim only pending rows, skipping rows others lock) and puts those with a
 *   body back to pending. A concurrent replay of the same row waits, then finds it
 *   pending and leaves it. The dispatcher picks the rows up at its next poll, in
 *   their original order (next_attempt_at is the same, then id).
 * - The endpoint is not touched: a suspended, unverified or paused endpoint gets
 *   nothing until it is active again; the attempts still run down the schedule
 *   (`endpoint_not_active`), then the delivery is abandoned again and can be replayed
 *   again. Suspension is left only by an echoed registration.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import type { Sql } from '../kit/db';
import { logEvent, type Logger } from '../kit/base';
import type { DeliveryListRow } from './delivery-list';
import { validationFailed } from '../kit/rpc';
import { canonicalUuid } from '../kit/base';
import type { EndpointStatus } from './registration';

/** Which abandoned deliveries to replay. */
export type ReplaySelection = { eventId: string } | { allAbandoned: true };

export interface ReplayResult {
  /** The re-queued deliveries (now pending), oldest first. */
  items: DeliveryListRow[];
  /** Abandoned deliveries selected but without a body; they stay abandoned. */
  notReplayable: number;
  /** The workspace endpoint's status (unchanged); null when none is registered. */
  endpointStatus: EndpointStatus | null;
}

/** One row per replayed delivery (none: one row of nulls), each with the summary. */
interface ReplayRow extends Nullable<DeliveryListRow> {
  id: string | null;
  not_replayable: number;
  matched: number;
  endpoint_status: EndpointStatus | null;
}

type Nullable<T> = { [K in keyof T]: T[K] | null };

/** Re-queues the selected abandoned deliveries of `workspaceId`; logs one line per delivery. */
export async function replayDeliveries(sql: Sql, log: Logger, workspaceId: string, selection: ReplaySelection): Promise<ReplayResult> {
  // Both are UUIDs: notifications.proto's rules on ReplayDeliveriesRequest.
  const ws = canonicalUuid(workspaceId);
  const eventId = 'eventId' in selection ? canonicalUuid(selection.eventId) : null;
  const rows = await sql<ReplayRow[]>`
    with target as (
      select d.id, d.body is not null as has_body from notifications.deliveries d
      where d.workspace_id = ${ws} and d.state = 'abandoned'
        and (${eventId}::uuid is null or d.event_id = ${eventId}::uuid)
      order by d.id
      for update of d
    ), replayed as (
      update notifications.deliveries d
      set state = 'pending', attempts = 0, last_status = null, last_error = null,
          next_attempt_at = now(), lease_owner = null, lease_until = null, finished_at = null,
          created_at = now()
      from target t
      where d.id = t.id and t.has_body
      returning d.id, d.workspace_id, d.event_id, d.event_type, d.state, d.attempts, d.last_status,
                d.last_error, d.next_attempt_at, d.occurred_at, d.created_at
    ), summary as (
      select
        (select count(*)::int from target t where not t.has_body) as not_replayable,
        (select count(*)::int from notifications.deliveries d
          where d.workspace_id = ${ws} and d.event_id = ${eventId}::uuid) as matched,
        (select e.status from notifications.endpoints e where e.workspace_id = ${ws}) as endpoint_status
    )
    select s.not_replayable, s.matched, s.endpoint_status,
           r.id, r.workspace_id, r.event_id, r.event_type, r.state, r.attempts, r.last_status,
           r.last_error, r.next_attempt_at, r.occurred_at, r.created_at
    from summary s left join replayed r on true
    order by r.id`;
  const summary = rows[0]!;
  if (eventId !== null && summary.matched === 0) {
    throw new ConnectError('no delivery with that event_id in this workspace', Code.NotFound);
  }
  const items = rows
    .filter((r) => r.id !== null)
    .map((r): DeliveryListRow => ({
      workspace_id: r.workspace_id!,
      event_id: r.event_id!,
      event_type: r.event_type!,
      state: r.state!,
      attempts: r.attempts!,
      last_status: r.last_status,
      last_error: r.last_error,
      next_attempt_at: r.next_attempt_at,
      occurred_at: r.occurred_at!,
      created_at: r.created_at!,
    }));
  for (const d of items) {
    log.info(
      { event: logEvent('webhook.delivery.replayed'), workspace_id: d.workspace_id, event_id: d.event_id, event_type: d.event_type, endpoint_status: summary.endpoint_status },
      'webhook delivery replayed: pending again with a fresh retry schedule',
    );
  }
  if (summary.not_replayable > 0) {
    log.warn(
      { workspace_id: ws, event_id: eventId ?? undefined, not_replayable: summary.not_replayable },
      'webhook deliveries not replayed: abandoned before replay existed, their body was not kept',
    );
  }
  return {
    items,
    notReplayable: summary.not_replayable,
    endpointStatus: summary.endpoint_status,
  };
}

/** The selection of a ReplayDeliveries request; INVALID_ARGUMENT without one. */
export function replaySelection(selection: { case: 'eventId'; value: string } | { case: 'allAbandoned'; value: boolean } | { case: undefined }): ReplaySelection {
  if (selection.case === 'eventId') return { eventId: selection.value };
  if (selection.case === 'allAbandoned' && selection.value) return { allAbandoned: true };
  throw validationFailed([{ field: 'selection', code: 'required' }], 'give event_id or all_abandoned = true');
}
