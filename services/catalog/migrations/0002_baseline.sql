-- The catalog schema as its migrations up to 0002 leave it, in release
-- 91d5bee03ff6f50a0cc7d95ffabe67917b5b5653: for a new schema only. migrate.ts applies it
-- where none of those migrations ran and skips it where they did (git history holds them).
-- Cut by `npm run migrations:baseline` (pg_dump: the schema and the rows its migrations
-- wrote, as INSERTs); never edited: a change is a
-- new migration after it. Of the functions, only those a table, index, constraint or
-- trigger calls are here: the files in functions/ replace them and hold every other one.

CREATE TABLE listings (
    listing_id text NOT NULL,
    workspace_id uuid NOT NULL,
    environment text NOT NULL,
    origin text NOT NULL,
    property_id uuid,
    name text,
    check_in_time text,
    check_out_time text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT listings_check CHECK (((origin = 'partner'::text) = (property_id IS NOT NULL))),
    CONSTRAINT listings_check1 CHECK (((origin = 'partner'::text) OR ((name IS NOT NULL) AND (check_in_time IS NOT NULL) AND (check_out_time IS NOT NULL)))),
    CONSTRAINT listings_environment_check CHECK ((environment = ANY (ARRAY['sandbox'::text, 'production'::text]))),
    CONSTRAINT listings_origin_check CHECK ((origin = ANY (ARRAY['partner'::text, 'marketplace'::text])))
);

CREATE TABLE photo_blobs (
    sha256 text NOT NULL,
    content_type text NOT NULL,
    width integer NOT NULL,
    height integer NOT NULL,
    bytes bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE photos (
    property_id uuid NOT NULL,
    url text NOT NULL,
    "position" integer NOT NULL,
    ordinal integer NOT NULL,
    state text NOT NULL,
    rejection_reason text,
    blob_sha256 text,
    source_content_type text,
    source_width integer,
    source_height integer,
    source_bytes integer,
    lease_token uuid,
    lease_until timestamp with time zone,
    attempts integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    workspace_id uuid,
    CONSTRAINT photos_check CHECK (((state = 'rejected'::text) = (rejection_reason IS NOT NULL))),
    CONSTRAINT photos_check1 CHECK (((state = 'processed'::text) = (blob_sha256 IS NOT NULL))),
    CONSTRAINT photos_rejection_reason_check CHECK ((rejection_reason = ANY (ARRAY['unreachable'::text, 'forbidden_url'::text, 'not_an_image'::text, 'too_large'::text, 'too_small'::text]))),
    CONSTRAINT photos_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'processed'::text, 'rejected'::text])))
);

CREATE TABLE properties (
    id uuid NOT NULL,
    workspace_id uuid NOT NULL,
    provider_id text NOT NULL,
    environment text NOT NULL,
    name text NOT NULL,
    description text,
    property_type text NOT NULL,
    address_line1 text NOT NULL,
    address_city text NOT NULL,
    address_region text,
    address_postal_code text,
    address_country text NOT NULL,
    latitude double precision NOT NULL,
    longitude double precision NOT NULL,
    max_guests integer NOT NULL,
    bedrooms integer NOT NULL,
    beds integer NOT NULL,
    bathrooms integer NOT NULL,
    base_rate_value text,
    base_rate_currency text,
    check_in_time text NOT NULL,
    check_out_time text NOT NULL,
    status text NOT NULL,
    amenities text[] DEFAULT '{}'::text[] NOT NULL,
    unknown_amenities text[] DEFAULT '{}'::text[] NOT NULL,
    content_hash text NOT NULL,
    publishable boolean DEFAULT false NOT NULL,
    missing text[] DEFAULT '{}'::text[] NOT NULL,
    listing_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    pushed_at timestamp with time zone DEFAULT now() NOT NULL,
    changed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT properties_check CHECK (((base_rate_value IS NULL) = (base_rate_currency IS NULL))),
    CONSTRAINT properties_environment_check CHECK ((environment = ANY (ARRAY['sandbox'::text, 'production'::text]))),
    CONSTRAINT properties_status_check CHECK ((status = ANY (ARRAY['listed'::text, 'unlisted'::text])))
);

CREATE TABLE workspaces (
    workspace_id uuid NOT NULL,
    environment text NOT NULL,
    learned_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT workspaces_environment_check CHECK ((environment = ANY (ARRAY['sandbox'::text, 'production'::text])))
);

ALTER TABLE ONLY listings
    ADD CONSTRAINT listings_pkey PRIMARY KEY (listing_id);

ALTER TABLE ONLY listings
    ADD CONSTRAINT listings_property_id_key UNIQUE (property_id);

ALTER TABLE ONLY photo_blobs
    ADD CONSTRAINT photo_blobs_pkey PRIMARY KEY (sha256);

ALTER TABLE ONLY photos
    ADD CONSTRAINT photos_pkey PRIMARY KEY (property_id, url);

ALTER TABLE ONLY properties
    ADD CONSTRAINT properties_listing_id_key UNIQUE (listing_id);

ALTER TABLE ONLY properties
    ADD CONSTRAINT properties_pkey PRIMARY KEY (id);

ALTER TABLE ONLY properties
    ADD CONSTRAINT properties_workspace_id_provider_id_key UNIQUE (workspace_id, provider_id);

ALTER TABLE ONLY workspaces
    ADD CONSTRAINT workspaces_pkey PRIMARY KEY (workspace_id);

CREATE INDEX listings_workspace_idx ON listings USING btree (workspace_id);

CREATE INDEX photos_blob_idx ON photos USING btree (blob_sha256) WHERE (blob_sha256 IS NOT NULL);

CREATE INDEX photos_pending_by_workspace_idx ON photos USING btree (workspace_id, created_at) WHERE (state = 'pending'::text);

CREATE INDEX photos_pending_idx ON photos USING btree (created_at) WHERE (state = 'pending'::text);

CREATE INDEX photos_unassigned_idx ON photos USING btree (property_id) WHERE ((workspace_id IS NULL) AND (state = 'pending'::text));

CREATE INDEX properties_public_idx ON properties USING btree (changed_at, listing_id) WHERE (publishable AND (environment = 'production'::text) AND (listing_id IS NOT NULL));

ALTER TABLE ONLY listings
    ADD CONSTRAINT listings_property_id_fkey FOREIGN KEY (property_id) REFERENCES properties(id) ON DELETE CASCADE;

ALTER TABLE ONLY photos
    ADD CONSTRAINT photos_blob_sha256_fkey FOREIGN KEY (blob_sha256) REFERENCES photo_blobs(sha256);

ALTER TABLE ONLY photos
    ADD CONSTRAINT photos_property_id_fkey FOREIGN KEY (property_id) REFERENCES properties(id) ON DELETE CASCADE;
