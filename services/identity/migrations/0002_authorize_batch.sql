-- Authorize for many requests in one statement (docs/decisions.md "Rate-limit counters",
-- docs/performance.md "Authenticated gateway path").
--
-- The identity service hands every Authorize that arrives while the previous statement
-- runs to the next one (services/kit/group-commit.ts): a key's concurrent requests cost
-- one counter update per batch instead of one each, waiting in line on the counter
-- row's lock. The outcome of each request is exactly what its own statement would have
-- given had the batch's requests run one after another in the order given:
--
--   key_live     the token's key exists, belongs to the token's workspace, is not revoked;
--   environment  of the addressed workspace, null when it does not resolve;
--   counted      when counting a live key's request: the window's count including it,
--                or null when the limit was already reached (nothing counted for it);
--   previous     the window's count just before it;
--   now_epoch    the database clock, Unix seconds.
--
-- A key's counter row is locked (and created) in key_id order, so batches of several
-- gateway or identity replicas can never deadlock on each other. Only live keys are
-- counted; the count stops at p_limit (a 429 is not counted), as the one-request
-- statement in queries.ts `countRequest` does for the token bucket.
-- PL/pgSQL bodies resolve names when they run, so they name the schema.

create function authorize_batch(
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
  v_window timestamptz := date_bin(interval '3600 seconds', now(), timestamptz 'epoch');
  v_keys text[] := '{}';
  v_before integer[] := '{}';
  v_old integer;
  k record;
begin
  -- Each live key counted in this batch, in key order: its count before the batch,
  -- then its increments (stopping at the limit).
  for k in
    select i.key_id, count(*)::integer as n
    from unnest(p_key_ids, p_token_workspace_ids, p_count) as i(key_id, workspace_id, counting)
    join identity.api_keys a on a.key_id = i.key_id and a.workspace_id = i.workspace_id and a.revoked_at is null
    where i.counting
    group by i.key_id
    order by i.key_id
  loop
    loop
      select c.count into v_old from identity.rate_counters c
      where c.key_id = k.key_id and c.bucket = 'contract' and c.window_start = v_window
      for update;
      if found then
        if v_old < p_limit then
          update identity.rate_counters c set count = least(v_old + k.n, p_limit)
          where c.key_id = k.key_id and c.bucket = 'contract' and c.window_start = v_window;
        end if;
        exit;
      end if;
      -- The window's first requests: create the row; if another replica just did, lock theirs.
      insert into identity.rate_counters (key_id, bucket, window_start, count)
      values (k.key_id, 'contract', v_window, least(k.n, p_limit))
      on conflict (key_id, bucket, window_start) do nothing;
      if found then
        v_old := 0;
        exit;
      end if;
    end loop;
    v_keys := v_keys || k.key_id;
    v_before := v_before || v_old;
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
