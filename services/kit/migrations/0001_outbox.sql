-- Transactional outbox (architecture.md): events are written here in the same
-- transaction as the change that causes them, then relayed to the bus in seq order
-- with `id` as the JetStream msgID. published_at stays null until the relay is done.
create table outbox (
  seq          bigserial primary key,
  id           uuid not null unique,
  subject      text not null,
  data         bytea not null,
  headers      jsonb not null default '{}',
  created_at   timestamptz not null default now(),
  published_at timestamptz
);

-- The relay only ever scans unpublished rows.
create index outbox_unpublished_idx on outbox (seq) where published_at is null;
