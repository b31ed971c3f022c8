-- Replay of abandoned deliveries (`psync deliveries replay`; docs/notifications.md,
-- "Replay"). A replay re-sends the very body the partner missed, but the dispatcher
-- clears `deliveries.body` when a delivery is abandoned. So the body moves here at that
-- moment, and moves back when the delivery is replayed. A kept body is deleted with its
-- delivery (30 days after abandonment, deletion-requests.ts prune). While it is kept,
-- an erasure of the guest removes the guest's name from it, as from pending bodies.

create table replay_bodies (
  delivery_id bigint primary key references deliveries (id) on delete cascade,
  -- The exact JSON body of the abandoned delivery (guest name scrubbed after an erasure).
  body text not null,
  kept_at timestamptz not null default now()
);

-- The SQL twin of envelope.ts scrubGuestName: `data.guest_name` becomes null, every
-- other byte unchanged. Bodies are compact JSON.stringify output, in which the key
-- `"guest_name":"` can only occur as the key itself (quotes inside strings are
-- escaped). Checked against scrubGuestName by test/notifications/replay.test.ts.
create function scrub_guest_name(body text) returns text
language sql immutable strict as $$
  select regexp_replace(body, '"guest_name":"(?:[^"\\]|\\.)*"', '"guest_name":null')
$$;

-- A delivery that is abandoned (pending -> abandoned) keeps its body for a replay. The
-- body is scrubbed if the booking's guest was already erased (intake.ts normally did
-- that while it was pending; this covers any other order).
create function keep_abandoned_body() returns trigger
language plpgsql as $$
begin
  insert into notifications.replay_bodies (delivery_id, body)
  values (
    new.id,
    case when old.event_type = 'booking.confirmed' and exists (
           select 1 from notifications.erased_bookings b
           where b.workspace_id = old.workspace_id and b.booking_reference = old.booking_reference)
         then notifications.scrub_guest_name(old.body)
         else old.body end)
  on conflict (delivery_id) do update set body = excluded.body, kept_at = now();
  return null;
end
$$;

create trigger deliveries_keep_abandoned_body
  after update of state on deliveries
  for each row
  when (old.state = 'pending' and new.state = 'abandoned' and old.body is not null)
  execute function keep_abandoned_body();

-- An erasure (intake.ts inserts the erased booking) scrubs the guest's name from the kept
-- bodies of that booking's confirmations. Deferred to the end of the erasure's
-- transaction: by then intake has locked, or waited for, every delivery of the booking
-- that was still pending, so a delivery abandoned concurrently has committed its kept
-- body and is scrubbed here, and one abandoned later finds the erased booking above.
create function scrub_kept_bodies() returns trigger
language plpgsql as $$
begin
  update notifications.replay_bodies k
  set body = notifications.scrub_guest_name(k.body)
  from notifications.deliveries d
  where d.id = k.delivery_id and d.workspace_id = new.workspace_id
    and d.booking_reference = new.booking_reference and d.event_type = 'booking.confirmed';
  return null;
end
$$;

create constraint trigger erased_bookings_scrub_kept_bodies
  after insert on erased_bookings
  deferrable initially deferred
  for each row execute function scrub_kept_bodies();
