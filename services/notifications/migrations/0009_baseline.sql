-- The notifications schema as its migrations up to 0009 leave it, in release
-- 91d5bee03ff6f50a0cc7d95ffabe67917b5b5653: for a new schema only. migrate.ts applies it
-- where none of those migrations ran and skips it where they did (git history holds them).
-- Cut by `npm run migrations:baseline` (pg_dump: the schema and the rows its migrations
-- wrote, as INSERTs); never edited: a change is a
-- new migration after it. Of the functions, only those a table, index, constraint or
-- trigger calls are here: the files in functions/ replace them and hold every other one.

CREATE TABLE deletion_requests (
    event_id uuid NOT NULL,
    workspace_id uuid NOT NULL,
    booking_references text[] NOT NULL,
    provider_ids text[] NOT NULL,
    occurred_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    acknowledged_at timestamp with time zone,
    completed_at timestamp with time zone,
    escalated_at timestamp with time zone,
    test boolean DEFAULT false NOT NULL
);

CREATE TABLE deliveries (
    id bigint NOT NULL,
    workspace_id uuid NOT NULL,
    event_id uuid NOT NULL,
    event_type text NOT NULL,
    occurred_at timestamp with time zone NOT NULL,
    booking_reference text,
    body text,
    state text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_status integer,
    last_error text,
    next_attempt_at timestamp with time zone,
    lease_owner text,
    lease_until timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    traceparent text,
    test boolean DEFAULT false NOT NULL,
    CONSTRAINT deliveries_check CHECK (((state = 'pending'::text) = (next_attempt_at IS NOT NULL))),
    CONSTRAINT deliveries_event_type_check CHECK ((event_type = ANY (ARRAY['booking.confirmed'::text, 'booking.cancelled'::text, 'user.erased'::text]))),
    CONSTRAINT deliveries_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'delivered'::text, 'abandoned'::text])))
);

CREATE SEQUENCE deliveries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE deliveries_id_seq OWNED BY deliveries.id;

CREATE TABLE delivery_attempts (
    id bigint NOT NULL,
    delivery_id bigint NOT NULL,
    attempted_at timestamp with time zone NOT NULL,
    response_status integer,
    duration_ms integer,
    outcome text NOT NULL,
    next_attempt_at timestamp with time zone
);

CREATE SEQUENCE delivery_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE delivery_attempts_id_seq OWNED BY delivery_attempts.id;

CREATE TABLE endpoint_checks (
    id uuid NOT NULL,
    workspace_id uuid NOT NULL,
    url text NOT NULL,
    status text NOT NULL,
    checks jsonb NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    deadline timestamp with time zone NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT endpoint_checks_check CHECK (((status = 'running'::text) = (finished_at IS NULL))),
    CONSTRAINT endpoint_checks_status_check CHECK ((status = ANY (ARRAY['running'::text, 'passed'::text, 'failed'::text])))
);

CREATE TABLE endpoint_health (
    workspace_id uuid NOT NULL,
    breaker text DEFAULT 'closed'::text NOT NULL,
    consecutive_failures integer DEFAULT 0 NOT NULL,
    failed_probes integer DEFAULT 0 NOT NULL,
    not_before timestamp with time zone,
    hold_reason text,
    probe_owner text,
    probe_until timestamp with time zone,
    opened_at timestamp with time zone,
    last_failure_at timestamp with time zone,
    last_success_at timestamp with time zone,
    last_status integer,
    last_error text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT endpoint_health_breaker_check CHECK ((breaker = ANY (ARRAY['closed'::text, 'open'::text, 'half_open'::text]))),
    CONSTRAINT endpoint_health_hold_reason_check CHECK ((hold_reason = ANY (ARRAY['breaker'::text, 'retry_after'::text])))
);

CREATE TABLE endpoints (
    workspace_id uuid NOT NULL,
    url text NOT NULL,
    events text[] NOT NULL,
    status text NOT NULL,
    secret_ciphertext bytea NOT NULL,
    secret_shown boolean DEFAULT false NOT NULL,
    previous_secret_ciphertext bytea,
    previous_valid_until timestamp with time zone,
    consecutive_abandoned integer DEFAULT 0 NOT NULL,
    suspended_at timestamp with time zone,
    verified_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT endpoints_check CHECK (((previous_secret_ciphertext IS NULL) = (previous_valid_until IS NULL))),
    CONSTRAINT endpoints_status_check CHECK ((status = ANY (ARRAY['pending_verification'::text, 'active'::text, 'suspended'::text]))),
    CONSTRAINT endpoints_url_check CHECK ((length(url) <= 2048))
);

