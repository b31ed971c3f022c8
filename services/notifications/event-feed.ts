/**
 * The events feed: what a partner reads to recover events its endpoint missed (public
 * GET /v1/events, docs/partners/missed-events.md). The intake records every proven
 * booking.confirmed, booking.cancelled and user.erased event of a sandbox workspace
 * (intake.ts recordEvents), numbered per workspace in the order the records commit
 * (positions increase; they may skip a number); this module reads a workspace's feed
 * after a position and prunes it by age.
 *
 * Each entry is the delivery's body byte for byte (same event_id, occurred_at and
 * data; the guest's name null once the guest was erased), whether the endpoint took a
 * delivery of it or not: paused, unverified, suspended, abandoned or never registered.
 */
import { create } from '@bufbuild/protobuf';
import { ListEventsResponseSchema, type ListEventsRequest, type ListEventsResponse } from '../../gen/psync/notifications/v1/notifications_pb';
import type { Sql } from '../kit/db';
import type { Logger } from '../kit/base';
import { BatchPruner } from '../kit/work';
import { EVENT_FEED_RETENTION_DAYS, PAGE_SIZE_DEFAULT } from '../kit/base';

/** How often entries past the retention are deleted, and how many per statement. */
export const EVENT_FEED_PRUNE_EVERY_MS = 60 * 60 * 1000;
export const EVENT_FEED_PRUNE_BATCH = 5_000;

/** `workspaceId`'s entries after `req.after` (the oldest kept when absent), oldest first. */
export async function listEvents(sql: Sql, req: ListEventsRequest): Promise<ListEventsResponse> {
  const limit = req.limit || PAGE_SIZE_DEFAULT;
  const after = (req.after ?? 0n).toString();
  // One more than asked tells whether more follow; the head's pruned_through matters
  // only to a reader resuming from a position.
  const [rows, head] = await Promise.all([
    // Ordered by the column, not by the text it is answered as.
    sql<{ position: string; envelope: string }[]>`
      select f.position::text as position, f.envelope from notifications.event_feed f
      where f.workspace_id = ${req.workspaceId} and f.position > ${after}::bigint
      order by f.position
      limit ${limit + 1}`,
    req.after === undefined
      ? undefined
      : sql<{ pruned_through: string }[]>`
          select pruned_through::text from notifications.event_feed_heads where workspace_id = ${req.workspaceId}`.then(([h]) => h),
  ]);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return create(ListEventsResponseSchema, {
    events: page.map((r) => ({ position: BigInt(r.position), envelope: r.envelope })),
    nextAfter: last ? BigInt(last.position) : req.after,
    hasMore: rows.length > limit,
    afterExpired: req.after !== undefined && head !== undefined && req.after < BigInt(head.pruned_through),
  });
}

/** Deletes up to `batch` entries recorded more than `retentionDays` ago; returns how many. */
export async function pruneEventFeedOnce(sql: Sql, retentionDays = EVENT_FEED_RETENTION_DAYS, batch = EVENT_FEED_PRUNE_BATCH): Promise<number> {
  // The head remembers how far its feed was pruned, so a reader resuming from a pruned
  // position is told (after_expired).
  const [row] = await sql<{ deleted: number }[]>`
    with gone as (
      delete from notifications.event_feed
      where (workspace_id, position) in (
        select workspace_id, position from notifications.event_feed
        where recorded_at < now() - make_interval(days => ${retentionDays})
        limit ${batch}
      )
      returning workspace_id, position
    ), marks as (
      update notifications.event_feed_heads h set pruned_through = greatest(h.pruned_through, g.last)
      from (select workspace_id, max(position) as last from gone group by workspace_id) g
      where h.workspace_id = g.workspace_id
    )
    select count(*)::int as deleted from gone`;
  return row!.deleted;
}

/** The feed's housekeeping: prunes now and every EVENT_FEED_PRUNE_EVERY_MS until stop(). */
export class EventFeedPruner extends BatchPruner {
  constructor(sql: Sql, log: Logger, retentionDays = EVENT_FEED_RETENTION_DAYS, everyMs = EVENT_FEED_PRUNE_EVERY_MS) {
    super({
      pruneOnce: () => pruneEventFeedOnce(sql, retentionDays),
      batch: EVENT_FEED_PRUNE_BATCH,
      everyMs,
      name: 'event-feed-pruner',
      onPruned: (deleted) => log.info({ deleted, retention_days: retentionDays }, 'webhooks: events feed entries past the retention pruned'),
      onError: (err) => log.warn({ err }, 'webhooks: events feed pruning failed; retried later'),
    });
  }
}
