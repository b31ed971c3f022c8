-- Every writer of a listing's nights and events holds that listing's lock
-- (docs/calendar.md "One lock per listing"). put_block moving a block to another
-- listing writes the source listing too: it frees the block's claim there and appends
-- the source listing's block_moved event. So it takes both listings' locks, in one
-- order (the lower listing id first) so two moves in opposite directions wait for each
-- other instead of deadlocking.
--
-- The source listing is known only from the block row, read before any lock is taken.
-- If a concurrent move changed it between that read and the locked re-read, the call
-- raises serialization_failure (40001) and nothing is written; the service retries it
-- (services/calendar/claims.ts withRetries), as it retries a deadlock.
--
-- Apart from the locks, the function is put_block of 0008.

set local lock_timeout = '5s';

create or replace function put_block(
  p_workspace_id text, p_external_uid text, p_listing_id text, p_check_in date,
  p_check_out date, p_reason text, p_at timestamptz, p_headers jsonb
) returns put_block_result
language plpgsql volatile as $$
declare
  r calendar.put_block_result;
  b calendar.blocks;
  v_now timestamptz;
  v_overdue text[];
  v_held daterange := daterange(p_check_in, p_check_out);
  v_released daterange;
  v_from_listing text;
  v_source text;
begin
  select listing_id into v_source from calendar.blocks
  where workspace_id = p_workspace_id and external_uid = p_external_uid;
  if v_source is null or v_source = p_listing_id then
    perform calendar.lock_listing(p_listing_id);
  else
    perform calendar.lock_listing(least(v_source, p_listing_id));
    perform calendar.lock_listing(greatest(v_source, p_listing_id));
  end if;
  v_now := clock_timestamp();
  v_overdue := array(
    select hold_id::text from calendar.holds
    where listing_id = p_listing_id and status = 'live' and expires_at <= v_now);
  select * into b from calendar.blocks
  where workspace_id = p_workspace_id and external_uid = p_external_uid
  for update;
  if b.id is not null and b.listing_id is distinct from coalesce(v_source, p_listing_id) then
    raise exception 'block % moved to another listing while put_block took its locks', p_external_uid
      using errcode = '40001';
  end if;
  r.conflicts := calendar.night_conflicts(p_listing_id, p_check_in, p_check_out, true, v_overdue);
  if cardinality(r.conflicts) > 0 then
    r.outcome := 'conflict';
    r.events := 0;
    return r;
  end if;

  r.events := 0;
  if cardinality(v_overdue) > 0 then
    r.events := calendar.expire_holds(p_listing_id, p_at, p_headers, v_now);
  end if;

  if b.id is null then
    insert into calendar.blocks (workspace_id, external_uid, listing_id, check_in, check_out, reason, created_at, updated_at)
    values (p_workspace_id, p_external_uid, p_listing_id, p_check_in, p_check_out, p_reason, p_at, p_at)
    returning * into b;
    insert into calendar.claims (listing_id, holder_kind, holder_id, nights)
    values (b.listing_id, 'block', b.id::text, v_held);
    perform calendar.append_calendar_changed(p_at, p_headers, p_workspace_id, p_listing_id,
      'block_created', 'block', p_external_uid, null, v_held);
    r.events := r.events + 1;
    r.outcome := 'created';
  elsif b.listing_id = p_listing_id and b.check_in = p_check_in and b.check_out = p_check_out and b.reason = p_reason then
    r.outcome := 'unchanged';
  else
    v_released := daterange(b.check_in, b.check_out);
    v_from_listing := b.listing_id;
    update calendar.blocks
    set listing_id = p_listing_id, check_in = p_check_in, check_out = p_check_out, reason = p_reason, updated_at = p_at
    where id = b.id
    returning * into b;
    update calendar.claims set listing_id = p_listing_id, nights = v_held
    where holder_kind = 'block' and holder_id = b.id::text;
    if v_from_listing = p_listing_id and v_released <> v_held then
      perform calendar.append_calendar_changed(p_at, p_headers, p_workspace_id, p_listing_id,
        'block_moved', 'block', p_external_uid, v_released, v_held);
      r.events := r.events + 1;
    elsif v_from_listing <> p_listing_id then
      -- Moved to another listing: each listing hears about its own nights.
      perform calendar.append_calendar_changed(p_at, p_headers, p_workspace_id, v_from_listing,
        'block_moved', 'block', p_external_uid, v_released, null);
      perform calendar.append_calendar_changed(p_at, p_headers, p_workspace_id, p_listing_id,
        'block_moved', 'block', p_external_uid, null, v_held);
      r.events := r.events + 2;
    end if;
    r.outcome := 'updated';
  end if;

  r.id := b.id;
  r.external_uid := b.external_uid;
  r.listing_id := b.listing_id;
  r.check_in := to_char(b.check_in, 'YYYY-MM-DD');
  r.check_out := to_char(b.check_out, 'YYYY-MM-DD');
  r.reason := b.reason;
  r.nights := b.check_out - b.check_in;
  r.created_at := b.created_at;
  r.updated_at := b.updated_at;
  return r;
end $$;
