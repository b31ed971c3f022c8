-- version: 1
-- The one function that writes outbox rows (docs/calendar.md "Events: plain rows,
-- encoded once"): from TypeScript (outbox-writer.ts appendToOutbox) and from a
-- service's SQL functions alike. A function in SQL, not TypeScript, because writers
-- that do their whole work in one statement (calendar.put_block) cannot call back into
-- TypeScript. PL/pgSQL, so each session plans its insert once (a SQL-language function
-- was measurably slower per event). The kit's files are applied into every service's
-- schema, and PL/pgSQL resolves names when it runs, so the body names the schema it is
-- created in (current_schema(): migrate.ts sets search_path to the service's schema).
do $$
begin
  execute format($create$
    create or replace function append_outbox(p_id uuid, p_subject text, p_data bytea, p_body jsonb, p_headers jsonb)
    returns void
    language plpgsql volatile as $body$
    begin
      insert into %I.outbox (id, subject, data, body, headers)
      values (p_id, p_subject, p_data, p_body, coalesce(p_headers, '{}'::jsonb));
    end $body$
  $create$, current_schema());
end $$;
