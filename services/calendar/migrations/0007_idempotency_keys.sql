-- Idempotency keys of PlaceHold, ConfirmBooking and CancelBooking (issue 16 item 7;
-- docs/marketplace.md "Idempotency keys", services/calendar/idempotency.ts).
--
-- A caller may send `idempotency_key` with a write; the key is recorded here IN THE
-- SAME TRANSACTION as the hold, booking or cancellation it produced, so either both
-- are committed or neither: a crash between the write and the key cannot leave a
-- booking whose retry would make a second one. A retry with the same key finds the
-- row and answers from `result_ref` (the hold id or booking reference); a different
-- request under the same key is refused (its `request_sha256` differs).
--
-- Keys are scoped per authenticated caller (`caller`: `marketplace`, `operator`,
-- `client:<id>` …), so two callers never see each other's keys. The primary key is
-- the last line of defence against two concurrent first uses: writers also take a
-- transaction-scoped advisory lock on (caller, key) first, so the loser waits for the
-- winner and then answers the winner's result.
--
-- No personal data: the booking itself is read back on a retry (as it is then: an
-- erased guest stays erased). Rows older than the retention (24 hours) are deleted by
-- the calendar's housekeeping, by created_at.

create table idempotency_keys (
  caller         text not null,
  key            text not null check (length(key) between 1 and 255),
  rpc            text not null check (rpc in ('PlaceHold', 'ConfirmBooking', 'CancelBooking')),
  request_sha256 bytea not null check (length(request_sha256) = 32),
  result_ref     text not null,
  created_at     timestamptz not null default now(),
  primary key (caller, key)
);
create index idempotency_keys_created_idx on idempotency_keys (created_at);
