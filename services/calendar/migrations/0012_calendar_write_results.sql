-- The results of the calendar's remaining writers under a listing's lock, each one
-- PL/pgSQL function called as one statement (docs/calendar.md "One style for writes";
-- the functions: services/calendar/functions/place_hold.sql, release_hold.sql,
-- cancel_booking.sql). With an idempotency key, `key_found` answers the key's row
-- (`key_rpc`, `key_sha256`, `result_ref`) for the caller to compare and answer
-- (services/calendar/idempotency.ts), as confirm_booking_result does (0009).

set local lock_timeout = '5s';

-- What place_hold answers:
--   placed     the hold, its claim, its event (and the key) are written; `expires_at`;
--   conflict   `conflicts` lists every night already held; nothing written;
--   key_found  the key was used before; nothing written.
create type place_hold_result as (
  outcome    text,
  conflicts  text[],
  expires_at timestamptz,
  key_rpc    text,
  key_sha256 bytea,
  result_ref text
);

-- What release_hold answers: how many events it wrote (overdue holds expired, the
-- hold's release) and the hold's status afterwards (`released`, `expired`, `converted`).
create type release_hold_result as (
  events integer,
  status text
);

-- What cancel_booking answers:
--   cancelled          this call cancelled the booking: its claim freed or withdrawn,
--                      its events written; `cancelled_at` is p_at;
--   already_cancelled  an earlier call did: `cancelled_at` is that one's;
--   key_found          the key was used before; nothing written.
-- `events`: how many events the call wrote (overdue holds expired included).
create type cancel_booking_result as (
  outcome      text,
  cancelled_at timestamptz,
  events       integer,
  key_rpc      text,
  key_sha256   bytea,
  result_ref   text
);
