-- Consumer-side dedupe (delivery is at-least-once): a handler records the event id
-- in the same transaction as its effect; a redelivered event hits the primary key.
create table processed_events (
  consumer     text not null,
  event_id     uuid not null,
  processed_at timestamptz not null default now(),
  primary key (consumer, event_id)
);
