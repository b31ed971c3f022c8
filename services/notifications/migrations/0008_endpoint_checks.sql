-- Receiver check runs (public POST /v1/sandbox/endpoint-checks, GET
-- /v1/sandbox/endpoint-checks/{id}; services/notifications/endpoint-checks.ts): test
-- deliveries sent to a sandbox workspace's endpoint and how the receiver answered each.
-- `checks` is the list of {name, expectation, observed, passed}, filled as the run goes.
-- A run still `running` past `deadline` was interrupted (its process stopped) and reads
-- as failed. Runs are deleted 30 days after they started (the notifications
-- housekeeping).

set local lock_timeout = '5s';

create table endpoint_checks (
  id           uuid primary key,
  workspace_id uuid not null,
  url          text not null,
  status       text not null check (status in ('running', 'passed', 'failed')),
  checks       jsonb not null,
  started_at   timestamptz not null default now(),
  deadline     timestamptz not null,
  finished_at  timestamptz,
  check ((status = 'running') = (finished_at is null))
);

-- The newest run of a workspace (the one-a-minute limit) and the pruning by age.
create index endpoint_checks_workspace_idx on endpoint_checks (workspace_id, started_at desc);
create index endpoint_checks_started_idx on endpoint_checks (started_at);
