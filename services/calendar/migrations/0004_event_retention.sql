-- Retention of the WatchEvents log (docs/calendar.md "Retention").
--
-- The calendar deletes events older than CALENDAR_EVENT_RETENTION_DAYS, 10,000 at a
-- time (services/calendar/event-retention.ts). It only ever deletes a PREFIX of the
-- stream order (xid, seq): it walks `events_order_idx` from the last position it
-- deleted and stops at the first event that is still young or whose transaction is
-- not below the horizon (pg_snapshot_xmin). So the retained events are always
-- everything after one position, the watermark below, and nothing can later appear
-- before it.
--
-- The watermark decides what WatchEvents does with a cursor (services/calendar/watch.ts):
--   * a retained event, or the watermark itself (the last event pruned): resume after it;
--   * otherwise a seq <= max_seq: its events were pruned -> OUT_OF_RANGE (CURSOR_EXPIRED);
--   * otherwise: never an event -> INVALID_ARGUMENT, as before.
-- max_seq is kept apart from (xid, seq) because seq order is not stream order: the
-- last event pruned in stream order need not have the highest seq pruned.
-- A running stream reads the watermark in the statement that reads its next events
-- (one snapshot): a prune that overtook its position fails it rather than skip.
--
-- One row, present from the start: (0, 0, 0) = nothing pruned yet.
create table events_pruned (
  singleton boolean primary key default true check (singleton),
  -- stream position (xid, seq) of the last event pruned
  xid       xid8 not null,
  seq       bigint not null,
  -- highest seq pruned
  max_seq   bigint not null,
  pruned_at timestamptz
);
insert into events_pruned (xid, seq, max_seq) values ('0', 0, 0);
-- Statistics now, so the planner knows it is one row before autovacuum looks at it.
analyze events_pruned;

-- No new index: the prune reads events in (xid, seq) order from the watermark through
-- events_order_idx (created_at is only looked at on the rows it reaches: the rows it
-- deletes, plus one) and deletes them as a range of that same index.
