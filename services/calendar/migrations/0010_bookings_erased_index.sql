-- GetErasure (services/calendar/erasure.ts) finds an erasure's bookings by the
-- erasure's timestamp, which EraseGuest writes to each booking's erased_at: only
-- erased bookings are indexed.
create index bookings_erased_idx on bookings (erased_at, workspace_id) where erased_at is not null;
