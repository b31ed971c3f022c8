-- Outbox rows in two forms, and the one function that writes them (docs/calendar.md
-- "Events: plain rows, encoded once").
--
-- A row carries its message either encoded, `data` (the protobuf bytes the service
-- built), or as plain fields, `body` (jsonb), which the service's encoder turns into
-- the message when the relay publishes the row (OutboxRelayOptions.encode in
-- services/kit/outbox.ts). The plain form lets a service's SQL functions write events
-- without knowing the wire format: the encoding stays in one TypeScript module. For a
-- plain row, `subject` is the event's type as that encoder knows it; the encoder
-- answers the bus subject.
alter table outbox alter column data drop not null;
alter table outbox add column body jsonb;
alter table outbox add constraint outbox_one_form check ((data is null) <> (body is null));

-- Every outbox row is written by this function: from TypeScript (appendToOutbox) and
-- from a service's SQL functions alike. A function in SQL, not TypeScript, because
-- writers that do their whole work in one statement (calendar.put_block) cannot call
-- back into TypeScript. PL/pgSQL, so each session plans its insert once (a SQL-language
-- function was measurably slower per event); PL/pgSQL resolves names when it runs, so
-- the body names this schema's table, written in when this migration creates it.
do $$
begin
  execute format($create$
    create function append_outbox(p_id uuid, p_subject text, p_data bytea, p_body jsonb, p_headers jsonb)
    returns void
    language plpgsql volatile as $body$
    begin
      insert into %I.outbox (id, subject, data, body, headers)
      values (p_id, p_subject, p_data, p_body, coalesce(p_headers, '{}'::jsonb));
    end $body$
  $create$, current_schema());
end $$;
