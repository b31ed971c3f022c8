-- Dedupe marks are kept PROCESSED_RETENTION_DAYS (outbox.ts) and then deleted by the
-- relay's housekeeping, oldest first: this index serves that delete.
create index processed_events_age_idx on processed_events (processed_at);