CREATE TABLE erased_bookings (
    workspace_id uuid NOT NULL,
    booking_reference text NOT NULL,
    erased_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE event_facts (
    workspace_id uuid NOT NULL,
    event_type text NOT NULL,
    subject text NOT NULL,
    event_id uuid NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT event_facts_event_type_check CHECK ((event_type = ANY (ARRAY['booking.confirmed'::text, 'booking.cancelled'::text, 'user.erased'::text]))),
    CONSTRAINT event_facts_subject_check CHECK (((length(subject) >= 1) AND (length(subject) <= 255)))
);

CREATE TABLE event_feed (
    workspace_id uuid NOT NULL,
    "position" bigint NOT NULL,
    event_id uuid NOT NULL,
    event_type text NOT NULL,
    booking_reference text,
    envelope text NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT event_feed_event_type_check CHECK ((event_type = ANY (ARRAY['booking.confirmed'::text, 'booking.cancelled'::text, 'user.erased'::text]))),
    CONSTRAINT event_feed_position_check CHECK (("position" > 0))
);

CREATE TABLE event_feed_heads (
    workspace_id uuid NOT NULL,
    last_position bigint NOT NULL,
    pruned_through bigint DEFAULT 0 NOT NULL,
    CONSTRAINT event_feed_heads_last_position_check CHECK ((last_position >= 0)),
    CONSTRAINT event_feed_heads_pruned_through_check CHECK ((pruned_through >= 0))
);

ALTER TABLE ONLY deliveries ALTER COLUMN id SET DEFAULT nextval('deliveries_id_seq'::regclass);

ALTER TABLE ONLY delivery_attempts ALTER COLUMN id SET DEFAULT nextval('delivery_attempts_id_seq'::regclass);

ALTER TABLE ONLY deletion_requests
    ADD CONSTRAINT deletion_requests_pkey PRIMARY KEY (workspace_id, event_id);

ALTER TABLE ONLY deliveries
    ADD CONSTRAINT deliveries_pkey PRIMARY KEY (id);

ALTER TABLE ONLY deliveries
    ADD CONSTRAINT deliveries_workspace_id_event_id_key UNIQUE (workspace_id, event_id);

ALTER TABLE ONLY delivery_attempts
    ADD CONSTRAINT delivery_attempts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY endpoint_checks
    ADD CONSTRAINT endpoint_checks_pkey PRIMARY KEY (id);

ALTER TABLE ONLY endpoint_health
    ADD CONSTRAINT endpoint_health_pkey PRIMARY KEY (workspace_id);

ALTER TABLE ONLY endpoints
    ADD CONSTRAINT endpoints_pkey PRIMARY KEY (workspace_id);

ALTER TABLE ONLY erased_bookings
    ADD CONSTRAINT erased_bookings_pkey PRIMARY KEY (workspace_id, booking_reference);

ALTER TABLE ONLY event_facts
    ADD CONSTRAINT event_facts_pkey PRIMARY KEY (workspace_id, event_type, subject);

ALTER TABLE ONLY event_feed_heads
    ADD CONSTRAINT event_feed_heads_pkey PRIMARY KEY (workspace_id);

ALTER TABLE ONLY event_feed
    ADD CONSTRAINT event_feed_pkey PRIMARY KEY (workspace_id, "position");

ALTER TABLE ONLY event_feed
    ADD CONSTRAINT event_feed_workspace_id_event_id_key UNIQUE (workspace_id, event_id);

CREATE INDEX deletion_requests_open ON deletion_requests USING btree (created_at) WHERE ((acknowledged_at IS NULL) AND (escalated_at IS NULL));

CREATE INDEX deletion_requests_recent ON deletion_requests USING btree (created_at DESC);

CREATE INDEX deliveries_by_booking ON deliveries USING btree (workspace_id, booking_reference) WHERE ((booking_reference IS NOT NULL) AND (body IS NOT NULL));

CREATE INDEX deliveries_by_workspace ON deliveries USING btree (workspace_id, id DESC);

CREATE INDEX deliveries_due ON deliveries USING btree (next_attempt_at, id) WHERE (state = 'pending'::text);

CREATE INDEX deliveries_pending_by_endpoint ON deliveries USING btree (workspace_id, next_attempt_at, id) WHERE (state = 'pending'::text);

CREATE INDEX delivery_attempts_by_delivery ON delivery_attempts USING btree (delivery_id, id DESC);

CREATE INDEX endpoint_checks_started_idx ON endpoint_checks USING btree (started_at);

CREATE INDEX endpoint_checks_workspace_idx ON endpoint_checks USING btree (workspace_id, started_at DESC);

CREATE INDEX endpoint_health_not_closed ON endpoint_health USING btree (breaker) WHERE (breaker <> 'closed'::text);

CREATE INDEX event_feed_booking_idx ON event_feed USING btree (workspace_id, booking_reference) WHERE (event_type = 'booking.confirmed'::text);

CREATE INDEX event_feed_recorded_idx ON event_feed USING btree (recorded_at);

ALTER TABLE ONLY delivery_attempts
    ADD CONSTRAINT delivery_attempts_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES deliveries(id) ON DELETE CASCADE;
