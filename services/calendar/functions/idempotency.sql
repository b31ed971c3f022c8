-- version: 1
-- Idempotency keys of PlaceHold, ConfirmBooking and CancelBooking: the one mechanism
-- (docs/marketplace.md "Idempotency keys"; table calendar.idempotency_keys, migration
-- 0007). The keyed writers (place_hold.sql, confirm_booking.sql, cancel_booking.sql)
-- call lock_key_and_listing first and record_idempotency_key with their writes, inside
-- their one statement; services/calendar/idempotency.ts keeps the key's scope (the
-- request's fingerprint), the comparison of a found row with the request and the
-- pruner, and reads a key outside a transaction through idempotency_key.

-- The key's row, if the caller used it (none otherwise). A writer's request without a
-- key passes null for the key (and caller, fingerprint): the functions below then lock,
-- answer and record nothing.
create or replace function idempotency_key(p_caller text, p_key text)
returns setof calendar.idempotency_keys
language sql stable as $$
  select * from calendar.idempotency_keys where caller = p_caller and key = p_key
$$;

-- In a writer's transaction, before the listing's lock: takes the key's
-- transaction-scoped advisory lock (a concurrent first use of the key waits here for
-- the other to end), then answers the key's row, if any — the writer then writes
-- nothing and answers that. The lock's name is built here only; its text
-- ('psync.calendar.idempotency', caller, key, one per line) is the one every release
-- has used, so releases running side by side serialise on the same lock.
create or replace function lock_idempotency_key(p_caller text, p_key text)
returns setof calendar.idempotency_keys
language plpgsql volatile as $$
begin
  if p_key is null then
    return;
  end if;
  perform pg_advisory_xact_lock(hashtextextended('psync.calendar.idempotency' || E'\n' || p_caller || E'\n' || p_key, 0));
  return query select * from calendar.idempotency_key(p_caller, p_key);
end $$;

-- A keyed writer's first step, its locks in their order: the key's (above), then —
-- unless the key was used before, when the writer writes nothing — the listing's
-- (calendar.lock_listing, which registers the transaction as an event writer before its
-- first write, listing_lock.sql). Answers the key's row, if any.
create or replace function lock_key_and_listing(p_caller text, p_key text, p_listing_id text)
returns setof calendar.idempotency_keys
language plpgsql volatile as $$
begin
  return query select * from calendar.lock_idempotency_key(p_caller, p_key);
  if not found then
    perform calendar.lock_listing(p_listing_id);
  end if;
end $$;

-- In a writer's transaction, after the listing's lock (it registers the transaction as
-- an event writer before its first write, listing_lock.sql): records the key with the
-- request's fingerprint and the id of what the write produced.
create or replace function record_idempotency_key(
  p_caller text, p_key text, p_rpc text, p_request_sha256 bytea, p_result_ref text
) returns void
language sql volatile as $$
  insert into calendar.idempotency_keys (caller, key, rpc, request_sha256, result_ref)
  select p_caller, p_key, p_rpc, p_request_sha256, p_result_ref where p_key is not null
$$;
