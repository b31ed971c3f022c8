/**
 * The consumer side of exactly-once effects over an at-least-once bus.
 *
 * `processOnce` records `(consumer, event_id)` in `<schema>.processed_events` in the
 * same transaction as the handler's own writes: a redelivered event finds its mark and
 * is skipped, and a handler that fails rolls its mark back with its writes, so the
 * redelivery runs it again.
 *
 * Table (created by the kit migrations in every service schema):
 *   processed_events(consumer text, event_id uuid, processed_at, primary key (consumer, event_id))
 */
import type { Sql, Tx } from './database';
import { assertSchemaName } from './outbox';

/**
 * Runs `fn` once per `(consumer, eventId)`: resolves `true` if it ran now, `false` if
 * the event had already been processed. `fn` gets the transaction; write through it.
 * Concurrent deliveries of the same event serialise on the primary key.
 */
export async function processOnce(
  sql: Sql,
  schema: string,
  consumer: string,
  eventId: string,
  fn: (tx: Tx) => Promise<void>,
): Promise<boolean> {
  assertSchemaName(schema);
  const ran = await sql.begin(async (tx) => {
    const inserted = await tx`
      insert into ${tx(`${schema}.processed_events`)} (consumer, event_id)
      values (${consumer}, ${eventId})
      on conflict do nothing
      returning event_id
    `;
    if (inserted.length === 0) return false;
    await fn(tx);
    return true;
  });
  return ran as boolean;
}
