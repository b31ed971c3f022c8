-- Events as plain rows; the wire format lives in TypeScript alone (docs/calendar.md
-- "Events: plain rows, encoded once"). And the night limit named once in SQL.
--
-- The calendar's SQL wrote CalendarChanged events as protobuf bytes it encoded itself
-- (calendar_changed_pb, migration 0003), a copy of the TypeScript encoder that had to
-- follow every change of the .proto. From here on every event is written as its type
-- and a jsonb body of plain fields, in the calendar's own words (`hold_expired`,
-- `block` …), to calendar.events (WatchEvents) and, through the kit's append_outbox,
-- to calendar.outbox; services/calendar/event-codec.ts builds the messages when the
-- relay publishes a row and when WatchEvents streams one. No function here knows a
-- field number.
--
-- Rows written before this migration keep their bytes in `data` (body null): the relay
-- publishes them and WatchEvents decodes them as they are, so an upgrade with events
-- not yet relayed or streamed loses nothing. Retention removes them in time
-- (CALENDAR_EVENT_RETENTION_DAYS for the log, 7 days after publication for the outbox).
--
-- What stays in SQL is what must run inside the writers' statement: the listing lock,
-- hold expiry, the conflict scan and the writes (put_block, expire_holds), plus the
-- event writers below, which put_block calls.

-- ---------------------------------------------------------------------------------------
-- The night limit (spec "Limits"): services/kit/limits.ts MAX_NIGHTS is the same number
-- for TypeScript; test/kit/limits-agree.test.ts compares them.
create function max_nights() returns integer
language sql immutable parallel safe
return 730;

-- The range checks of 0001 and the last span class of 0006 use it instead of a literal.
-- The constraints are re-checked here (the rows met the same bound before).
alter table blocks drop constraint blocks_nights,
  add constraint blocks_nights check (check_out > check_in and check_out - check_in <= max_nights());
alter table holds drop constraint holds_nights,
  add constraint holds_nights check (check_out > check_in and check_out - check_in <= max_nights());
alter table bookings drop constraint bookings_nights,
  add constraint bookings_nights check (check_out > check_in and check_out - check_in <= max_nights());

create or replace function block_span_max_nights(p_class integer) returns integer
language sql immutable strict parallel unsafe
return case when p_class >= 9 then max_nights() else 1 << p_class end;

-- ---------------------------------------------------------------------------------------
-- The event log holds the encoded message (rows from before) or the plain body.
alter table events alter column data drop not null;
alter table events add column body jsonb;
alter table events add constraint events_one_form check ((data is null) <> (body is null));

-- The calendar's one writer of events. Appends an event of type p_type with body p_body
-- to the WatchEvents log (every type but user_erased, which goes to the bus only) and
-- to the outbox, under one new id, which it returns. The outbox row's subject is the
-- type (the encoder answers the bus subject); its headers are p_headers (the caller's
-- trace context) plus workspace_id. p_booking_reference is set on booking events, so
-- EraseGuest can find them.
create function append_event(
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
create function append_events(p_events jsonb, p_headers jsonb) returns integer
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
create function night_range_body(p_nights daterange) returns jsonb
language sql stable parallel safe
return case when p_nights is null then null else jsonb_build_object('check_in', lower(p_nights), 'check_out', upper(p_nights)) end;

-- The encoders of 0003 go; a CalendarChanged is appended with its body instead.
drop function append_calendar_changed(timestamptz, jsonb, text, text, integer, integer, text, daterange, daterange);
drop function calendar_changed_pb(uuid, timestamptz, text, text, integer, integer, text, daterange, daterange);
drop function pb_night_range(integer, daterange);
drop function pb_timestamp(integer, timestamptz);
drop function pb_string(integer, text);
drop function pb_uint(integer, bigint);
drop function pb_bytes(integer, bytea);
drop function pb_varint(bigint);

-- Appends a calendar_changed event: the nights of one holder changed on a listing.
-- p_kind: block_created, block_moved, block_deleted, hold_placed, hold_released,
-- hold_expired, booking_confirmed, booking_cancelled; p_holder_kind: block, hold,
-- booking, withdrawn (as in claims); p_released / p_held: null for none. occurred_at
-- is p_at in UTC, to the microsecond.
create function append_calendar_changed(
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

-- ---------------------------------------------------------------------------------------
-- expire_holds and put_block as in 0003, writing their events with the function above.

create or replace function expire_holds(p_listing_id text, p_at timestamptz, p_headers jsonb, p_now timestamptz default null)
returns integer
language plpgsql volatile as $$
declare
  h record;
  n integer := 0;
begin
  for h in
    with expired as (
      update calendar.holds set status = 'expired', ended_at = expires_at
      where listing_id = p_listing_id and status = 'live' and expires_at <= coalesce(p_now, clock_timestamp())
      returning hold_id, workspace_id, check_in, check_out
    ), freed as (
      delete from calendar.claims
      where holder_kind = 'hold' and holder_id in (select hold_id::text from expired)
    )
    select hold_id, workspace_id, check_in, check_out from expired
  loop
    perform calendar.append_calendar_changed(p_at, p_headers, h.workspace_id, p_listing_id,
      'hold_expired', 'hold', h.hold_id::text, daterange(h.check_in, h.check_out), null);
    n := n + 1;
  end loop;
  return n;
end $$;

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
begin
  perform calendar.lock_listing(p_listing_id);
  v_now := clock_timestamp();
  v_overdue := array(
    select hold_id::text from calendar.holds
    where listing_id = p_listing_id and status = 'live' and expires_at <= v_now);
  select * into b from calendar.blocks
  where workspace_id = p_workspace_id and external_uid = p_external_uid
  for update;
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
