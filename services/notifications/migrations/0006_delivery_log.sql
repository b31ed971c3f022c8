-- Partner sandbox tools (docs/partners/sandbox.md): test events, and the delivery log
-- with each delivery's attempts.

-- A synthetic test event (POST /v1/sandbox/events): its body carries "test": true and
-- names no real booking or person, so it is kept after delivery (a real delivery drops
-- its body then) and can be resent until the delivery is pruned.
alter table deliveries add column test boolean not null default false;

-- A test user.erased opens a deletion request the partner can acknowledge; it never
-- escalates to operators (deletion-requests.ts).
alter table deletion_requests add column test boolean not null default false;

-- One row per attempt of a delivery, written in the statement that records the
-- attempt's outcome (dispatcher.ts). Deleted with its delivery, 30 days after the
-- delivery finished (deletion-requests.ts prune). Attempts before a resend or replay
-- are kept: the delivery's own `attempts` counts only the current retry schedule.
create table delivery_attempts (
  id bigserial primary key,
  delivery_id bigint not null references deliveries (id) on delete cascade,
  attempted_at timestamptz not null,
  -- The endpoint's HTTP status; null without an HTTP answer or when nothing was sent.
  response_status integer,
  -- Connection, TLS, request and response head, in ms; null when nothing was sent.
  duration_ms integer,
  -- 'delivered', or the failure in deliveries.last_error's vocabulary.
  outcome text not null,
  -- The retry this attempt scheduled; null after a delivery or the last attempt.
  next_attempt_at timestamptz
);

-- The log reads a delivery's most recent attempts.
create index delivery_attempts_by_delivery on delivery_attempts (delivery_id, id desc);
