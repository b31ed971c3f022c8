-- The calendar schema as its migrations up to 0013 leave it, in release
-- 91d5bee03ff6f50a0cc7d95ffabe67917b5b5653: for a new schema only. migrate.ts applies it
-- where none of those migrations ran and skips it where they did (git history holds them).
-- Cut by `npm run migrations:baseline` (pg_dump: the schema and the rows its migrations
-- wrote, as INSERTs); never edited: a change is a
-- new migration after it. Of the functions, only those a table, index, constraint or
-- trigger calls are here: the files in functions/ replace them and hold every other one.

create extension if not exists btree_gist with schema public;

CREATE TYPE cancel_booking_result AS (
	outcome text,
	cancelled_at timestamp with time zone,
	events integer,
	key_rpc text,
	key_sha256 bytea,
	result_ref text
);

CREATE TYPE confirm_booking_result AS (
	outcome text,
	conflicts text[],
	key_rpc text,
	key_sha256 bytea,
	result_ref text
);

CREATE TYPE place_hold_result AS (
	outcome text,
	conflicts text[],
	expires_at timestamp with time zone,
	key_rpc text,
	key_sha256 bytea,
	result_ref text
);

CREATE TYPE put_block_result AS (
	outcome text,
	conflicts text[],
	events integer,
	id bigint,
	external_uid text,
	listing_id text,
	check_in text,
	check_out text,
	reason text,
	nights integer,
	created_at timestamp with time zone,
	updated_at timestamp with time zone
);

CREATE TYPE release_hold_result AS (
	events integer,
	status text
);

CREATE FUNCTION block_span_class(p_check_in date, p_check_out date) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN width_bucket((p_check_out - p_check_in), '{2,3,5,9,17,33,65,129,257}'::integer[]);

CREATE FUNCTION max_nights() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 730;

CREATE FUNCTION events_require_writer() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  if current_setting('psync.calendar_event_writer', true) is distinct from 'on' then
    raise exception 'events written by a transaction that did not call begin_event_write() first'
      using errcode = '55000',
            hint = 'call lock_listing() or begin_event_write() before the transaction''s first write';
  end if;
  return null;
end $$;

CREATE TABLE idempotency_keys (
    caller text NOT NULL,
    key text NOT NULL,
    rpc text NOT NULL,
    request_sha256 bytea NOT NULL,
    result_ref text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT idempotency_keys_key_check CHECK (((length(key) >= 1) AND (length(key) <= 255))),
    CONSTRAINT idempotency_keys_request_sha256_check CHECK ((length(request_sha256) = 32)),
    CONSTRAINT idempotency_keys_rpc_check CHECK ((rpc = ANY (ARRAY['PlaceHold'::text, 'ConfirmBooking'::text, 'CancelBooking'::text])))
);

CREATE TABLE blocks (
    id bigint NOT NULL,
    workspace_id text NOT NULL,
    external_uid text NOT NULL COLLATE pg_catalog."C",
    listing_id text NOT NULL,
    check_in date NOT NULL,
    check_out date NOT NULL,
    reason text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT blocks_nights CHECK (((check_out > check_in) AND ((check_out - check_in) <= max_nights()))),
    CONSTRAINT blocks_reason_check CHECK ((reason = ANY (ARRAY['reserved'::text, 'maintenance'::text, 'owner_stay'::text, 'other'::text])))
);

ALTER TABLE blocks ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME blocks_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE bookings (
    booking_reference text NOT NULL,
    listing_id text NOT NULL,
    workspace_id text NOT NULL,
    environment text NOT NULL,
    provider_id text,
    check_in date NOT NULL,
    check_out date NOT NULL,
    party_size integer NOT NULL,
    guest_id text,
    guest_name text,
    amount_value text NOT NULL,
    amount_currency text NOT NULL,
    requires_payment boolean NOT NULL,
    hold_id uuid,
    status text NOT NULL,
    confirmed_at timestamp with time zone NOT NULL,
    cancelled_at timestamp with time zone,
    cancelled_by text,
    erased_at timestamp with time zone,
    check_in_time text,
    check_out_time text,
    CONSTRAINT bookings_amount_currency_check CHECK ((amount_currency ~ '^[A-Z]{3}$'::text)),
    CONSTRAINT bookings_amount_value_check CHECK ((amount_value ~ '^[0-9]+(\.[0-9]+)?$'::text)),
    CONSTRAINT bookings_cancellation CHECK (((status = 'cancelled'::text) = ((cancelled_at IS NOT NULL) AND (cancelled_by IS NOT NULL)))),
    CONSTRAINT bookings_cancelled_by_check CHECK ((cancelled_by = ANY (ARRAY['guest'::text, 'host'::text]))),
    CONSTRAINT bookings_environment_check CHECK ((environment = ANY (ARRAY['sandbox'::text, 'production'::text]))),
    CONSTRAINT bookings_nights CHECK (((check_out > check_in) AND ((check_out - check_in) <= max_nights()))),
    CONSTRAINT bookings_party_size_check CHECK ((party_size >= 1)),
    CONSTRAINT bookings_status_check CHECK ((status = ANY (ARRAY['confirmed'::text, 'cancelled'::text])))
);

