-- Marketplace callers of the internal API (IssueClient, RevokeClient, ListClients,
-- AuthenticateClient; docs/operator-cli.md "client issue").
--
-- A client's credential is `psmc_<client_id>_<secret>`. Only the SHA-256 of the whole
-- token's UTF-8 bytes is kept: the very hash a service computes from what it received
-- and hands to AuthenticateClient, looked up through the unique index.
create table internal_clients (
  client_id text primary key check (client_id ~ '^[a-z2-7]{16}$'),
  name text not null check (char_length(name) between 1 and 200),
  role text not null default 'marketplace' check (role in ('marketplace')),
  token_sha256 bytea not null unique check (octet_length(token_sha256) = 32),
  created_at timestamptz not null default now(),
  -- Set once; services refuse the credential within their verification cache's lifetime.
  revoked_at timestamptz
);

-- ListClients: newest first.
create index internal_clients_created_at on internal_clients (created_at desc, client_id desc);
