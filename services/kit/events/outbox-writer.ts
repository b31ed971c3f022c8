/**
 * The transactional outbox, writing side: how an event enters it.
 *
 * A service writes its state change and the event row in ONE transaction
 * (`appendToOutbox(tx, …)`), so an event exists exactly when its change committed;
 * outbox-relay.ts copies committed rows to the bus, outbox-housekeeping.ts deletes old
 * ones.
 *
 * Table (created by the kit migrations in every service schema):
 *   outbox(seq bigserial pk, id uuid unique, subject, data bytea, body jsonb,
 *          headers jsonb, created_at, published_at)
 * A row holds its message encoded (`data`) or as plain fields (`body`, which the
 * service's `encode` hook turns into the message when the row is published). Every row
 * is written by the SQL function `<schema>.append_outbox` (kit migration 0004).
 */
import { randomUUID } from 'node:crypto';
import type { Sql, Tx } from '../db';
import { currentTraceHeaders } from '../telemetry';

const SCHEMA_PATTERN = /^[a-z][a-z0-9_]*$/;

/** Throws unless `schema` is a plain lower-case identifier. */
export function assertSchemaName(schema: string): void {
  if (!SCHEMA_PATTERN.test(schema)) throw new Error(`invalid schema name "${schema}" (want ${SCHEMA_PATTERN})`);
}

/** An event to append; `id` defaults to a new random uuid. */
export interface OutboxEvent {
  id?: string;
  subject: string;
  data: Uint8Array;
  headers?: Record<string, string>;
}

/**
 * Appends one event to `<schema>.outbox` inside the caller's transaction, so the state
 * change and its event commit (or roll back) together. Returns the event id.
 * Through `<schema>.append_outbox`, the one writer of outbox rows, which SQL functions
 * that write events inside a statement call as well.
 */
export async function appendToOutbox(tx: Tx | Sql, schema: string, event: OutboxEvent): Promise<string> {
  assertSchemaName(schema);
  const q = tx as Sql;
  const id = event.id ?? randomUUID();
  const data = Buffer.from(event.data.buffer, event.data.byteOffset, event.data.byteLength);
  // The active trace context (`traceparent`) travels with the event, so its consumers continue the trace.
  const headers = { ...currentTraceHeaders(), ...(event.headers ?? {}) };
  await q`select ${q(schema)}.append_outbox(${id}::uuid, ${event.subject}, ${data}::bytea, null, ${q.json(headers)})`;
  return id;
}
