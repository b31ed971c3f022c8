-- version: 1
-- The conflict scan every calendar write runs under the listing's lock.

-- Every night of [p_check_in, p_check_out) on the listing already held by a holder
-- (marketplace holders only, or all), ascending, distinct, "YYYY-MM-DD". Claims of the
-- holds named in p_overdue_holds are left out (put_block scans before it expires them).
-- One query per scope, each with its side condition written out: a cached generic plan
-- then still uses the right GiST index of the exclusion constraints (marketplace only:
-- the partial one, so a listing full of partner blocks costs nothing to scan).
create or replace function night_conflicts(
  p_listing_id text, p_check_in date, p_check_out date, p_marketplace_only boolean,
  p_overdue_holds text[] default '{}'
) returns text[]
language plpgsql stable as $$
declare
  v_range daterange := daterange(p_check_in, p_check_out);
  v_taken daterange[];
begin
  if p_marketplace_only then
    v_taken := array(
      select c.nights * v_range from calendar.claims c
      where c.listing_id = p_listing_id and c.nights && v_range and c.side = 'marketplace'
        and not (c.holder_kind = 'hold' and c.holder_id = any(p_overdue_holds)));
  else
    v_taken := array(
      select c.nights * v_range from calendar.claims c
      where c.listing_id = p_listing_id and c.nights && v_range
        and not (c.holder_kind = 'hold' and c.holder_id = any(p_overdue_holds)));
  end if;
  if cardinality(v_taken) = 0 then
    return '{}';
  end if;
  -- Overlapping holders merged first (range_agg), so each night is generated once.
  return array(
    select to_char(lower(m) + n.i, 'YYYY-MM-DD')
    from unnest((select range_agg(t) from unnest(v_taken) as t)) as m
    cross join lateral generate_series(0, upper(m) - lower(m) - 1) as n(i)
    order by lower(m) + n.i);
end $$;
