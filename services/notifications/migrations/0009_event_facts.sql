-- What a partner was told, once per fact (docs/notifications.md "Once per fact"): a
-- booking's confirmation, a booking's cancellation, an erasure, in one workspace. The
-- intake (services/notifications/intake.ts) inserts a fact's row in the statement that
-- records the event in the feed and creates its delivery, and goes on only when the
-- row is new: an event replayed on the bus under another event id finds its fact here
-- and is refused, as is a confirmation after its booking's cancellation. Rows are
-- never deleted: a booking is confirmed once and cancelled once, an erasure id is
-- never reused.
--
-- `subject`: the booking reference (booking.confirmed, booking.cancelled) or the
-- erasure id (user.erased). `event_id`: the event whose delivery told it.

set local lock_timeout = '5s';

create table event_facts (
  workspace_id uuid not null,
  event_type   text not null check (event_type in ('booking.confirmed', 'booking.cancelled', 'user.erased')),
  subject      text not null check (length(subject) between 1 and 255),
  event_id     uuid not null,
  recorded_at  timestamptz not null default now(),
  primary key (workspace_id, event_type, subject)
);

-- The booking facts told before this table existed, from the events feed and the
-- deliveries that still remember them. Erasures before it are not known by erasure id
-- (neither table keeps one); their events were marked processed, so the same event is
-- still never handled twice.
insert into event_facts (workspace_id, event_type, subject, event_id, recorded_at)
select workspace_id, event_type, booking_reference, event_id, recorded_at
from event_feed
where event_type in ('booking.confirmed', 'booking.cancelled') and booking_reference is not null
on conflict do nothing;

insert into event_facts (workspace_id, event_type, subject, event_id, recorded_at)
select workspace_id, event_type, booking_reference, event_id, created_at
from deliveries
where event_type in ('booking.confirmed', 'booking.cancelled') and booking_reference is not null
on conflict do nothing;
