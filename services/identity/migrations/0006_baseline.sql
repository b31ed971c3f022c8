-- The identity schema as its migrations up to 0006 leave it, in release
-- 91d5bee03ff6f50a0cc7d95ffabe67917b5b5653: for a new schema only. migrate.ts applies it
-- where none of those migrations ran and skips it where they did (git history holds them).
-- Cut by `npm run migrations:baseline` (pg_dump: the schema and the rows its migrations
-- wrote, as INSERTs); never edited: a change is a
-- new migration after it. Of the functions, only those a table, index, constraint or
-- trigger calls are here: the files in functions/ replace them and hold every other one.

CREATE FUNCTION workspaces_environment_fixed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  if new.environment is distinct from old.environment then
    raise exception 'the environment of workspace % is fixed for ever', old.workspace_id
      using errcode = '55000'; -- object_not_in_prerequisite_state
  end if;
  return new;
end
$$;


SET default_tablespace = '';

SET default_table_access_method = heap;

CREATE TABLE api_keys (
    key_id text NOT NULL,
    workspace_id uuid NOT NULL,
    secret_hash bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT api_keys_key_id_check CHECK ((key_id ~ '^[a-z2-7]{16}$'::text)),
    CONSTRAINT api_keys_secret_hash_check CHECK ((octet_length(secret_hash) = 32))
);

CREATE TABLE internal_clients (
    client_id text NOT NULL,
    name text NOT NULL,
    role text DEFAULT 'marketplace'::text NOT NULL,
    token_sha256 bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT internal_clients_client_id_check CHECK ((client_id ~ '^[a-z2-7]{16}$'::text)),
    CONSTRAINT internal_clients_name_check CHECK (((char_length(name) >= 1) AND (char_length(name) <= 200))),
    CONSTRAINT internal_clients_role_check CHECK ((role = 'marketplace'::text)),
    CONSTRAINT internal_clients_token_sha256_check CHECK ((octet_length(token_sha256) = 32))
);

CREATE TABLE rate_counters (
    key_id text NOT NULL,
    bucket text NOT NULL,
    window_start timestamp with time zone NOT NULL,
    count integer NOT NULL,
    CONSTRAINT rate_counters_bucket_check CHECK ((bucket = ANY (ARRAY['contract'::text, 'token'::text]))),
    CONSTRAINT rate_counters_count_check CHECK ((count >= 1))
);

CREATE TABLE request_log (
    request_id uuid NOT NULL,
    workspace_id uuid NOT NULL,
    key_id text NOT NULL,
    received_at timestamp with time zone NOT NULL,
    method text NOT NULL,
    route text NOT NULL,
    path_params jsonb DEFAULT '{}'::jsonb NOT NULL,
    status bigint NOT NULL,
    code text,
    errors jsonb DEFAULT '[]'::jsonb NOT NULL,
    duration_ms bigint NOT NULL,
    CONSTRAINT request_log_code_check CHECK (((char_length(code) >= 1) AND (char_length(code) <= 64))),
    CONSTRAINT request_log_duration_ms_check CHECK ((duration_ms >= 0)),
    CONSTRAINT request_log_errors_check CHECK ((jsonb_typeof(errors) = 'array'::text)),
    CONSTRAINT request_log_method_check CHECK (((char_length(method) >= 1) AND (char_length(method) <= 16))),
    CONSTRAINT request_log_path_params_check CHECK ((jsonb_typeof(path_params) = 'object'::text)),
    CONSTRAINT request_log_route_check CHECK (((char_length(route) >= 1) AND (char_length(route) <= 200))),
    CONSTRAINT request_log_status_check CHECK (((status >= 100) AND (status <= 599)))
);

CREATE TABLE workspaces (
    workspace_id uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    environment text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT workspaces_environment_check CHECK ((environment = ANY (ARRAY['sandbox'::text, 'production'::text]))),
    CONSTRAINT workspaces_name_check CHECK (((char_length(name) >= 1) AND (char_length(name) <= 200)))
);

ALTER TABLE ONLY api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (key_id);

ALTER TABLE ONLY internal_clients
    ADD CONSTRAINT internal_clients_pkey PRIMARY KEY (client_id);

ALTER TABLE ONLY internal_clients
    ADD CONSTRAINT internal_clients_token_sha256_key UNIQUE (token_sha256);

ALTER TABLE ONLY rate_counters
    ADD CONSTRAINT rate_counters_pkey PRIMARY KEY (key_id, bucket, window_start);

ALTER TABLE ONLY request_log
    ADD CONSTRAINT request_log_pkey PRIMARY KEY (request_id);

ALTER TABLE ONLY workspaces
    ADD CONSTRAINT workspaces_pkey PRIMARY KEY (workspace_id);

CREATE INDEX api_keys_workspace_id ON api_keys USING btree (workspace_id);

CREATE INDEX internal_clients_created_at ON internal_clients USING btree (created_at DESC, client_id DESC);

CREATE INDEX rate_counters_window_start ON rate_counters USING btree (window_start);

CREATE INDEX request_log_received_at ON request_log USING btree (received_at);

CREATE INDEX request_log_workspace_time ON request_log USING btree (workspace_id, received_at DESC, request_id DESC);

CREATE TRIGGER workspaces_environment_fixed BEFORE UPDATE OF environment ON workspaces FOR EACH ROW EXECUTE FUNCTION workspaces_environment_fixed();

ALTER TABLE ONLY api_keys
    ADD CONSTRAINT api_keys_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES workspaces(workspace_id);

ALTER TABLE ONLY rate_counters
    ADD CONSTRAINT rate_counters_key_id_fkey FOREIGN KEY (key_id) REFERENCES api_keys(key_id) ON DELETE CASCADE;
