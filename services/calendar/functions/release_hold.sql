-- version: 1
-- ReleaseHold in one statement (docs/calendar.md "Holds and bookings", "One style for
-- writes"; the result type release_hold_result is in
-- services/calendar/migrations/0012_calendar_write_results.sql). The caller
-- (services/calendar/holds.ts) has read the hold (its listing, nights and status) and
-- built its hold_released event (event-log.ts), written only if this call releases it.

-- ReleaseHold's writes, in one call: the listing's lock; the listing's overdue holds
-- expire (this one included: an overdue hold expires rather than being released); the
-- hold, if still live, is released, its claim freed and p_events appended. Answers how
-- many events were written and the hold's status afterwards.
create or replace function release_hold(
  p_hold_id uuid, p_listing_id text, p_at timestamptz, p_events jsonb, p_headers jsonb
) returns release_hold_result
language plpgsql volatile as $$
declare
  r calendar.release_hold_result;
begin
  perform calendar.lock_listing(p_listing_id);
  r.events := calendar.expire_holds(p_listing_id, p_at, p_headers);
  update calendar.holds set status = 'released', ended_at = clock_timestamp()
  where hold_id = p_hold_id and status = 'live';
  if found then
    delete from calendar.claims where holder_kind = 'hold' and holder_id = p_hold_id::text;
    r.events := r.events + calendar.append_events(p_events, p_headers);
  end if;
  select status into r.status from calendar.holds where hold_id = p_hold_id;
  return r;
end $$;
