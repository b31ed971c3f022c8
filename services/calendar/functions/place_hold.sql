-- version: 1
-- PlaceHold in one statement (docs/calendar.md "Holds and bookings", "One style for
-- writes"; the result type place_hold_result is in
-- services/calendar/migrations/0012_calendar_write_results.sql). What the caller decides
-- stays in TypeScript (services/calendar/holds.ts): the request's checks, the listing's
-- details from the catalog, the hold id, the hold_placed event's body (event-log.ts) and
-- the idempotency key's scope (idempotency.ts).

-- PlaceHold's writes, in one call:
--   1. with an idempotency key: the key's lock and row (idempotency.sql
--      lock_key_and_listing): found →
--      key_found;
--   2. the listing's lock (it registers the transaction as an event writer before any
--      write, listing_lock.sql);
--   3. overdue holds are found (not yet expired: a refusal writes nothing), and the
--      conflict scan over every holder leaves them out: any night taken → conflict;
--   4. the writes: overdue holds expired (their events first), the hold with its claim
--      (expiring p_ttl_seconds from now), p_events (calendar.append_events), the key.
create or replace function place_hold(
  p_hold_id uuid, p_listing_id text, p_workspace_id text, p_check_in date, p_check_out date,
  p_requires_payment boolean, p_ttl_seconds integer, p_at timestamptz, p_events jsonb, p_headers jsonb,
  p_key_caller text, p_key text, p_key_sha256 bytea
) returns place_hold_result
language plpgsql volatile as $$
declare
  r calendar.place_hold_result;
  v_overdue text[];
  v_now timestamptz;
begin
  select 'key_found', k.rpc, k.request_sha256, k.result_ref into r.outcome, r.key_rpc, r.key_sha256, r.result_ref
  from calendar.lock_key_and_listing(p_key_caller, p_key, p_listing_id) k;
  if found then return r; end if;
  v_now := clock_timestamp();
  v_overdue := calendar.overdue_holds(p_listing_id, v_now);
  r.conflicts := calendar.night_conflicts(p_listing_id, p_check_in, p_check_out, false, v_overdue);
  if cardinality(r.conflicts) > 0 then
    r.outcome := 'conflict';
    return r;
  end if;

  if cardinality(v_overdue) > 0 then
    perform calendar.expire_holds(p_listing_id, p_at, p_headers, v_now);
  end if;
  insert into calendar.holds (hold_id, listing_id, workspace_id, check_in, check_out, requires_payment, status, expires_at)
  values (p_hold_id, p_listing_id, p_workspace_id, p_check_in, p_check_out, p_requires_payment, 'live',
          clock_timestamp() + make_interval(secs => p_ttl_seconds))
  returning expires_at into r.expires_at;
  insert into calendar.claims (listing_id, holder_kind, holder_id, nights)
  values (p_listing_id, 'hold', p_hold_id::text, daterange(p_check_in, p_check_out));
  perform calendar.append_events(p_events, p_headers);
  perform calendar.record_idempotency_key(p_key_caller, p_key, 'PlaceHold', p_key_sha256, p_hold_id::text);
  r.outcome := 'placed';
  return r;
end $$;
