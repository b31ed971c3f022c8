-- version: 1
-- The calendar's writers of events (docs/calendar.md "Events: plain rows, encoded once"):
-- each event is its type and a jsonb body of plain fields, appended to calendar.events
-- (WatchEvents) and, through the kit's append_outbox, to calendar.outbox;
-- services/calendar/event-codec.ts builds the messages. No function here knows a
-- field number.

-- The calendar's one writer of events. Appends an event of type p_type with body p_body
-- to the WatchEvents log (every type but user_erased, which goes to the bus only) and
-- to the outbox, under one new id, which it returns. The outbox row's subject is the
-- type (the encoder answers the bus subject); its headers are p_headers (the caller's
-- trace context) plus workspace_id. p_booking_reference is set on booking events, so
-- EraseGuest can find them.
create or replace function append_event(
  p_type text, p_workspace_id text, p_listing_id text, p_booking_reference text, p_body jsonb, p_headers jsonb
) returns uuid
language plpgsql volatile as $$
declare
  v_id uuid := gen_random_uuid();
begin
  if p_type <> 'user_erased' then
    insert into calendar.events (id, workspace_id, listing_id, type, booking_reference, body)
    values (v_id, p_workspace_id, p_listing_id, p_type, p_booking_reference, p_body);
  end if;
  perform calendar.append_outbox(v_id, p_type, null, p_body,
    coalesce(p_headers, '{}'::jsonb) || jsonb_build_object('workspace_id', p_workspace_id));
  return v_id;
end $$;

-- Appends each element of the array p_events, in order: {type, workspace_id,
-- listing_id, booking_reference, body} (services/calendar/event-log.ts appendEvents).
-- Returns how many.
create or replace function append_events(p_events jsonb, p_headers jsonb) returns integer
language plpgsql volatile as $$
declare
  e record;
  n integer := 0;
begin
  for e in select value as v from jsonb_array_elements(p_events) with ordinality order by ordinality loop
    perform calendar.append_event(e.v->>'type', e.v->>'workspace_id', e.v->>'listing_id',
                                  e.v->>'booking_reference', e.v->'body', p_headers);
    n := n + 1;
  end loop;
  return n;
end $$;

-- A night range as an event body has it: {"check_in", "check_out"} ("YYYY-MM-DD": JSON
-- writes dates in ISO 8601 whatever DateStyle says), or null for none.
create or replace function night_range_body(p_nights daterange) returns jsonb
language sql stable parallel safe
return case when p_nights is null then null else jsonb_build_object('check_in', lower(p_nights), 'check_out', upper(p_nights)) end;

-- Appends a calendar_changed event: the nights of one holder changed on a listing.
-- p_kind: block_created, block_moved, block_deleted, hold_placed, hold_released,
-- hold_expired, booking_confirmed, booking_cancelled; p_holder_kind: block, hold,
-- booking, withdrawn (as in claims); p_released / p_held: null for none. occurred_at
-- is p_at in UTC, to the microsecond.
create or replace function append_calendar_changed(
  p_at timestamptz, p_headers jsonb, p_workspace_id text, p_listing_id text, p_kind text,
  p_holder_kind text, p_holder_id text, p_released daterange, p_held daterange
) returns void
language plpgsql volatile as $$
begin
  perform calendar.append_event('calendar_changed', p_workspace_id, p_listing_id, null,
    jsonb_build_object(
      'occurred_at', to_char(p_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
      'workspace_id', p_workspace_id,
      'listing_id', p_listing_id,
      'kind', p_kind,
      'holder_kind', p_holder_kind,
      'holder_id', p_holder_id,
      'released', calendar.night_range_body(p_released),
      'held', calendar.night_range_body(p_held)),
    p_headers);
end $$;
