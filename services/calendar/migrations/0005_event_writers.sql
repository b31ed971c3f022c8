-- The WatchEvents horizon belongs to the calendar alone (issue 14 item 3;
-- docs/calendar.md "WatchEvents").
--
-- The stream reads calendar.events in (xid, seq) order and only below a horizon: an
-- xid below which no transaction can still add an event (0001). Until now the horizon
-- was pg_snapshot_xmin(pg_current_snapshot()), the oldest transaction running ANYWHERE
-- on the server, so a migration, an import or an analyst's session in another
-- database or schema stalled every stream for as long as it stayed open.
--
-- Now the calendar's writers say who they are, and the horizon is computed from them:
--
--  * every transaction that writes calendar.events first calls begin_event_write(),
--    BEFORE it writes anything (so before it has an xid): it takes a shared,
--    transaction-scoped advisory lock, the "writer registration". lock_listing() calls
--    it, and every writer takes a listing's lock first (put_block, holds, bookings,
--    block deletion, the hold sweeper), so no TypeScript changed. A statement trigger
--    refuses an insert into calendar.events by a transaction that did not register.
--
--  * event_horizon() = least(the snapshot's xmax, the xid of every registered writer
--    still running), read from pg_locks (who holds the registration) and the backends'
--    xids (pg_stat_get_activity). Readers call it in one statement and read events
--    below it in a LATER statement (watch.ts, event-retention.ts).
--
-- Why nothing is ever skipped: let W be a transaction still running when the reader's
-- event statement takes its snapshot, with xid X below the horizon H. H <= xmax of the
-- horizon statement's snapshot (taken when that statement began), so X was assigned
-- before then, and W registered before it had X: W held the registration during the
-- whole horizon statement and its backend showed X, so H <= X. Contradiction. So every
-- transaction with an xid below H has ended by the time the events are read: its
-- events are all visible or never will be (aborted), and nothing can later appear
-- below H. Transactions that never register (other databases, other schemas, read-only
-- sessions, a bulk import, an operator's UPDATE of a calendar table) are not looked at.
--
-- Stream order, cursors (seq) and the retention watermark are unchanged: existing
-- cursors stay valid. Works on PostgreSQL >= 14 (SQL-standard function bodies) and on
-- PGlite (one session: the horizon is simply xmax). Two-phase commit is not used by the
-- calendar; a prepared transaction holding the registration (no pid) makes the horizon
-- fall back to the server-wide xmin.

-- The registration lock is the two-int4 advisory key (1886615907 = 'psyc' in ASCII, 1);
-- two-int4 keys (objsubid 2 in pg_locks) never collide with the bigint keys of
-- lock_listing and the pruner (objsubid 1).

-- Registers the current transaction as a writer of calendar events. Call it before the
-- transaction writes anything; calling it again later is a no-op. It never blocks:
-- nobody takes the registration lock exclusively.
create function begin_event_write() returns void
language plpgsql volatile as $$
begin
  if current_setting('psync.calendar_event_writer', true) = 'on' then
    return;
  end if;
  if pg_current_xact_id_if_assigned() is not null then
    -- Registered after the xid was assigned, a reader could compute a horizon past
    -- this transaction and skip its events: refuse (a programming error).
    raise exception 'calendar.begin_event_write() must come before the transaction writes anything'
      using errcode = '55000';
  end if;
  perform pg_advisory_xact_lock_shared(1886615907, 1);
  perform set_config('psync.calendar_event_writer', 'on', true);
end $$;

-- Every writer of events takes a listing's lock first: register there.
create or replace function lock_listing(p_listing_id text) returns void
language plpgsql volatile as $$
begin
  perform calendar.begin_event_write();
  perform pg_advisory_xact_lock(hashtextextended('psync.calendar.listing:' || p_listing_id, 0));
end $$;

-- The guard: an event written by a transaction that did not register fails loudly
-- instead of risking a skipped event.
create function events_require_writer() returns trigger
language plpgsql as $$
begin
  if current_setting('psync.calendar_event_writer', true) is distinct from 'on' then
    raise exception 'calendar.events written by a transaction that did not call calendar.begin_event_write() first'
      using errcode = '55000',
            hint = 'call calendar.lock_listing() or calendar.begin_event_write() before the transaction''s first write';
  end if;
  return null;
end $$;
create trigger events_require_writer before insert on events
  for each statement execute function events_require_writer();

-- The full xid of a 32-bit xid within 2^31 of p_near (every running transaction's xid
-- is, by PostgreSQL's wraparound protection).
create function xid8_near(p_xid xid, p_near xid8) returns xid8
language sql immutable strict parallel safe
return (p_near::text::bigint
        + ((p_xid::text::bigint - (p_near::text::bigint & 4294967295)) % 4294967296 + 6442450944) % 4294967296
        - 2147483648)::text::xid8;

-- The WatchEvents horizon (see the top of this file). READ COMMITTED only: the events
-- must be read in a snapshot taken after this returns.
create function event_horizon() returns xid8
language plpgsql volatile as $$
declare
  v_horizon xid8;
begin
  if current_setting('transaction_isolation') <> 'read committed' then
    raise exception 'calendar.event_horizon() needs READ COMMITTED (its snapshot must precede the events read)'
      using errcode = '25000';
  end if;
  -- Backend status is cached for the rest of a transaction once read: read it afresh.
  perform pg_stat_clear_snapshot();
  with s as (
    select pg_snapshot_xmax(pg_current_snapshot()) as xmax, pg_snapshot_xmin(pg_current_snapshot()) as xmin
  ), writers as (
    select l.pid from pg_locks l
    where l.locktype = 'advisory' and l.classid = 1886615907 and l.objid = 1 and l.objsubid = 2
      and l.database = (select oid from pg_database where datname = current_database())
  )
  select case
    when exists (select 1 from writers w where w.pid is null) then s.xmin
    else least(s.xmax, (
      select min(calendar.xid8_near(a.backend_xid, s.xmax))
      from writers w cross join lateral pg_stat_get_activity(w.pid) a
      where a.backend_xid is not null))
  end
  into v_horizon
  from s;
  return v_horizon;
end $$;
