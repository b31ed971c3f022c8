/**
 * The transactional outbox: how events leave a service.
 *
 * A service writes its state change and the event row in ONE transaction
 * (`appendToOutbox(tx, …)`), so an event exists exactly when its change committed.
 * `OutboxRelay` then copies unpublished rows to the bus in `seq` order, with the event
 * id as JetStream `msgID`: a relay killed after publishing but before marking rows
 * published re-publishes them on restart and JetStream drops the copies inside its
 * duplicate window (consumers dedupe beyond it, on processed_events). Nothing is lost or skipped:
 * a failed publish leaves the row unpublished and the relay retries it.
 *
 * Table (created by the kit migrations in every service schema):
 *   outbox(seq bigserial pk, id uuid unique, subject, data bytea, headers jsonb,
 *          created_at, published_at)
 */
import { randomUUID } from 'node:crypto';
import type { EventBus } from './bus';
import type { Sql, Tx } from './database';
import type { Logger } from './logger';
import { registerOutboxLag } from './metrics';
import { currentTraceHeaders } from './telemetry';

const SCHEMA_PATTERN = /^[a-z][a-z0-9_]*$/;
/** Published rows are kept this long (for investigations), then deleted. */
const RETENTION_DAYS = 7;
/**
 * Consumers' dedupe marks (processed_events) are kept this long. It must
 * exceed RETENTION_DAYS: after an unclean run of the in-process bus every retained
 * outbox row is published again (bus-continuity.ts) and its mark must still be there.
 * On NATS a redelivery comes within minutes (ack wait); a consumer stuck for a month
 * would handle an event twice.
 */
export const PROCESSED_RETENTION_DAYS = 30;
const HOUSEKEEPING_EVERY_MS = 10 * 60 * 1000;
const HOUSEKEEPING_DELETE_LIMIT = 10_000;
const MAX_BACKOFF_MS = 10_000;

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
 */
export async function appendToOutbox(tx: Tx | Sql, schema: string, event: OutboxEvent): Promise<string> {
  assertSchemaName(schema);
  const q = tx as Sql;
  const id = event.id ?? randomUUID();
  const data = Buffer.from(event.data.buffer, event.data.byteOffset, event.data.byteLength);
  // The active trace context (`traceparent`) travels with the event, so its consumers continue the trace.
  const headers = { ...currentTraceHeaders(), ...(event.headers ?? {}) };
  await q`
    insert into ${q(`${schema}.outbox`)} (id, subject, data, headers)
    values (${id}, ${event.subject}, ${data}, ${q.json(headers)})
  `;
  return id;
}

export interface OutboxRelayOptions {
  sql: Sql;
  schema: string;
  bus: EventBus;
  log: Logger;
  /** Rows per transaction; default 100. */
  batchSize?: number;
  /** Idle poll interval when nobody nudges; default 250 ms. */
  pollMs?: number;
}

interface OutboxRow {
  id: string;
  subject: string;
  data: Buffer;
  headers: Record<string, string> | null;
}

/**
 * Copies committed outbox rows to the bus, in order, at least once.
 *
 * Every batch runs in one transaction: a transaction-scoped advisory lock lets one
 * relay per schema work at a time (so replicas keep `seq` order on the bus), rows are
 * taken `for update skip locked` (so even without the lock no two replicas publish the
 * same row concurrently), published one by one, and marked `published_at` before commit.
 */
export class OutboxRelay {
  private readonly sql: Sql;
  private readonly schema: string;
  private readonly bus: EventBus;
  private readonly log: Logger;
  private readonly batchSize: number;
  private readonly pollMs: number;
  private running = false;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private nudged = false;
  private lastHousekeeping = 0;
  private unregisterLag: (() => void) | null = null;

  constructor(opts: OutboxRelayOptions) {
    assertSchemaName(opts.schema);
    this.sql = opts.sql;
    this.schema = opts.schema;
    this.bus = opts.bus;
    this.log = opts.log;
    this.batchSize = opts.batchSize ?? 100;
    this.pollMs = opts.pollMs ?? 250;
    if (!Number.isInteger(this.batchSize) || this.batchSize < 1) throw new Error('OutboxRelay: batchSize must be a positive integer');
  }

  /** Starts relaying in the background; calling it again is harmless. */
  start(): void {
    if (this.running) return;
    this.running = true;
    // psync_outbox_lag_seconds / psync_outbox_pending{schema}, read at scrape time.
    this.unregisterLag = registerOutboxLag(this.schema, () => this.lag());
    // The first clean-up runs a minute after start, not during start-up.
    this.lastHousekeeping = Date.now() - HOUSEKEEPING_EVERY_MS + 60_000;
    this.loop = this.run();
  }

  /** Wakes the relay now (call after committing a transaction that appended events). */
  nudge(): void {
    this.nudged = true;
    this.wakeUp?.();
  }

  /** Finishes the batch in progress and stops. */
  async stop(): Promise<void> {
    this.running = false;
    this.unregisterLag?.();
    this.unregisterLag = null;
    this.wakeUp?.();
    await this.loop;
    this.loop = null;
  }

