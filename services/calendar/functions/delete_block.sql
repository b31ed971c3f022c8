-- version: 1
-- DeleteBlock in one statement (services/calendar/blocks.ts; docs/calendar.md "One
-- style for writes"). The caller has read the block (its listing and nights, outside a
-- transaction: an absent block costs one statement) and built its block_deleted event
-- (event-log.ts) from what it read.

-- DeleteBlock's writes, in one call: the listing's lock, then the block — only if it is
-- still on p_listing_id with the nights the caller read — with its claim, and p_events.
-- Answers false when the block changed (moved, re-dated) or went meanwhile: nothing is
-- written and the caller reads it again.
create or replace function delete_block(
  p_workspace_id text, p_external_uid text, p_listing_id text, p_check_in date, p_check_out date,
  p_events jsonb, p_headers jsonb
) returns boolean
language plpgsql volatile as $$
declare
  v_id bigint;
begin
  perform calendar.lock_listing(p_listing_id);
  delete from calendar.blocks
  where workspace_id = p_workspace_id and external_uid = p_external_uid and listing_id = p_listing_id
    and check_in = p_check_in and check_out = p_check_out
  returning id into v_id;
  if not found then
    return false;
  end if;
  delete from calendar.claims where holder_kind = 'block' and holder_id = v_id::text;
  perform calendar.append_events(p_events, p_headers);
  return true;
end $$;
