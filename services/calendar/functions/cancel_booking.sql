-- version: 1
-- CancelBooking in one statement (docs/calendar.md "Holds and bookings", "One style for
-- writes"; the result type cancel_booking_result is in
-- services/calendar/migrations/0012_calendar_write_results.sql). The caller
-- (services/calendar/bookings.ts) has read the booking (its listing, nights, workspace)
-- and built the booking_cancelled events (event-log.ts), written only if this call
-- cancels it; p_by is who cancels: `guest` (the nights are freed) or `host` (they stay
-- closed to the marketplace: the claim becomes `withdrawn`).

-- CancelBooking's writes, in one call:
--   1. with an idempotency key: the key's lock and row (idempotency.sql
--      lock_key_and_listing): found →
--      key_found;
--   2. the listing's lock (it registers the transaction as an event writer before any
--      write, the key's included, listing_lock.sql), then the key (recorded with the
--      cancellation or with the answer naming an earlier one, so reusing it for another
--      booking fails);
--   3. overdue holds expire (their events first);
--   4. a confirmed booking is cancelled, its claim freed or withdrawn and p_events
--      appended → cancelled; one cancelled meanwhile → already_cancelled with that
--      cancellation's time.
create or replace function cancel_booking(
  p_reference text, p_listing_id text, p_by text, p_at timestamptz, p_events jsonb, p_headers jsonb,
  p_key_caller text, p_key text, p_key_sha256 bytea
) returns cancel_booking_result
language plpgsql volatile as $$
declare
  r calendar.cancel_booking_result;
begin
  r.events := 0;
  select 'key_found', k.rpc, k.request_sha256, k.result_ref into r.outcome, r.key_rpc, r.key_sha256, r.result_ref
  from calendar.lock_key_and_listing(p_key_caller, p_key, p_listing_id) k;
  if found then return r; end if;
  perform calendar.record_idempotency_key(p_key_caller, p_key, 'CancelBooking', p_key_sha256, p_reference);
  r.events := calendar.expire_holds(p_listing_id, p_at, p_headers);
  update calendar.bookings set status = 'cancelled', cancelled_at = p_at, cancelled_by = p_by
  where booking_reference = p_reference and status = 'confirmed';
  if not found then
    r.outcome := 'already_cancelled';
    select cancelled_at into r.cancelled_at from calendar.bookings where booking_reference = p_reference;
    return r;
  end if;
  if p_by = 'guest' then
    delete from calendar.claims where holder_kind = 'booking' and holder_id = p_reference;
  else
    update calendar.claims set holder_kind = 'withdrawn' where holder_kind = 'booking' and holder_id = p_reference;
  end if;
  r.events := r.events + calendar.append_events(p_events, p_headers);
  r.outcome := 'cancelled';
  r.cancelled_at := p_at;
  return r;
end $$;
