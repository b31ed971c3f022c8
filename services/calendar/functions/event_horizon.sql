-- version: 1
-- The WatchEvents horizon (docs/calendar.md "WatchEvents"): an xid below which no
-- registered writer (listing_lock.sql) can still add an event. Readers call
-- event_horizon() in one statement and read events below it in a LATER statement
-- (watch.ts, event-retention.ts). Why nothing is ever skipped is argued in
-- services/calendar/migrations/0005_event_writers.sql.

-- The full xid of a 32-bit xid within 2^31 of p_near (every running transaction's xid
-- is, by PostgreSQL's wraparound protection).
create or replace function xid8_near(p_xid xid, p_near xid8) returns xid8
language sql immutable strict parallel safe
return (p_near::text::bigint
        + ((p_xid::text::bigint - (p_near::text::bigint & 4294967295)) % 4294967296 + 6442450944) % 4294967296
        - 2147483648)::text::xid8;

-- The WatchEvents horizon. READ COMMITTED only: the events
-- must be read in a snapshot taken after this returns.
create or replace function event_horizon() returns xid8
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
