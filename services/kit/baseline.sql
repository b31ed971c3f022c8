-- The kit schema and the rows its landed migrations leave, for a new schema only:
-- migrate runs it in place of the migrations named below and records each with the
-- checksum its file landed with; a schema holding them skips it. Those files stay in
-- migrations/ as history (landed files never change), read only by the tests that prove
-- this equals them. Cut by `npm run migrations:baseline` (docs/operations.md "Baselines");
-- never edited by hand: a change is a new migration, and the next release cuts it again.
-- Of the functions, only those a table, index, constraint or trigger calls are here:
-- functions/ holds every other one and is applied after the migrations.
-- release: 8c7717f464b6cec10a0d3f63196c24a0deb8e5f8
-- replaces: kit/0001_outbox d87010a1c024528a6a73bcff6c082fe3c922fde4ba7a4cea19ce7473fa43641b
-- replaces: kit/0002_processed_events e621af980dda001e325e6e0e2f3c1e494fe62bf6c2f9e548c6422d0877a6302a
-- replaces: kit/0003_processed_events_age 5f7b933060ad6ebbaa2201aece46fbe8d65a4e697b4b471f711ba1dd0c620346
-- replaces: kit/0004_outbox_writer 407a4f3bec905cee87f73f23277fa3e12d4508bfa440d4c99bc73f5164ca1154

CREATE TABLE outbox (
    seq bigint NOT NULL,
    id uuid NOT NULL,
    subject text NOT NULL,
    data bytea,
    headers jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    published_at timestamp with time zone,
    body jsonb,
    CONSTRAINT outbox_one_form CHECK (((data IS NULL) <> (body IS NULL)))
);

CREATE SEQUENCE outbox_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE outbox_seq_seq OWNED BY outbox.seq;

CREATE TABLE processed_events (
    consumer text NOT NULL,
    event_id uuid NOT NULL,
    processed_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY outbox ALTER COLUMN seq SET DEFAULT nextval('outbox_seq_seq'::regclass);

SELECT pg_catalog.setval('outbox_seq_seq', 1, false);

ALTER TABLE ONLY outbox
    ADD CONSTRAINT outbox_id_key UNIQUE (id);

ALTER TABLE ONLY outbox
    ADD CONSTRAINT outbox_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY processed_events
    ADD CONSTRAINT processed_events_pkey PRIMARY KEY (consumer, event_id);

CREATE INDEX outbox_unpublished_idx ON outbox USING btree (seq) WHERE (published_at IS NULL);

CREATE INDEX processed_events_age_idx ON processed_events USING btree (processed_at);
