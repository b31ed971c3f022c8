-- The rate-limit window and "count unless at the limit", each written once in SQL
-- (docs/decisions.md "Rate-limit counters").
--
-- Both counters — the contract requests counted by authorize_batch and the token
-- exchanges counted by queries.ts `countRequest` — now count through count_requests,
-- in windows from rate_window_start. PL/pgSQL bodies resolve names when they run, so
-- they name the schema; the SQL-standard bodies are bound when created here.

-- Rate-limit windows are fixed, this many seconds long, aligned to the Unix epoch.
-- services/kit/limits.ts RATE_WINDOW_SECONDS is the same number for TypeScript;
-- test/kit/limits-agree.test.ts compares them.
create function rate_window_seconds() returns integer
language sql immutable parallel safe
return 3600;

-- The start of the window holding p_at.
create function rate_window_start(p_at timestamptz) returns timestamptz
language sql stable parallel safe
return date_bin(make_interval(secs => rate_window_seconds()), p_at, timestamptz 'epoch');

-- Counts p_n requests of p_key_id in p_bucket in the window starting p_window, stopping
-- at p_limit: requests beyond the limit are not counted (a 429 costs nothing). Returns
-- the window's count before them. The window's first requests create the row;
-- otherwise the row is locked and added to, so concurrent callers take turns on it and
-- the count never passes the limit. The row of the current window is never deleted
-- (queries.ts deleteOldCounters keeps it), so once the insert meets it the select
-- finds it.
create function count_requests(p_key_id text, p_bucket text, p_window timestamptz, p_n integer, p_limit integer)
returns integer
language plpgsql volatile as $$
declare
  v_old integer;
begin
  insert into identity.rate_counters (key_id, bucket, window_start, count)
  values (p_key_id, p_bucket, p_window, least(p_n, p_limit))
  on conflict (key_id, bucket, window_start) do nothing;
  if found then
    return 0;
  end if;
  select c.count into strict v_old from identity.rate_counters c
  where c.key_id = p_key_id and c.bucket = p_bucket and c.window_start = p_window
  for update;
  if v_old < p_limit then
    update identity.rate_counters c set count = least(v_old + p_n, p_limit)
    where c.key_id = p_key_id and c.bucket = p_bucket and c.window_start = p_window;
  end if;
  return v_old;
end $$;

-- authorize_batch (its contract: migration 0002's header) counting through
-- count_requests. Same arguments and result columns, so `create or replace` swaps the
-- body in place.
create or replace function authorize_batch(
  p_key_ids text[],
  p_token_workspace_ids uuid[],
  p_addressed_workspace_ids uuid[],
  p_count boolean[],
  p_limit integer
) returns table (
  ord integer,
  key_live boolean,
  environment text,
  counted integer,
  previous integer,
  now_epoch double precision
)
language plpgsql volatile as $$
#variable_conflict use_column
declare
  v_window timestamptz := identity.rate_window_start(now());
  v_keys text[] := '{}';
  v_before integer[] := '{}';
  k record;
begin
  -- Each live key counted in this batch, in key order (so batches never deadlock on
  -- each other): its count before the batch, then its increments.
  for k in
    select i.key_id, count(*)::integer as n
    from unnest(p_key_ids, p_token_workspace_ids, p_count) as i(key_id, workspace_id, counting)
    join identity.api_keys a on a.key_id = i.key_id and a.workspace_id = i.workspace_id and a.revoked_at is null
    where i.counting
    group by i.key_id
    order by i.key_id
  loop
    v_keys := v_keys || k.key_id;
    v_before := v_before || identity.count_requests(k.key_id, 'contract', v_window, k.n, p_limit);
  end loop;

  return query
  with items as (
    select i.ord::integer as ord, i.key_id, i.counting,
           a.key_id is not null as live,
           w.environment
    from unnest(p_key_ids, p_token_workspace_ids, p_addressed_workspace_ids, p_count)
           with ordinality as i(key_id, workspace_id, addressed, counting, ord)
    left join identity.api_keys a on a.key_id = i.key_id and a.workspace_id = i.workspace_id and a.revoked_at is null
    left join identity.workspaces w on w.workspace_id = i.addressed
  ), ranked as (
    select items.*, b.before,
           -- the key's requests counted before this one in the batch
           coalesce(count(*) filter (where items.live and items.counting) over (
             partition by items.key_id order by items.ord rows between unbounded preceding and 1 preceding), 0)::integer as prior
    from items
    left join unnest(v_keys, v_before) as b(key_id, before) on b.key_id = items.key_id
  ), sequential as (
    -- the key's count just before this request, had the batch run one request at a time
    select r.*,
           case when r.before is null then null
                when r.before >= p_limit then r.before
                else least(r.before + r.prior, p_limit)
           end as count_before
    from ranked r
  )
  select s.ord, s.live, s.environment,
         case when s.live and s.counting and s.count_before < p_limit then s.count_before + 1 end,
         coalesce(s.count_before,
                  (select c.count from identity.rate_counters c
                   where c.key_id = s.key_id and c.bucket = 'contract' and c.window_start = v_window),
                  0),
         extract(epoch from now())::float8
  from sequential s
  order by s.ord;
end $$;
