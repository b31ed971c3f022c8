/**
 * A consumer's dedupe marks (the kit's `processed_events` table in the consumer's
 * schema): delivery on the bus is at-least-once, so a consumer marks each event it
 * handles in the same transaction (or the same statement) as the effect, and handles
 * only the events the mark was new for. A redelivered event hits the primary key
 * (consumer, event_id) and is skipped. The marks are pruned after
 * PROCESSED_RETENTION_DAYS (outbox-housekeeping.ts).
 */
import type { PendingQuery } from 'postgres';
import type { Sql, Tx } from '../db';
import { assertSchemaName } from './outbox-writer';

/**
 * The statement marking `eventIds` processed by `consumer` in `schema`: it answers the
 * `event_id` of each event marked now, none of those marked before. Await it, or use it
 * as a data-modifying CTE so that the effect reads the fresh ids in the same statement.
 */
export function markProcessed(sql: Sql | Tx, schema: string, consumer: string, eventIds: readonly string[]): PendingQuery<{ event_id: string }[]> {
  assertSchemaName(schema);
  return sql<{ event_id: string }[]>`
    insert into ${sql(`${schema}.processed_events`)} (consumer, event_id)
    select ${consumer}, unnest(${sql.array([...eventIds])}::uuid[])
    on conflict do nothing
    returning event_id`;
}
