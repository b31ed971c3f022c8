-- Catalog schema (issue 4). Runs with search_path = catalog, public.

-- What the catalog knows about a workspace: its environment, learned once from
-- IdentityService.GetWorkspace (immutable, so kept for ever) so that a restart does
-- not need identity to answer before serving.
create table workspaces (
  workspace_id uuid primary key,
  environment  text not null check (environment in ('sandbox', 'production')),
  learned_at   timestamptz not null default now()
);

-- A partner property as last pushed (replace, not merge). provider_id is the
-- partner's own identifier, unique only inside its workspace (spec: "Property
-- identifier"). listing_id stays null until the property is first publishable, then
-- never changes.
create table properties (
  id                 uuid primary key,
  workspace_id       uuid not null,
  provider_id        text not null,
  environment        text not null check (environment in ('sandbox', 'production')),
  name               text not null,
  description        text,
  property_type      text not null,
  address_line1      text not null,
  address_city       text not null,
  address_region     text,
  address_postal_code text,
  address_country    text not null,
  latitude           double precision not null,
  longitude          double precision not null,
  max_guests         int not null,
  bedrooms           int not null,
  beds               int not null,
  bathrooms          int not null,
  base_rate_value    text,
  base_rate_currency text,
  check_in_time      text not null,
  check_out_time     text not null,
  status             text not null check (status in ('listed', 'unlisted')),
  -- recognised amenity slugs (linked) and the unknown ones (reported, not linked), in payload order
  amenities          text[] not null default '{}',
  unknown_amenities  text[] not null default '{}',
  -- sha256 of the normalised property as pushed: an identical re-push changes nothing
  content_hash       text not null,
  publishable        boolean not null default false,
  missing            text[] not null default '{}',
  listing_id         text unique,
  created_at         timestamptz not null default now(),
  -- last push (even an identical one)
  pushed_at          timestamptz not null default now(),
  -- last change anything showable depends on (content, photos, publishability): the guest feed's clock
  changed_at         timestamptz not null default now(),
  unique (workspace_id, provider_id),
  check ((base_rate_value is null) = (base_rate_currency is null))
);

-- Public surfaces only ever read publishable production rows.
create index properties_public_idx on properties (changed_at, listing_id)
  where publishable and environment = 'production' and listing_id is not null;

-- Processed photo bytes, content-addressed by the sha256 of the stored derivative
-- (WebP, longest side <= 2048). Kept in PostgreSQL so that every replica serves them
-- without a shared volume; identical images pushed by several properties are stored once.
create table photo_blobs (
  sha256       text primary key,
  content_type text not null,
  width        int not null,
  height       int not null,
  bytes        bytea not null,
  created_at   timestamptz not null default now()
);

-- One row per (property, URL): the durable work queue of the photo pipeline and the
-- remembered result. An unchanged URL keeps its row across pushes and restarts, so it
-- is never fetched again; a URL dropped from the payload loses its row.
create table photos (
  property_id        uuid not null references properties (id) on delete cascade,
  url                text not null,
  position           int not null,
  -- index in the payload: breaks ties between equal positions
  ordinal            int not null,
  state              text not null check (state in ('pending', 'processed', 'rejected')),
  rejection_reason   text check (rejection_reason in ('unreachable', 'forbidden_url', 'not_an_image', 'too_large', 'too_small')),
  blob_sha256        text references photo_blobs (sha256),
  -- the source image as fetched
  source_content_type text,
  source_width       int,
  source_height      int,
  source_bytes       int,
  -- claim of a worker: pending rows with no live lease are free to take
  lease_token        uuid,
  lease_until        timestamptz,
  attempts           int not null default 0,
  created_at         timestamptz not null default now(),
  finished_at        timestamptz,
  primary key (property_id, url),
  check ((state = 'rejected') = (rejection_reason is not null)),
  check ((state = 'processed') = (blob_sha256 is not null))
);

create index photos_pending_idx on photos (created_at) where state = 'pending';
create index photos_blob_idx on photos (blob_sha256) where blob_sha256 is not null;

-- Every listing id: a partner property that became publishable (origin 'partner',
-- property_id set) or a marketplace listing the partner did not push (origin
-- 'marketplace', created by psync listing create). What GetListing/ResolveListing read.
create table listings (
  listing_id     text primary key,
  workspace_id   uuid not null,
  environment    text not null check (environment in ('sandbox', 'production')),
  origin         text not null check (origin in ('partner', 'marketplace')),
  property_id    uuid unique references properties (id) on delete cascade,
  -- marketplace listings only; a partner listing reads these from its property
  name           text,
  check_in_time  text,
  check_out_time text,
  created_at     timestamptz not null default now(),
  check ((origin = 'partner') = (property_id is not null)),
  check (origin = 'partner' or (name is not null and check_in_time is not null and check_out_time is not null))
);

create index listings_workspace_idx on listings (workspace_id);
