-- version: 3
-- ConfirmBooking in one statement (docs/calendar.md "Holds and bookings", "One style for
-- writes"; the result type confirm_booking_result is in
-- services/calendar/migrations/0009_confirm_booking.sql). What the caller decides stays
-- in TypeScript (services/calendar/bookings.ts): the request's checks, the listing's
-- details read from the catalog, the booking reference, the events' bodies
-- (event-log.ts) and the idempotency key's scope (idempotency.ts). What must happen
-- under the listing's lock is here.

-- ConfirmBooking's writes, in one call:
--   1. with an idempotency key: the key's lock and row (idempotency.sql
--      lock_key_and_listing): found →
--      key_found;
--   2. the listing's lock (it registers the transaction as an event writer before any
--      write, listing_lock.sql);
--   3. overdue holds are found (not yet expired: a refusal writes nothing);
--   4. from a hold: it must be live and not overdue; directly: the conflict scan over
--      every holder, overdue holds left out;
--   5. the writes: overdue holds expired (their events first), the hold's claim changes
--      holder in place (nothing can slip in between) or the booking's claim is
--      inserted, the booking row (with the times its BookingConfirmed in p_events
--      carries), p_events (calendar.append_events), the key.
-- p_key_lock is unused: the key's lock is named in idempotency.sql. The parameter stays
-- because the previous release passes it (the same name, built in TypeScript then);
-- the current one passes null.
create or replace function confirm_booking(
  p_reference text, p_listing_id text, p_hold_id uuid, p_check_in date, p_check_out date,
  p_workspace_id text, p_environment text, p_provider_id text, p_party_size integer,
  p_guest_id text, p_guest_name text, p_amount_value text, p_amount_currency text,
  p_requires_payment boolean, p_at timestamptz, p_events jsonb, p_headers jsonb,
  p_key_caller text, p_key text, p_key_sha256 bytea, p_key_lock text
) returns confirm_booking_result
language plpgsql volatile as $$
declare
  r calendar.confirm_booking_result;
  v_now timestamptz;
  v_overdue text[];
begin
  r.conflicts := '{}';
  select 'key_found', k.rpc, k.request_sha256, k.result_ref into r.outcome, r.key_rpc, r.key_sha256, r.result_ref
  from calendar.lock_key_and_listing(p_key_caller, p_key, p_listing_id) k;
  if found then return r; end if;
  v_now := clock_timestamp();
  v_overdue := calendar.overdue_holds(p_listing_id, v_now);

  if p_hold_id is not null then
    if not exists (
      select 1 from calendar.holds
      where hold_id = p_hold_id and status = 'live' and hold_id::text <> all (v_overdue)
    ) then
      r.outcome := 'hold_not_live';
      return r;
    end if;
  else
    r.conflicts := calendar.night_conflicts(p_listing_id, p_check_in, p_check_out, false, v_overdue);
    if cardinality(r.conflicts) > 0 then
      r.outcome := 'conflict';
      return r;
    end if;
  end if;

  if cardinality(v_overdue) > 0 then
    perform calendar.expire_holds(p_listing_id, p_at, p_headers, v_now);
  end if;
  if p_hold_id is not null then
    update calendar.holds set status = 'converted', ended_at = p_at, booking_reference = p_reference
    where hold_id = p_hold_id;
    update calendar.claims set holder_kind = 'booking', holder_id = p_reference
    where holder_kind = 'hold' and holder_id = p_hold_id::text;
  else
    insert into calendar.claims (listing_id, holder_kind, holder_id, nights)
    values (p_listing_id, 'booking', p_reference, daterange(p_check_in, p_check_out));
  end if;
  -- The times are the ones the booking's BookingConfirmed in p_events announces: the
  -- booking keeps what the partner is told (migration 0013).
  insert into calendar.bookings (booking_reference, listing_id, workspace_id, environment, provider_id,
    check_in, check_out, party_size, guest_id, guest_name, amount_value, amount_currency,
    requires_payment, hold_id, status, confirmed_at, check_in_time, check_out_time)
  select p_reference, p_listing_id, p_workspace_id, p_environment, p_provider_id,
    p_check_in, p_check_out, p_party_size, p_guest_id, p_guest_name, p_amount_value, p_amount_currency,
    p_requires_payment, p_hold_id, 'confirmed', p_at, c.body->>'check_in_time', c.body->>'check_out_time'
  from (select (select e->'body' from jsonb_array_elements(p_events) e
                where e->>'type' = 'booking_confirmed' limit 1) as body) c;
  perform calendar.append_events(p_events, p_headers);
  perform calendar.record_idempotency_key(p_key_caller, p_key, 'ConfirmBooking', p_key_sha256, p_reference);
  r.outcome := 'confirmed';
  return r;
end $$;
