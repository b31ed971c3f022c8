-- Notifications: the webhook endpoint of each workspace, its deliveries and the
-- deletion requests that user.erased deliveries open (docs/notifications.md).

-- One endpoint per workspace (spec: "There is one endpoint per workspace").
create table endpoints (
  workspace_id uuid primary key,
  url text not null check (length(url) <= 2048),
  -- Subscribed public kinds; empty = paused.
  events text[] not null,
  status text not null check (status in ('pending_verification', 'active', 'suspended')),
  -- Signing secrets, AES-256-GCM under the secrets-encryption key (secret-box.ts);
  -- never stored in clear.
  secret_ciphertext bytea not null,
  -- Whether signing_secret was returned to the partner yet: exactly one call flips it.
  secret_shown boolean not null default false,
  previous_secret_ciphertext bytea,
  previous_valid_until timestamptz,
  -- Abandoned deliveries since the last 2xx; reaching the threshold suspends.
  consecutive_abandoned integer not null default 0,
  suspended_at timestamptz,
  verified_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((previous_secret_ciphertext is null) = (previous_valid_until is null))
);

-- One row per (workspace, domain event): the delivery and its retry state.
create table deliveries (
  id bigserial primary key,
  workspace_id uuid not null,
  -- The envelope event_id = the domain event's id, stable across retries.
  event_id uuid not null,
  event_type text not null check (event_type in ('booking.confirmed', 'booking.cancelled', 'user.erased')),
  occurred_at timestamptz not null,
  -- booking.confirmed/cancelled: the booking, to scrub the guest's name on erasure.
  booking_reference text,
  -- The exact JSON body sent on every attempt; cleared once the delivery is
  -- delivered or abandoned (nothing personal is kept longer than needed).
  body text,
  state text not null check (state in ('pending', 'delivered', 'abandoned')),
  attempts integer not null default 0,
  last_status integer,
  last_error text,
  next_attempt_at timestamptz,
  -- A worker's claim on the next attempt (SKIP LOCKED + lease, dispatcher.ts).
  lease_owner text,
  lease_until timestamptz,
  created_at timestamptz not null default now(),
  finished_at timestamptz,
  unique (workspace_id, event_id),
  check ((state = 'pending') = (next_attempt_at is not null))
);

-- The dispatcher's claim query: due pending deliveries in due order.
create index deliveries_due on deliveries (next_attempt_at, id) where state = 'pending';
-- psync deliveries list: a workspace's deliveries, newest first.
create index deliveries_by_workspace on deliveries (workspace_id, id desc);
create index deliveries_by_booking on deliveries (workspace_id, booking_reference) where booking_reference is not null and state = 'pending';

-- One per user.erased delivery: the partner acknowledges it once deletion is done.
create table deletion_requests (
  event_id uuid not null,
  workspace_id uuid not null,
  booking_references text[] not null,
  provider_ids text[] not null,
  occurred_at timestamptz not null,
  created_at timestamptz not null default now(),
  acknowledged_at timestamptz,
  completed_at timestamptz,
  escalated_at timestamptz,
  primary key (workspace_id, event_id)
);

-- Bookings whose guest erased their account (from user.erased, whatever the
-- partner subscribed to): a booking.confirmed handled after its erasure (events are
-- handled concurrently) is stored without the guest's name.
create table erased_bookings (
  workspace_id uuid not null,
  booking_reference text not null,
  erased_at timestamptz not null default now(),
  primary key (workspace_id, booking_reference)
);

-- The escalation sweep: open requests by age.
create index deletion_requests_open on deletion_requests (created_at) where acknowledged_at is null and escalated_at is null;
create index deletion_requests_recent on deletion_requests (created_at desc);
