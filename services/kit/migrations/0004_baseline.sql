-- The kit schema as its migrations up to 0004 leave it, in release
-- 91d5bee03ff6f50a0cc7d95ffabe67917b5b5653: for a new schema only. migrate.ts applies it
-- where none of those migrations ran and skips it where they did (git history holds them).
-- Cut by `npm run migrations:baseline` (pg_dump: the schema and the rows its migrations
-- wrote, as INSERTs); never edited: a change is a
-- new migration after it. Of the functions, only those a table, index, constraint or
-- trigger calls are here: the files in functions/ replace them and hold every other one.

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

ALTER TABLE ONLY outbox
    ADD CONSTRAINT outbox_id_key UNIQUE (id);

ALTER TABLE ONLY outbox
    ADD CONSTRAINT outbox_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY processed_events
    ADD CONSTRAINT processed_events_pkey PRIMARY KEY (consumer, event_id);

CREATE INDEX outbox_unpublished_idx ON outbox USING btree (seq) WHERE (published_at IS NULL);

CREATE INDEX processed_events_age_idx ON processed_events USING btree (processed_at);
