-- version: 2
-- Hold expiry under the listing's lock: holds past expires_at become expired, their
-- claims are freed and each gets a hold_expired event. p_now (default: the clock) is
-- the instant the caller's conflict scan used, so both agree on which holds are
-- overdue.

-- The listing's live holds past expires_at at p_now (hold ids as text, as claims name
-- them): the writers scan for conflicts leaving these out before they expire them, so a
-- refusal writes nothing.
create or replace function overdue_holds(p_listing_id text, p_now timestamptz) returns text[]
language sql stable as $$
  select array(
    select hold_id::text from calendar.holds
    where listing_id = p_listing_id and status = 'live' and expires_at <= p_now)
$$;

create or replace function expire_holds(p_listing_id text, p_at timestamptz, p_headers jsonb, p_now timestamptz default null)
returns integer
language plpgsql volatile as $$
declare
  h record;
  n integer := 0;
begin
  for h in
    with expired as (
      update calendar.holds set status = 'expired', ended_at = expires_at
      where listing_id = p_listing_id and status = 'live' and expires_at <= coalesce(p_now, clock_timestamp())
      returning hold_id, workspace_id, check_in, check_out
    ), freed as (
      delete from calendar.claims
      where holder_kind = 'hold' and holder_id in (select hold_id::text from expired)
    )
    select hold_id, workspace_id, check_in, check_out from expired
  loop
    perform calendar.append_calendar_changed(p_at, p_headers, h.workspace_id, p_listing_id,
      'hold_expired', 'hold', h.hold_id::text, daterange(h.check_in, h.check_out), null);
    n := n + 1;
  end loop;
  return n;
end $$;

-- The hold sweeper's write (services/calendar/holds.ts HoldSweeper), in one call: the
-- listing's lock, then expire_holds. Returns how many holds expired.
create or replace function sweep_holds(p_listing_id text, p_at timestamptz, p_headers jsonb)
returns integer
language plpgsql volatile as $$
begin
  perform calendar.lock_listing(p_listing_id);
  return calendar.expire_holds(p_listing_id, p_at, p_headers);
end $$;
