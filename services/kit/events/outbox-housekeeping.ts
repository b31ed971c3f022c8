/**
 * The transactional outbox, housekeeping: what keeps a schema's outbox and its
 * consumers' dedupe marks from growing for ever, and the re-queue the in-process bus
 * needs after an unclean run (bus-continuity.ts).
 *
 * A minute after start (not during start-up) and then every 10 minutes, batch after
 * batch until a batch comes back short: published outbox rows older than
 * RETENTION_DAYS and `processed_events` marks older than PROCESSED_RETENTION_DAYS are
 * deleted. A failure only costs a log line.
 */
import type { Sql } from '../db';
import type { Logger } from '../base';
import { assertSchemaName } from './outbox-writer';
import { BatchPruner } from '../work';

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

export interface OutboxHousekeepingOptions {
  sql: Sql;
  schema: string;
  log: Logger;
}

export class OutboxHousekeeping {
  private readonly sql: Sql;
  private readonly schema: string;
  private readonly pruners: BatchPruner[];

  constructor(opts: OutboxHousekeepingOptions) {
    assertSchemaName(opts.schema);
    this.sql = opts.sql;
    this.schema = opts.schema;
    const log = opts.log;
    const onError = (err: unknown) => log.warn({ err, schema: this.schema }, 'outbox: housekeeping failed');
    this.pruners = [
      new BatchPruner({
        pruneOnce: () => this.prune(),
        batch: HOUSEKEEPING_DELETE_LIMIT,
        everyMs: HOUSEKEEPING_EVERY_MS,
        firstDelayMs: 60_000,
        name: `${this.schema}-outbox-prune`,
        onPruned: (deleted) => log.info({ schema: this.schema, deleted }, 'outbox: old published rows deleted'),
        onError,
      }),
      new BatchPruner({
        pruneOnce: () => this.pruneProcessed(),
        batch: HOUSEKEEPING_DELETE_LIMIT,
        everyMs: HOUSEKEEPING_EVERY_MS,
        firstDelayMs: 60_000,
        name: `${this.schema}-inbox-prune`,
        onPruned: (deleted) => log.info({ schema: this.schema, deleted }, 'inbox: old dedupe marks deleted'),
        onError,
      }),
    ];
  }

  /** Starts the periodic deletions; calling it again is harmless. */
  start(): void {
    for (const p of this.pruners) p.start();
  }

  /** Finishes a deletion in progress and stops. */
  async stop(): Promise<void> {
    await Promise.all(this.pruners.map((p) => p.stop()));
  }

  private get table(): string {
    return `${this.schema}.outbox`;
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
}
