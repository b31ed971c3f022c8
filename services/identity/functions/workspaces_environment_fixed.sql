-- version: 1
-- The trigger function of workspaces_environment_fixed
-- (services/identity/migrations/0001_identity.sql).

-- There is no update path for the environment in code; the database refuses one too,
-- so a hand-written UPDATE cannot turn a sandbox into production.
create or replace function workspaces_environment_fixed() returns trigger
language plpgsql as $$
begin
  if new.environment is distinct from old.environment then
    raise exception 'the environment of workspace % is fixed for ever', old.workspace_id
      using errcode = '55000'; -- object_not_in_prerequisite_state
  end if;
  return new;
end
$$;
