/**
 * Retention of the WatchEvents log (docs/calendar.md "Retention"): events older than
 * CALENDAR_EVENT_RETENTION_DAYS are deleted, 10,000 per statement, every 10 minutes.
 *
 * Only a prefix of the stream order (xid, seq) is ever deleted — from the last
 * position deleted up to, not including, the first event still young or not yet below
 * the calendar's horizon (event-horizon.ts, as WatchEvents reads) — and that
 * position is recorded in the same transaction (`calendar.events_pruned`, migration
 * 0004). So what is retained is exactly what comes after the watermark, and
 * WatchEvents (watch.ts) compares a cursor with it: a cursor at or after it resumes as
 * before, one before it fails OUT_OF_RANGE.
 *
 * One pruner at a time across replicas (a transaction-scoped advisory lock; the
 * others find it taken and skip that batch).
 */
import type { Sql } from '../kit/db';
import { logEvent, type Logger } from '../kit/base';
import { BatchPruner } from '../kit/work';

/** Events deleted per statement. */
export const PRUNE_BATCH = 10_000;
/** How often the calendar prunes. */
export const PRUNE_EVERY_MS = 10 * 60 * 1000;

/**
 * Deletes, in stream order from the watermark, up to `batch` events created more than
 * `retentionDays` ago, stopping at the first younger one; moves the watermark to the
 * last one deleted. Returns how many (0 also when another process is pruning).
 */
export async function pruneEventsOnce(sql: Sql, retentionDays: number, batch = PRUNE_BATCH): Promise<number> {
  return sql.begin(async (tx) => {
    const [lock] = await tx<{ locked: boolean }[]>`
      select pg_try_advisory_xact_lock(hashtextextended('psync.calendar.event-retention', 0)) as locked`;
    if (!lock!.locked) return 0;
    // The watermark, and the calendar's horizon (event-horizon.ts), read in this
    // statement so that the events below it are read in a later one.
    const [from] = await tx<{ xid: string; seq: string; horizon: string }[]>`
      select xid::text, seq::text, calendar.event_horizon()::text as horizon from calendar.events_pruned`;
    // The last event to delete: the batch is read in stream order from the watermark,
    // `doomed` is true up to its first young event and false from there on (a running
    // bool_and), so what is deleted is a prefix. Rows at or above the horizon are not
    // read: a transaction still running could yet add events before them.
    const [to] = await tx<{ xid: string; seq: string }[]>`
      select head.xid::text, head.seq::text from (
        select e.xid, e.seq, bool_and(e.created_at < now() - make_interval(days => ${retentionDays})) over (order by e.xid, e.seq) as doomed
        from (
          select x.xid, x.seq, x.created_at from calendar.events x
          where (x.xid, x.seq) > (${from!.xid}::xid8, ${from!.seq}::bigint)
            and x.xid < ${from!.horizon}::xid8
          order by x.xid, x.seq
          limit ${batch}
        ) e
      ) head
      where head.doomed
      order by head.xid desc, head.seq desc -- the xid8 and bigint, not their text
      limit 1`;
    if (!to) return 0;
    // Everything in (from, to] is that prefix: every transaction below the horizon has
    // ended, so no event can join the range. Deleted by a range of events_order_idx;
    // the watermark moves in the same transaction, so a reader sees both or neither.
    const [row] = await tx<{ deleted: number }[]>`
      with gone as (
        delete from calendar.events
        where (xid, seq) > (${from!.xid}::xid8, ${from!.seq}::bigint) and (xid, seq) <= (${to.xid}::xid8, ${to.seq}::bigint)
        returning seq
      ), moved as (
        update calendar.events_pruned
        set xid = ${to.xid}::xid8, seq = ${to.seq}::bigint, max_seq = greatest(max_seq, (select max(seq) from gone)), pruned_at = now()
      )
      select count(*)::int as deleted from gone`;
    return row!.deleted;
  });
}

/** Prunes now and every PRUNE_EVERY_MS until stop(); a failure costs a log line. */
export class EventPruner extends BatchPruner {
  constructor(sql: Sql, log: Logger, retentionDays: number, everyMs = PRUNE_EVERY_MS) {
    super({
      pruneOnce: () => pruneEventsOnce(sql, retentionDays),
      batch: PRUNE_BATCH,
      everyMs,
      onPruned: (deleted) => log.info({ event: logEvent('calendar.events.pruned'), deleted, retention_days: retentionDays }, 'calendar: events past the retention pruned'),
      onError: (err) => log.warn({ err }, 'calendar: event pruning failed; retried later'),
    });
  }
}
