-- Calendar: nights and who holds them (issue 5; docs/calendar.md).
--
-- Who holds a night is decided by ONE table, `claims`, with exclusion constraints:
-- one row per live holder (a partner block, a live marketplace hold, a booking, or the
-- nights of a booking the host cancelled), its nights as a daterange [check_in, check_out).
-- Every holder is on one of two sides:
--   partner     : block, withdrawn  (partner blocks may overlap each other and withdrawals)
--   marketplace : hold, booking     (never overlap anything)
-- so the rules of the spec become two constraints PostgreSQL enforces under any
-- concurrency, across replicas:
--   1. rows of different sides never overlap on a listing;
--   2. marketplace rows never overlap each other on a listing.
-- The service also serialises writers per listing (pg_advisory_xact_lock) so its
-- conflict scan is exact; the constraints are the last line of defence (23P01).

create extension if not exists btree_gist with schema public;

create table claims (
  listing_id  text not null,
  holder_kind text not null check (holder_kind in ('block', 'withdrawn', 'hold', 'booking')),
  -- blocks.id, holds.hold_id or bookings.booking_reference, as text
  holder_id   text not null,
  side        text not null generated always as (
                case when holder_kind in ('block', 'withdrawn') then 'partner' else 'marketplace' end
              ) stored,
  nights      daterange not null check (not isempty(nights) and not lower_inf(nights) and not upper_inf(nights)),
  primary key (holder_kind, holder_id),
  constraint claims_sides_never_overlap
    exclude using gist (listing_id with =, nights with &&, side with <>),
  constraint claims_marketplace_never_overlap
    exclude using gist (listing_id with =, nights with &&) where (side = 'marketplace')
);

-- Partner blocks (spec: "Calendar block"), addressed by (workspace_id, external_uid).
-- external_uid sorts byte-wise ("C") so GET /blocks orders the same on every backend.
create table blocks (
  id           bigint generated always as identity primary key,
  workspace_id text not null,
  external_uid text collate "C" not null,
  listing_id   text not null,
  check_in     date not null,
  check_out    date not null,
  reason       text not null check (reason in ('reserved', 'maintenance', 'owner_stay', 'other')),
  created_at   timestamptz not null default now(),
  updated_at   timestamptz not null default now(),
  constraint blocks_external_uid_unique unique (workspace_id, external_uid),
  constraint blocks_nights check (check_out > check_in and check_out - check_in <= 730)
);
-- GET /blocks: workspace, then the decided order (check_in, check_out, external_uid).
create index blocks_list_idx on blocks (workspace_id, check_in, check_out, external_uid);

-- Marketplace holds. Only a `live` hold whose expires_at is in the future holds nights;
-- writers expire overdue holds of a listing (under its lock) before they claim nights,
-- and a background sweeper does the same for quiet listings.
create table holds (
  hold_id           uuid primary key,
  listing_id        text not null,
  workspace_id      text not null,
  check_in          date not null,
  check_out         date not null,
  requires_payment  boolean not null,
  status            text not null check (status in ('live', 'released', 'expired', 'converted')),
  expires_at        timestamptz not null,
  created_at        timestamptz not null default now(),
  ended_at          timestamptz,
  booking_reference text,
  constraint holds_nights check (check_out > check_in and check_out - check_in <= 730)
);
create index holds_live_listing_idx on holds (listing_id, expires_at) where status = 'live';
create index holds_live_expiry_idx on holds (expires_at) where status = 'live';

-- Marketplace bookings. guest_id / guest_name are personal data: EraseGuest sets them
-- to null (erased_at records when). amount_value is the decimal string as sent.
create table bookings (
  booking_reference text primary key,
  listing_id        text not null,
  workspace_id      text not null,
  environment       text not null check (environment in ('sandbox', 'production')),
  provider_id       text,
  check_in          date not null,
  check_out         date not null,
  party_size        integer not null check (party_size >= 1),
  guest_id          text,
  guest_name        text,
  amount_value      text not null check (amount_value ~ '^[0-9]+(\.[0-9]+)?$'),
  amount_currency   text not null check (amount_currency ~ '^[A-Z]{3}$'),
  requires_payment  boolean not null,
  hold_id           uuid,
  status            text not null check (status in ('confirmed', 'cancelled')),
  confirmed_at      timestamptz not null,
  cancelled_at      timestamptz,
  cancelled_by      text check (cancelled_by in ('guest', 'host')),
  erased_at         timestamptz,
  constraint bookings_nights check (check_out > check_in and check_out - check_in <= 730),
  constraint bookings_cancellation check ((status = 'cancelled') = (cancelled_at is not null and cancelled_by is not null))
);
create index bookings_guest_idx on bookings (guest_id) where guest_id is not null;

-- The ordered log behind CalendarService.WatchEvents. Written in the same transaction
-- as the change (and as the outbox row of the same event id).
--
-- Order: (xid, seq). `seq` alone is assigned at insert, not at commit, so a reader
-- could see seq 7 commit before seq 6 and skip 6 for ever. Readers therefore only read
-- rows whose transaction id is below the oldest transaction still running
-- (pg_snapshot_xmin): such rows are final, and no row can later appear before them in
-- (xid, seq) order. The public cursor is `seq`; the server looks its xid up to resume.
create table events (
  seq               bigint generated always as identity primary key,
  xid               xid8 not null default pg_current_xact_id(),
  id                uuid not null unique,
  workspace_id      text not null,
  listing_id        text not null,
  -- which field of WatchEventsResponse.event: calendar_changed, booking_confirmed, booking_cancelled
  type              text not null check (type in ('calendar_changed', 'booking_confirmed', 'booking_cancelled')),
  -- set on booking events so EraseGuest can scrub the guest's name from them
  booking_reference text,
  data              bytea not null,
  created_at        timestamptz not null default now()
);
create index events_order_idx on events (xid, seq);
create index events_listing_idx on events (listing_id, xid, seq);
create index events_workspace_idx on events (workspace_id, xid, seq);
create index events_booking_idx on events (booking_reference) where booking_reference is not null;

-- Guest erasures (no personal data: the guest id is not kept).
create table erasures (
  erasure_id          uuid primary key,
  requested_at        timestamptz not null default now(),
  bookings_erased     integer not null,
  workspaces_notified integer not null
);
