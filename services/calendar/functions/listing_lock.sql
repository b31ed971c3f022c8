-- version: 1
-- The listing lock and the event-writer registration (docs/calendar.md "One lock per
-- listing", "WatchEvents"). Every writer of a listing's nights and events takes the
-- listing's lock first; taking it registers the transaction as a writer of
-- calendar.events, before the transaction writes anything. The registration is the
-- two-int4 advisory key (1886615907 = 'psyc' in ASCII, 1): two-int4 keys (objsubid 2 in
-- pg_locks) never collide with the bigint keys of lock_listing and the pruner.

-- Registers the current transaction as a writer of calendar events. Call it before the
-- transaction writes anything; calling it again later is a no-op. It never blocks:
-- nobody takes the registration lock exclusively.
create or replace function begin_event_write() returns void
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
create or replace function events_require_writer() returns trigger
language plpgsql as $$
begin
  if current_setting('psync.calendar_event_writer', true) is distinct from 'on' then
    raise exception 'calendar.events written by a transaction that did not call calendar.begin_event_write() first'
      using errcode = '55000',
            hint = 'call calendar.lock_listing() or calendar.begin_event_write() before the transaction''s first write';
  end if;
  return null;
end $$;
