-- One statement per block push (issue 5 item 9; docs/calendar.md "Blocks").
--
-- `put_block(...)` does in the database what PutBlock did in 7 statements (BEGIN, the
-- listing lock, hold expiry, the block row, the conflict scan, the write, COMMIT): the
-- service calls it as ONE statement in an implicit transaction. The pieces it is built
-- from are the calendar's only definition of them; the service's other writers (holds,
-- bookings, the expiry sweeper) call the same functions:
--   lock_listing     the listing's transaction-scoped advisory lock;
--   expire_holds     expires the listing's overdue live holds, writes HOLD_EXPIRED;
--   night_conflicts  every night of a range already held (the conflict scan);
--   append_calendar_changed + calendar_changed_pb
--                    a CalendarChanged event written to `events` and `outbox` under one
--                    id, its protobuf bytes built here exactly as protobuf-es' toBinary
--                    builds them in services/calendar/event-log.ts (a test compares).
-- PL/pgSQL bodies resolve names when they run, under the caller's search_path, so they
-- name the schema; the SQL-standard bodies (`return ...`) are bound when created here.

-- The listing's lock: every writer that claims nights on a listing takes it first, so
-- writers of one listing run one at a time in every process and replica.
create function lock_listing(p_listing_id text) returns void
language plpgsql volatile as $$
begin
  perform pg_advisory_xact_lock(hashtextextended('psync.calendar.listing:' || p_listing_id, 0));
end $$;

-- ---------------------------------------------------------------------------------------
-- Protobuf wire format, only what CalendarChanged needs: non-negative varints, and
-- fields numbered 1..15 (one tag byte). proto3 leaves out empty strings and zero
-- numbers; message fields are written when set, in field-number order as protobuf-es.

create function pb_varint(v bigint) returns bytea
language plpgsql immutable strict parallel safe as $$
declare
  encoded bytea := '\x'::bytea;
begin
  if v < 0 then
    raise exception 'pb_varint: negative value %', v;
  end if;
  while v > 127 loop
    encoded := encoded || set_byte('\x00'::bytea, 0, ((v & 127) | 128)::int);
    v := v >> 7;
  end loop;
  return encoded || set_byte('\x00'::bytea, 0, v::int);
end $$;

-- A length-delimited field (a string or a sub-message): tag, length, bytes.
create function pb_bytes(field int, payload bytea) returns bytea
language sql immutable strict parallel safe
return set_byte('\x00'::bytea, 0, (field << 3) | 2) || pb_varint(length(payload)) || payload;

-- A string field; absent when empty.
create function pb_string(field int, s text) returns bytea
language sql stable parallel safe
return case when coalesce(s, '') = '' then '\x'::bytea else pb_bytes(field, convert_to(s, 'UTF8')) end;

-- A varint field (an enum, a count); absent when zero.
create function pb_uint(field int, v bigint) returns bytea
language sql immutable parallel safe
return case when coalesce(v, 0) = 0 then '\x'::bytea else set_byte('\x00'::bytea, 0, field << 3) || pb_varint(v) end;

-- A google.protobuf.Timestamp field (seconds, nanos), as timestampFromDate builds it.
create function pb_timestamp(field int, t timestamptz) returns bytea
language sql stable parallel safe
return pb_bytes(field,
  pb_uint(1, floor(extract(epoch from t))::bigint)
  || pb_uint(2, ((extract(epoch from t) - floor(extract(epoch from t))) * 1000000000)::bigint));

-- A psync.common.v1.NightRange field ("YYYY-MM-DD" check_in, check_out); absent when null.
create function pb_night_range(field int, nights daterange) returns bytea
language sql stable parallel safe
return case when nights is null then '\x'::bytea else pb_bytes(field,
  pb_string(1, to_char(lower(nights), 'YYYY-MM-DD')) || pb_string(2, to_char(upper(nights), 'YYYY-MM-DD'))) end;

-- psync.calendar.v1.CalendarChanged (proto/psync/calendar/v1/events.proto). `kind` is a
-- CalendarChangeKind, `holder_kind` a NightHolderKind (their numbers).
create function calendar_changed_pb(
  event_id uuid, occurred_at timestamptz, workspace_id text, listing_id text, kind int,
  holder_kind int, holder_id text, released daterange, held daterange
) returns bytea
language sql stable parallel safe
return pb_string(1, event_id::text)
  || pb_timestamp(2, occurred_at)
  || pb_string(3, workspace_id)
  || pb_string(4, listing_id)
  || pb_uint(5, kind)
  || pb_bytes(6, pb_uint(1, holder_kind) || pb_string(2, holder_id))
  || pb_night_range(7, released)
  || pb_night_range(8, held);