  /** Unpublished rows and the age of the oldest one, for metrics and readiness. */
  async lag(): Promise<{ pending: number; oldestAgeSeconds: number }> {
    const [row] = await this.sql<{ pending: number; oldest: number }[]>`
      select count(*)::int as pending,
             coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as oldest
      from ${this.sql(this.table)}
      where published_at is null
    `;
    return { pending: row?.pending ?? 0, oldestAgeSeconds: Math.max(0, row?.oldest ?? 0) };
  }

  /**
   * Publishes one batch; resolves with the number of rows published. Exposed for tests
   * and for a final flush; the background loop calls it repeatedly.
   */
  async relayOnce(): Promise<number> {
    let published = 0;
    let failure: unknown = null;
    await this.sql.begin(async (tx) => {
      const [lock] = await tx<{ ok: boolean }[]>`select pg_try_advisory_xact_lock(hashtext(${this.table})) as ok`;
      if (!lock?.ok) return; // another replica is relaying this schema right now
      const rows = await tx<OutboxRow[]>`
        select id, subject, data, headers
        from ${tx(this.table)}
        where published_at is null
        order by seq
        limit ${this.batchSize}
        for update skip locked
      `;
      const done: string[] = [];
      for (const row of rows) {
        try {
          await this.bus.publish({ id: row.id, subject: row.subject, data: row.data, headers: outboxHeaders(row.headers) });
        } catch (err) {
          // Keep what went out; stop at the first failure so nothing overtakes it.
          failure = err;
          break;
        }
        done.push(row.id);
      }
      if (done.length > 0) {
        await tx`update ${tx(this.table)} set published_at = now() where id in ${tx(done)}`;
      }
      published = done.length;
    });
    if (failure) throw failure;
    return published;
  }

  private get table(): string {
    return `${this.schema}.outbox`;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      this.nudged = false;
      let published = 0;
      try {
        published = await this.relayOnce();
        failures = 0;
      } catch (err) {
        failures++;
        const backoff = Math.min(MAX_BACKOFF_MS, this.pollMs * 2 ** Math.min(failures, 8));
        this.log.error({ err, schema: this.schema, retry_in_ms: backoff }, 'outbox: publish failed; rows stay unpublished and will be retried');
        await this.sleep(backoff, false);
        continue;
      }
      await this.housekeeping();
      // A full batch means more may be waiting: go again at once.
      if (published < this.batchSize && !this.nudged) await this.sleep(this.pollMs, true);
    }
  }

  /**
   * Marks every retained published row unpublished again, so the relay publishes it
   * once more; returns how many. For the in-process bus after a run that ended with
   * events still unhandled (its log was in memory): consumers dedupe on the event id
   * (processed_events), so what they had handled is skipped. Never used with NATS, whose
   * stream keeps what it acknowledged.
   */
  async requeuePublished(): Promise<number> {
    const result = await this.sql`update ${this.sql(this.table)} set published_at = null where published_at is not null`;
    return result.count;
  }

  /** Deletes up to 10,000 rows published more than RETENTION_DAYS ago; returns how many. */
  async prune(): Promise<number> {
    const deleted = await this.sql`
      delete from ${this.sql(this.table)}
      where seq in (
        select seq from ${this.sql(this.table)}
        where published_at < now() - make_interval(days => ${RETENTION_DAYS})
        order by seq
        limit ${HOUSEKEEPING_DELETE_LIMIT}
      )
    `;
    return deleted.count;
  }

  /** Deletes up to 10,000 dedupe marks older than PROCESSED_RETENTION_DAYS from this schema's processed_events; returns how many. */
  async pruneProcessed(): Promise<number> {
    const table = this.sql(`${this.schema}.processed_events`);
    const deleted = await this.sql`
      delete from ${table}
      where (consumer, event_id) in (
        select consumer, event_id from ${table}
        where processed_at < now() - make_interval(days => ${PROCESSED_RETENTION_DAYS})
        order by processed_at
        limit ${HOUSEKEEPING_DELETE_LIMIT}
      )
    `;
    return deleted.count;
  }

  /** Runs prune() and pruneProcessed() now and then from the loop; a failure only costs a log line. */
  private async housekeeping(): Promise<void> {
    if (Date.now() - this.lastHousekeeping < HOUSEKEEPING_EVERY_MS) return;
    this.lastHousekeeping = Date.now();
    try {
      const deleted = await this.prune();
      if (deleted > 0) this.log.info({ schema: this.schema, deleted }, 'outbox: old published rows deleted');
      const marks = await this.pruneProcessed();
      if (marks > 0) this.log.info({ schema: this.schema, deleted: marks }, 'inbox: old dedupe marks deleted');
    } catch (err) {
      this.log.warn({ err, schema: this.schema }, 'outbox: housekeeping failed');
    }
  }

  private sleep(ms: number, wakeOnNudge: boolean): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      // stop() always wakes; a nudge only ends an idle wait, not a failure back-off.
      this.wakeUp = wakeOnNudge ? done : () => (this.running ? undefined : done());
    });
  }
}

/**
 * The headers of an outbox row as a flat string map. Rows written with a JSON text
 * instead of an object hold a jsonb string scalar: parsed here, so their trace context
 * still travels (anything else unusable is dropped, never spread character by character).
 */
function outboxHeaders(h: unknown): Record<string, string> {
  let v = h;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return {};
    }
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return {};
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x;
  return out;
}
