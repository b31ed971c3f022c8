-- Fair, isolated, adaptive delivery (docs/notifications.md, "Scheduling and isolation").

-- The delivery health of each endpoint, shared by every replica: its circuit breaker
-- and the earliest time anything may be sent to it (an open breaker, or a Retry-After
-- the partner asked for). No row = closed breaker, nothing failing, no hold.
create table endpoint_health (
  workspace_id uuid primary key,
  breaker text not null default 'closed' check (breaker in ('closed', 'open', 'half_open')),
  -- Failed attempts since the last 2xx (any delivery of the endpoint).
  consecutive_failures integer not null default 0,
  -- Probes that failed in a row since the breaker last opened (sets the next open interval).
  failed_probes integer not null default 0,
  -- Nothing is sent to the endpoint before this (breaker open, or Retry-After).
  not_before timestamptz,
  -- Why not_before is set: 'breaker' or 'retry_after'.
  hold_reason text check (hold_reason in ('breaker', 'retry_after')),
  -- The one half-open probe in flight: the claim's token and until when it holds.
  probe_owner text,
  probe_until timestamptz,
  opened_at timestamptz,
  last_failure_at timestamptz,
  last_success_at timestamptz,
  last_status integer,
  last_error text,
  updated_at timestamptz not null default now()
);

-- Endpoints whose breaker is not closed (the scrape-time gauge and the sweep).
create index endpoint_health_not_closed on endpoint_health (breaker) where breaker <> 'closed';

-- The claim walks the endpoints that have pending deliveries (a skip scan over
-- workspace_id) and takes each one's due deliveries in order from here.
create index deliveries_pending_by_endpoint on deliveries (workspace_id, next_attempt_at, id) where state = 'pending';
