set local lock_timeout = '5s';

-- The request log: the metadata of every contract request that had a workspace, as
-- the gateway recorded it (RecordRequests; docs/operations.md "Request log"). Never a
-- body, a query value, a token or a key: the route template, the route's own path
-- identifiers, the answer's status, problem code and `errors[]` field/code pairs.
-- Bounded per workspace by count and age (request-log-pruner.ts).
--
-- No foreign key to workspaces: a batch is one insert, and a workspace is never deleted.
create table request_log (
  request_id uuid primary key,
  workspace_id uuid not null,
  key_id text not null,
  received_at timestamptz not null,
  method text not null check (char_length(method) between 1 and 16),
  route text not null check (char_length(route) between 1 and 200),
  path_params jsonb not null default '{}' check (jsonb_typeof(path_params) = 'object'),
  status bigint not null check (status between 100 and 599),
  -- The problem document's code; null for a 2xx.
  code text check (char_length(code) between 1 and 64),
  -- `[{field, code}]` of a validation_failed answer; empty otherwise.
  errors jsonb not null default '[]' check (jsonb_typeof(errors) = 'array'),
  duration_ms bigint not null check (duration_ms >= 0)
);

-- ListRequests (newest first, cursor on time then id) and the per-workspace count bound.
create index request_log_workspace_time on request_log (workspace_id, received_at desc, request_id desc);
-- The age bound across workspaces.
create index request_log_received_at on request_log (received_at);
