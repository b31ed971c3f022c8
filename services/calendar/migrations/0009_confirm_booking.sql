-- ConfirmBooking in one statement (docs/calendar.md "Holds and bookings").
--
-- `confirm_booking(...)` does in the database what ConfirmBooking did in a transaction
-- of its own (BEGIN, the idempotency key's lock and look-up, the listing lock, hold
-- expiry, the conflict scan, the booking with its claim, its events, the key, COMMIT):
-- the service calls it as ONE statement in an implicit transaction, as PutBlock calls
-- put_block (migration 0003). It is built from the same pieces: lock_listing,
-- expire_holds, night_conflicts and append_events.
--
-- What the caller decides stays in TypeScript (services/calendar/bookings.ts): the
-- request's checks, the listing's details read from the catalog, the booking
-- reference, the events' bodies (event-log.ts) and the idempotency key's scope and
-- lock name (idempotency.ts). What must happen under the listing's lock is here.

-- What confirm_booking answers:
--   confirmed      the booking, its claim, its events (and the key) are written;
--   conflict       `conflicts` lists every night already held; nothing written;
--   hold_not_live  the hold expired, was released or was converted; nothing written;
--   key_found      the idempotency key was used before: `key_rpc`, `key_sha256` and
--                  `result_ref` are its row, for the caller to compare and answer
--                  (idempotency.ts); nothing written.
create type confirm_booking_result as (
  outcome    text,
  conflicts  text[],
  key_rpc    text,
  key_sha256 bytea,
  result_ref text
);

-- ConfirmBooking's writes, in one call:
--   1. with an idempotency key: the key's lock (p_key_lock, so concurrent first uses
--      run one after another), then its row: found → key_found;
--   2. the listing's lock (it registers the transaction as an event writer before any
--      write, migration 0005);
--   3. overdue holds are found (not yet expired: a refusal writes nothing);
--   4. from a hold: it must be live and not overdue; directly: the conflict scan over
--      every holder, overdue holds left out;
--   5. the writes: overdue holds expired (their events first), the hold's claim changes
--      holder in place (nothing can slip in between) or the booking's claim is
--      inserted, the booking row, p_events (calendar.append_events), the key.
create function confirm_booking(
  p_reference text, p_listing_id text, p_hold_id uuid, p_check_in date, p_check_out date,
  p_workspace_id text, p_environment text, p_provider_id text, p_party_size integer,
  p_guest_id text, p_guest_name text, p_amount_value text, p_amount_currency text,
  p_requires_payment boolean, p_at timestamptz, p_events jsonb, p_headers jsonb,
  p_key_caller text, p_key text, p_key_sha256 bytea, p_key_lock text
) returns confirm_booking_result
language plpgsql volatile as $$
declare
  r calendar.confirm_booking_result;
  k record;
  v_now timestamptz;
  v_overdue text[];
begin
  r.conflicts := '{}';
  if p_key is not null then
    perform pg_advisory_xact_lock(hashtextextended(p_key_lock, 0));
    select rpc, request_sha256, result_ref into k
    from calendar.idempotency_keys where caller = p_key_caller and key = p_key;
    if found then
      r.outcome := 'key_found';
      r.key_rpc := k.rpc;
      r.key_sha256 := k.request_sha256;
      r.result_ref := k.result_ref;
      return r;
    end if;
  end if;

  perform calendar.lock_listing(p_listing_id);
  v_now := clock_timestamp();
  v_overdue := array(
    select hold_id::text from calendar.holds
    where listing_id = p_listing_id and status = 'live' and expires_at <= v_now);

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
  insert into calendar.bookings (booking_reference, listing_id, workspace_id, environment, provider_id,
    check_in, check_out, party_size, guest_id, guest_name, amount_value, amount_currency,
    requires_payment, hold_id, status, confirmed_at)
  values (p_reference, p_listing_id, p_workspace_id, p_environment, p_provider_id,
    p_check_in, p_check_out, p_party_size, p_guest_id, p_guest_name, p_amount_value, p_amount_currency,
    p_requires_payment, p_hold_id, 'confirmed', p_at);
  perform calendar.append_events(p_events, p_headers);
  if p_key is not null then
    insert into calendar.idempotency_keys (caller, key, rpc, request_sha256, result_ref)
    values (p_key_caller, p_key, 'ConfirmBooking', p_key_sha256, p_reference);
  end if;
  r.outcome := 'confirmed';
  return r;
end $$;