CREATE TABLE claims (
    listing_id text NOT NULL,
    holder_kind text NOT NULL,
    holder_id text NOT NULL,
    side text GENERATED ALWAYS AS (
CASE
    WHEN (holder_kind = ANY (ARRAY['block'::text, 'withdrawn'::text])) THEN 'partner'::text
    ELSE 'marketplace'::text
END) STORED NOT NULL,
    nights daterange NOT NULL,
    CONSTRAINT claims_holder_kind_check CHECK ((holder_kind = ANY (ARRAY['block'::text, 'withdrawn'::text, 'hold'::text, 'booking'::text]))),
    CONSTRAINT claims_nights_check CHECK (((NOT isempty(nights)) AND (NOT lower_inf(nights)) AND (NOT upper_inf(nights))))
);

CREATE TABLE erasures (
    erasure_id uuid NOT NULL,
    requested_at timestamp with time zone DEFAULT now() NOT NULL,
    bookings_erased integer NOT NULL,
    workspaces_notified integer NOT NULL
);

CREATE TABLE events (
    seq bigint NOT NULL,
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    id uuid NOT NULL,
    workspace_id text NOT NULL,
    listing_id text NOT NULL,
    type text NOT NULL,
    booking_reference text,
    data bytea,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    body jsonb,
    CONSTRAINT events_one_form CHECK (((data IS NULL) <> (body IS NULL))),
    CONSTRAINT events_type_check CHECK ((type = ANY (ARRAY['calendar_changed'::text, 'booking_confirmed'::text, 'booking_cancelled'::text])))
);

CREATE TABLE events_pruned (
    singleton boolean DEFAULT true NOT NULL,
    xid xid8 NOT NULL,
    seq bigint NOT NULL,
    max_seq bigint NOT NULL,
    pruned_at timestamp with time zone,
    CONSTRAINT events_pruned_singleton_check CHECK (singleton)
);

ALTER TABLE events ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME events_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE holds (
    hold_id uuid NOT NULL,
    listing_id text NOT NULL,
    workspace_id text NOT NULL,
    check_in date NOT NULL,
    check_out date NOT NULL,
    requires_payment boolean NOT NULL,
    status text NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    ended_at timestamp with time zone,
    booking_reference text,
    CONSTRAINT holds_nights CHECK (((check_out > check_in) AND ((check_out - check_in) <= max_nights()))),
    CONSTRAINT holds_status_check CHECK ((status = ANY (ARRAY['live'::text, 'released'::text, 'expired'::text, 'converted'::text])))
);

INSERT INTO events_pruned VALUES (true, '0', 0, 0, NULL);

ALTER TABLE ONLY blocks
    ADD CONSTRAINT blocks_external_uid_unique UNIQUE (workspace_id, external_uid);

ALTER TABLE ONLY blocks
    ADD CONSTRAINT blocks_pkey PRIMARY KEY (id);

ALTER TABLE ONLY bookings
    ADD CONSTRAINT bookings_pkey PRIMARY KEY (booking_reference);

ALTER TABLE ONLY claims
    ADD CONSTRAINT claims_marketplace_never_overlap EXCLUDE USING gist (listing_id WITH =, nights WITH &&) WHERE ((side = 'marketplace'::text));

ALTER TABLE ONLY claims
    ADD CONSTRAINT claims_pkey PRIMARY KEY (holder_kind, holder_id);

ALTER TABLE ONLY claims
    ADD CONSTRAINT claims_sides_never_overlap EXCLUDE USING gist (listing_id WITH =, nights WITH &&, side WITH <>);

ALTER TABLE ONLY erasures
    ADD CONSTRAINT erasures_pkey PRIMARY KEY (erasure_id);

ALTER TABLE ONLY events
    ADD CONSTRAINT events_id_key UNIQUE (id);

ALTER TABLE ONLY events
    ADD CONSTRAINT events_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY events_pruned
    ADD CONSTRAINT events_pruned_pkey PRIMARY KEY (singleton);

ALTER TABLE ONLY holds
    ADD CONSTRAINT holds_pkey PRIMARY KEY (hold_id);

ALTER TABLE ONLY idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (caller, key);

CREATE INDEX blocks_page_idx ON blocks USING btree (workspace_id, check_in, check_out, external_uid) INCLUDE (id);

CREATE INDEX blocks_span_page_idx ON blocks USING btree (workspace_id, block_span_class(check_in, check_out), check_in, check_out, external_uid) INCLUDE (id);

CREATE INDEX bookings_erased_idx ON bookings USING btree (erased_at, workspace_id) WHERE (erased_at IS NOT NULL);

CREATE INDEX bookings_guest_idx ON bookings USING btree (guest_id) WHERE (guest_id IS NOT NULL);

CREATE INDEX events_booking_idx ON events USING btree (booking_reference) WHERE (booking_reference IS NOT NULL);

CREATE INDEX events_listing_idx ON events USING btree (listing_id, xid, seq);

CREATE INDEX events_order_idx ON events USING btree (xid, seq);

CREATE INDEX events_workspace_idx ON events USING btree (workspace_id, xid, seq);

CREATE INDEX holds_live_expiry_idx ON holds USING btree (expires_at) WHERE (status = 'live'::text);

CREATE INDEX holds_live_listing_idx ON holds USING btree (listing_id, expires_at) WHERE (status = 'live'::text);

CREATE INDEX idempotency_keys_created_idx ON idempotency_keys USING btree (created_at);

CREATE TRIGGER events_require_writer BEFORE INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION events_require_writer();