-- ---------------------------------------------------------------------------------------

-- Appends one CalendarChanged to the WatchEvents log and the outbox (same id, same
-- bytes), as event-log.ts eventWrites does: subject = the message's full name, headers
-- = the caller's trace context plus workspace_id.
create function append_calendar_changed(
  p_at timestamptz, p_headers jsonb, p_workspace_id text, p_listing_id text, p_kind int,
  p_holder_kind int, p_holder_id text, p_released daterange, p_held daterange
) returns void
language plpgsql volatile as $$
declare
  v_id uuid := gen_random_uuid();
  v_data bytea := calendar.calendar_changed_pb(v_id, p_at, p_workspace_id, p_listing_id, p_kind,
                                               p_holder_kind, p_holder_id, p_released, p_held);
begin
  insert into calendar.events (id, workspace_id, listing_id, type, data)
  values (v_id, p_workspace_id, p_listing_id, 'calendar_changed', v_data);
  insert into calendar.outbox (id, subject, data, headers)
  values (v_id, 'psync.calendar.v1.CalendarChanged', v_data,
          coalesce(p_headers, '{}'::jsonb) || jsonb_build_object('workspace_id', p_workspace_id));
end $$;

-- Expires the listing's live holds whose expires_at <= p_now (default: the clock now):
-- status `expired`, ended_at = expires_at, claim deleted, one HOLD_EXPIRED event each
-- (occurred_at p_at). Call under the listing's lock. Returns how many expired.
create function expire_holds(p_listing_id text, p_at timestamptz, p_headers jsonb, p_now timestamptz default null)
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
      6 /* HOLD_EXPIRED */, 2 /* HOLD */, h.hold_id::text, daterange(h.check_in, h.check_out), null);
    n := n + 1;
  end loop;
  return n;
end $$;

-- Every night of [p_check_in, p_check_out) on the listing already held by a holder
-- (marketplace holders only, or all), ascending, distinct, "YYYY-MM-DD". Claims of the
-- holds named in p_overdue_holds are left out (put_block scans before it expires them).
-- One query per scope, each with its side condition written out: a cached generic plan
-- then still uses the right GiST index of the exclusion constraints (marketplace only:
-- the partial one, so a listing full of partner blocks costs nothing to scan).
create function night_conflicts(
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

-- What put_block answers. outcome: `created`, `updated` (moved, or only the reason
-- changed), `unchanged` (identical push: nothing written), `conflict` (`conflicts`
-- lists every colliding night; nothing at all written). `events`: events written
-- (hold expiries included). The block as stored (absent on a conflict).
create type put_block_result as (
  outcome      text,
  conflicts    text[],
  events       integer,
  id           bigint,
  external_uid text,
  listing_id   text,
  check_in     text,
  check_out    text,
  reason       text,
  nights       integer,
  created_at   timestamptz,
  updated_at   timestamptz
);

-- PutBlock's state table (services/calendar/blocks.ts), in one call:
--   1. the listing's lock;
--   2. the block row (for update) and the conflict scan against marketplace holders,
--      leaving out holds already past expires_at;
--   3. a collision → `conflict` with every colliding night, and nothing written — not
--      even the expiry of overdue holds (the old multi-statement push rolled it back);
--   4. overdue holds expire (HOLD_EXPIRED events), then: absent → insert block, claim
--      and BLOCK_CREATED; same listing, dates and reason → nothing; otherwise the block
--      and its claim row are updated (old nights released and new held in one step),
--      with BLOCK_MOVED when the nights changed (one event per listing when it moved
--      to another listing).
-- The exclusion constraints stay the last line of defence: a 23P01 or 23505 raised
-- here aborts the call and the service handles it as before (claims.ts).
create function put_block(
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
      1 /* BLOCK_CREATED */, 1 /* BLOCK */, p_external_uid, null, v_held);
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
        2 /* BLOCK_MOVED */, 1 /* BLOCK */, p_external_uid, v_released, v_held);
      r.events := r.events + 1;
    elsif v_from_listing <> p_listing_id then
      -- Moved to another listing: each listing hears about its own nights.
      perform calendar.append_calendar_changed(p_at, p_headers, p_workspace_id, v_from_listing,
        2 /* BLOCK_MOVED */, 1 /* BLOCK */, p_external_uid, v_released, null);
      perform calendar.append_calendar_changed(p_at, p_headers, p_workspace_id, p_listing_id,
        2 /* BLOCK_MOVED */, 1 /* BLOCK */, p_external_uid, null, v_held);
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
