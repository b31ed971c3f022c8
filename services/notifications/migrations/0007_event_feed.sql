-- The events feed (public GET /v1/events, docs/partners/missed-events.md): every
-- booking.confirmed, booking.cancelled and user.erased event of a sandbox workspace,
-- recorded by the intake (services/notifications/intake.ts) in the statement that marks
-- the event processed, whether or not the workspace's endpoint takes a delivery of it.
-- `envelope` is the delivery's body, byte for byte; an erasure scrubs the guest's name
-- here as it does in kept delivery bodies. Rows older than the retention are deleted by
-- the notifications housekeeping (event-feed.ts).

set local lock_timeout = '5s';

-- Each workspace's last position. The intake takes the row's lock (an upsert) before it
-- numbers the workspace's new events and holds it until its commit, so a workspace's
-- positions become visible in increasing order: a reader resuming after position p
-- never finds an event below p committed later.
-- `pruned_through`: the highest position the retention deleted, so a reader resuming
-- from an older one is told that events were pruned.
create table event_feed_heads (
  workspace_id   uuid primary key,
  last_position  bigint not null check (last_position >= 0),
  pruned_through bigint not null default 0 check (pruned_through >= 0)
);

create table event_feed (
  workspace_id      uuid not null,
  position          bigint not null check (position > 0),
  event_id          uuid not null,
  event_type        text not null check (event_type in ('booking.confirmed', 'booking.cancelled', 'user.erased')),
  booking_reference text,
  envelope          text not null,
  recorded_at       timestamptz not null default now(),
  primary key (workspace_id, position),
  unique (workspace_id, event_id)
);

-- The retention deletes by age.
create index event_feed_recorded_idx on event_feed (recorded_at);
-- An erasure finds a booking's confirmations.
create index event_feed_booking_idx on event_feed (workspace_id, booking_reference) where event_type = 'booking.confirmed';
