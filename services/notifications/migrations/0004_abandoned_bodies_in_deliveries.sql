-- Replay of abandoned deliveries without a side table (docs/notifications.md, "Replay").
-- From this release the dispatcher keeps `deliveries.body` when a delivery is abandoned
-- (a delivered one still drops it at once), an erasure scrubs the guest's name from
-- pending and abandoned bodies alike in intake.ts (envelope.ts scrubGuestName), and
-- the replay reads `deliveries.body`. The bodies are still deleted with their
-- deliveries, 30 days after they finished (deletion-requests.ts prune). (0001's comment
-- on `deliveries.body`, "cleared once the delivery is delivered or abandoned", now holds
-- for delivered ones only.)
--
-- So 0003's side table, its triggers and its SQL twin of scrubGuestName go. First, the
-- bodies it keeps move back into their abandoned deliveries, so that nothing
-- replayable is lost. They are already scrubbed where the guest was erased (0003's
-- triggers did that). Abandoned deliveries without a kept body keep a null body: they
-- stay not replayable.
--
-- This drops what the code of the release with 0003 uses, in the same release as the code
-- change (not expand, deploy, contract: docs/operations.md, "Migrate"). A replica of that
-- release still running after this migration would fail replays, drop the body of what it
-- abandons and not scrub abandoned bodies on an erasure: roll the notifications pods at
-- once, and do not roll back to that release.
update deliveries d
set body = k.body
from replay_bodies k
where k.delivery_id = d.id and d.state = 'abandoned' and d.body is null;

drop trigger deliveries_keep_abandoned_body on deliveries;
drop trigger erased_bookings_scrub_kept_bodies on erased_bookings;
drop function keep_abandoned_body();
drop function scrub_kept_bodies();
drop function scrub_guest_name(text);
drop table replay_bodies;

-- An erasure now looks for the bodies of the erased bookings among pending and
-- abandoned deliveries, that is among the deliveries that still have a body.
drop index deliveries_by_booking;
create index deliveries_by_booking on deliveries (workspace_id, booking_reference)
  where booking_reference is not null and body is not null;
