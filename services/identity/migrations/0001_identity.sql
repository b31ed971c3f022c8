-- Identity: workspaces (tenancies), API keys (stored only as hashes) and the
-- per-key rate-limit counters (docs/decisions.md "Identity", "Gateway contract").

-- A workspace is sandbox or production for ever (spec: "Every API key is issued for
-- exactly one workspace ... and is either a sandbox key or a production key").
create table workspaces (
  workspace_id uuid primary key default gen_random_uuid(),
  name text not null check (char_length(name) between 1 and 200),
  environment text not null check (environment in ('sandbox', 'production')),
  created_at timestamptz not null default now()
);

-- There is no update path for the environment in code; the database refuses one too,
-- so a hand-written UPDATE cannot turn a sandbox into production.
create function workspaces_environment_fixed() returns trigger
language plpgsql as $$
begin
  if new.environment is distinct from old.environment then
    raise exception 'the environment of workspace % is fixed for ever', old.workspace_id
      using errcode = '55000'; -- object_not_in_prerequisite_state
  end if;
  return new;
end
$$;

create trigger workspaces_environment_fixed
  before update of environment on workspaces
  for each row execute function workspaces_environment_fixed();

-- An API key `psk_<key_id>_<secret>`: the key id is the lookup prefix (safe to log),
-- the secret is kept only as its SHA-256 (256 random bits need no slow hash).
create table api_keys (
  key_id text primary key check (key_id ~ '^[a-z2-7]{16}$'),
  workspace_id uuid not null references workspaces (workspace_id),
  secret_hash bytea not null check (octet_length(secret_hash) = 32),
  created_at timestamptz not null default now(),
  -- Set once; revocation is effective on the outstanding tokens' next request.
  revoked_at timestamptz
);

create index api_keys_workspace_id on api_keys (workspace_id);

-- Fixed windows of 3600 s aligned to the Unix epoch, one row per key, bucket and
-- window. `contract`: contract requests (RATE_LIMIT_PER_HOUR); `token`: token
-- exchanges (TOKEN_RATE_LIMIT_PER_HOUR). Incremented only by an atomic upsert that
-- stops at the limit, so any number of replicas share one exact count. Windows that
-- ended are deleted periodically by the service.
create table rate_counters (
  key_id text not null references api_keys (key_id) on delete cascade,
  bucket text not null check (bucket in ('contract', 'token')),
  window_start timestamptz not null,
  count integer not null check (count >= 1),
  primary key (key_id, bucket, window_start)
);

create index rate_counters_window_start on rate_counters (window_start);
