-- version: 1
-- The rate-limit window and its counter (docs/decisions.md "Rate-limit counters").

-- Rate-limit windows are fixed, this many seconds long, aligned to the Unix epoch.
-- services/kit/limits.ts RATE_WINDOW_SECONDS is the same number for TypeScript;
-- test/kit/limits-agree.test.ts compares them.
create or replace function rate_window_seconds() returns integer
language sql immutable parallel safe
return 3600;

-- The start of the window holding p_at.
create or replace function rate_window_start(p_at timestamptz) returns timestamptz
language sql stable parallel safe
return date_bin(make_interval(secs => rate_window_seconds()), p_at, timestamptz 'epoch');

-- Counts p_n requests of p_key_id in p_bucket in the window starting p_window, stopping
-- at p_limit: requests beyond the limit are not counted (a 429 costs nothing). Returns
-- the window's count before them. The window's first requests create the row;
-- otherwise the row is locked and added to, so concurrent callers take turns on it and
-- the count never passes the limit. The row of the current window is never deleted
-- (queries.ts deleteOldCounters keeps it), so once the insert meets it the select
-- finds it.
create or replace function count_requests(p_key_id text, p_bucket text, p_window timestamptz, p_n integer, p_limit integer)
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
