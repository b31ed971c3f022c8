/**
 * The transactional outbox, relaying side: how events leave a service.
 *
 * Rows written with the state change (outbox-writer.ts) are copied to the bus by
 * `OutboxRelay` in `seq` order, with the event id as JetStream `msgID`: a relay killed
 * after publishing but before marking rows published re-publishes them on restart and
 * JetStream drops the copies inside its duplicate window (consumers dedupe beyond it, on
 * processed_events). Nothing is lost or skipped: a failed publish leaves the row
 * unpublished and the relay retries it. Old rows are deleted by outbox-housekeeping.ts.
 */
import type { EventBus } from './bus';
import { connectionLost, connectionsClosed, type Sql } from '../db';
import { logEvent, type Logger } from '../base';
import { registerOutboxLag } from '../telemetry';
import { errorType, recordMessageSent } from '../telemetry';
import { OrderKeys, defaultOrderKey } from './outbox-order';
import { assertSchemaName } from './outbox-writer';
import { lockRows, Worker } from '../work';

const MAX_BACKOFF_MS = 10_000;
/** Idle poll: how often a relay nobody nudges looks for rows. */
const DEFAULT_POLL_MS = 1000;
/** How soon a relay that found the schema's lock held by another relay tries again. */
const LOCK_RETRY_MS = 50;

/** An outbox row as the relay reads it: `data` (encoded) or `body` (plain fields) is set. */
export interface OutboxRow {
  id: string;
  subject: string;
  data: Buffer | null;
  body: unknown;
  headers: Record<string, string>;
}

/** What the relay publishes for a row (the event id is the row's). */
export interface OutboxMessage {
  subject: string;
  data: Uint8Array;
  headers: Record<string, string>;
  /**
   * The aggregate whose events must reach the bus in commit order, outermost first
   * (e.g. [workspace, listing]); default defaultOrderKey(headers). See OutboxRelay.
   */
  orderKey?: readonly string[];
}

/** Turns an outbox row into the message to publish; throwing counts as a failed publish (the row is retried). */
export type OutboxEncoder = (row: OutboxRow) => OutboxMessage;

/** Without a service's encoder: encoded rows go out as stored; a plain row cannot. */
export function publishAsStored(row: OutboxRow): OutboxMessage {
  if (row.data === null) throw new Error(`outbox row ${row.id} holds plain fields and this relay has no encoder`);
  return { subject: row.subject, data: row.data, headers: row.headers };
}

export interface OutboxRelayOptions {
  sql: Sql;
  schema: string;
  bus: EventBus;
  log: Logger;
  /** Rows per transaction (all of them may be in flight at once); default 500. */
  batchSize?: number;
  /** Idle poll interval when nobody nudges; default 1 s (see OutboxRelay). */
  pollMs?: number;
  /** The service's encoder of its rows (ServiceModule.outboxEncoder); default publishAsStored. */
  encode?: OutboxEncoder;
}

/**
 * Copies committed outbox rows to the bus, at least once, many publishes in flight,
 * keeping commit order per aggregate.
 *
 * Every batch runs in one transaction: a transaction-scoped advisory lock lets one
 * relay per schema work at a time (taken in the same statement that selects the rows),
 * rows are taken in `seq` order and locked, passing over rows another transaction holds
 * (`lockRows` of kit/work: so even without the advisory lock no two replicas publish the
 * same row concurrently), published, and the ones the bus
 * acknowledged are marked `published_at` before commit.
 *
 * Publishing is pipelined: rows are handed to the bus in `seq` order without waiting
 * for each acknowledgement (NATS keeps the order of one connection, so the bus sees
 * commit order), up to the whole batch in flight. What may never happen is a later
 * event of an aggregate reaching the bus while an earlier one of the same aggregate
 * did not (a failed publish, retried in a later batch). So a row is not handed over
 * while an earlier row of its aggregate is still unacknowledged (orderKey: rows whose
 * keys are equal, or one a prefix of the other, are of one aggregate; `[]` — rows
 * without a key — is the whole schema), and sending stops at that row: rows behind it
 * wait too, so commit order holds across aggregates as well while nothing fails. After
 * a failure nothing more is handed over; what was acknowledged is marked published,
 * the failed row and everything after it not yet sent stay for the next batch.
 *
 * A batch costs two round trips to PostgreSQL (each costs Node CPU, more than the
 * statements' own work at a low rate): it runs on a reserved connection and sends
 * `begin` with the claim, then the `update` marking the acknowledged rows with `commit`,
 * each pair issued in one tick without waiting in between (postgres.js writes them to
 * the socket together). A claim that finds nothing is committed at once, a second
 * round trip: its transaction and the advisory lock must end before the relay waits,
 * and `commit` cannot travel with the claim, since a claim that finds rows must keep
 * its transaction open while they are published. On an error the transaction is
 * rolled back and the connection released, unless the connection itself is gone
 * (connectionLost in database.ts).
 *
 * When it runs: a commit in this process nudges its relay (`nudge()`), which claims at
 * once. The idle poll (`pollMs`, 1 s) only finds rows committed by other processes or
 * replicas, or left by a failed batch; so a poll first asks, in one statement outside
 * any transaction, whether any row is unpublished (one round trip), and claims only if
 * one is. The claim says whether it got the schema's lock: a relay that did not (another
 * replica is relaying) tries again after 50 ms until it does, since the rows its
 * process committed and nudged it for would otherwise wait for the idle poll (the other
 * replica is not nudged by them). A full batch, a failed one and a lock held elsewhere
 * make the next round claim without asking first.
 */
export class OutboxRelay {
  private readonly sql: Sql;
  private readonly schema: string;
  private readonly bus: EventBus;
  private readonly log: Logger;
  private readonly batchSize: number;
  private readonly encode: OutboxEncoder;
  private readonly worker: Worker;
  private unregisterLag: (() => void) | null = null;
  /** The nudge of a relay waiting for another relay's lock (LOCK_RETRY_MS). */
  private lockRetry: NodeJS.Timeout | null = null;

  constructor(opts: OutboxRelayOptions) {
    assertSchemaName(opts.schema);
    this.sql = opts.sql;
    this.schema = opts.schema;
    this.bus = opts.bus;
    this.log = opts.log;
    this.batchSize = opts.batchSize ?? 500;
    this.encode = opts.encode ?? publishAsStored;
    if (!Number.isInteger(this.batchSize) || this.batchSize < 1) throw new Error('OutboxRelay: batchSize must be a positive integer');
    const pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
    this.worker = new Worker({
      name: `${this.schema}-outbox`,
      idleMs: pollMs,
      // After a failed batch: twice the poll, at most 500 ms, then doubling up to 10 s.
      backoff: { baseMs: Math.max(50, Math.min(500, pollMs * 2)), maxMs: MAX_BACKOFF_MS },
      round: () => this.round(),
      // An idle poll claims only if a row is unpublished (one statement, no transaction).
      idleCheck: () => this.anyUnpublished(),
      onError: (err, retryInMs) =>
        this.log.error(
          { event: logEvent('outbox.publish.failed'), err, schema: this.schema, retry_in_ms: retryInMs },
          'outbox: publish failed; rows stay unpublished and will be retried',
        ),
    });
  }

  /** Starts relaying in the background; calling it again is harmless. */
  start(): void {
    if (this.unregisterLag) return;
    // psync_outbox_lag_seconds / psync_outbox_pending{schema}, read at scrape time.
    this.unregisterLag = registerOutboxLag(this.schema, () => this.lag());
    this.worker.start();
  }

  /** Wakes the relay now (call after committing a transaction that appended events). */
  nudge(): void {
    this.worker.nudge();
  }

  /** Finishes the batch in progress and stops. */
  async stop(): Promise<void> {
    this.unregisterLag?.();
    this.unregisterLag = null;
    if (this.lockRetry) clearTimeout(this.lockRetry);
    this.lockRetry = null;
    await this.worker.stop();
  }

  /** One round of the background loop (see the class comment for when it claims). */
  private async round(): Promise<{ items: number; more: boolean }> {
    const batch = await this.relayBatch();
    if (batch.lockHeldElsewhere) {
      // A nudge, not the idle poll: the rows this process committed are waiting.
      this.lockRetry ??= setTimeout(() => {
        this.lockRetry = null;
        this.nudge();
      }, LOCK_RETRY_MS).unref();
      return { items: 0, more: false };
    }
    // A full batch means more may be waiting: go again at once.
    return { items: batch.published, more: batch.published >= this.batchSize };
  }

  /** Whether any row is unpublished: one statement, no transaction, no lock. */
  private async anyUnpublished(): Promise<boolean> {
    const [row] = await this.sql<{ pending: boolean }[]>`select exists (select from ${this.sql(this.table)} where published_at is null) as pending`;
    return row?.pending === true;
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
   * Publishes one batch; resolves with the number of rows published, or rejects with
   * the first publish failure (after marking what was acknowledged). Exposed for tests
   * and for a final flush; the background loop calls it repeatedly.
   */
  async relayOnce(): Promise<number> {
    return (await this.relayBatch()).published;
  }

  /** One batch in two round trips (class comment); rejects like relayOnce. */
  private async relayBatch(): Promise<Batch> {
    const conn = await this.sql.reserve();
    const closedBefore = connectionsClosed(this.sql);
    let inTransaction = false; // roll back on the way out
    let lost = false; // the connection is gone: postgres.js has put it back in the pool itself
    const settled = <T extends readonly unknown[]>(queries: T) =>
      settleTogether(queries, () => {
        lost = true;
      });
    try {
      inTransaction = true;
      // One row with `locked` and null columns when nothing was claimed (or the lock is
      // another relay's: it is relaying this schema right now).
      const [, claimed] = await settled([
        conn`begin`.execute(),
        conn<(Omit<ClaimedRow, 'id'> & { id: string | null })[]>`
          with l as materialized (select pg_try_advisory_xact_lock(hashtext(${this.table})) as ok)
          select l.ok as locked, o.id, o.subject, o.data, o.body, o.headers
          from l left join lateral (${lockRows(conn, {
            columns: conn`o.seq, o.id, o.subject, o.data, o.body, o.headers`,
            from: conn`${conn(this.table)} o`,
            of: 'o',
            where: conn`l.ok and o.published_at is null`,
            orderBy: conn`o.seq`,
            limit: this.batchSize,
          })}) o on true
          order by o.seq
        `.execute(),
      ] as const);
      const rows = claimed.filter((r): r is ClaimedRow => r.id !== null);
      if (rows.length === 0) {
        inTransaction = false;
        await settled([conn`commit`.execute()] as const);
        return { published: 0, lockHeldElsewhere: claimed[0]?.locked !== true };
      }
      const result = await this.publishAll(rows);
      const closedNow = connectionsClosed(this.sql);
      if (closedNow === undefined || closedNow !== closedBefore) {
        // A connection of the pool closed while the rows were published, perhaps this
        // one. postgres.js would park a closed reserved connection as busy for good if
        // it were sent a statement that waits for the server before the next one (a
        // first run, described first, or one of 1 KiB or more: the update); a lone
        // `select 1` cannot, and fails if the connection is gone.
        await settled([conn`select 1`.execute()] as const);
      }
      // `commit` ends the transaction whatever happens to the update (after a failed
      // statement PostgreSQL answers it with ROLLBACK).
      inTransaction = false;
      const [, committed] = await settled([
        result.done.length > 0
          ? // One array parameter, however many rows: cheaper to bind than a parameter per id.
            conn`update ${conn(this.table)} set published_at = now() where id = any(${conn.array(result.done)}::uuid[])`.execute()
          : Promise.resolve(null),
        conn`commit`.execute(),
      ] as const);
      if (committed.command !== 'COMMIT') throw new Error(`outbox: the batch of ${this.schema} was rolled back (${committed.command})`);
      if (result.failure) throw result.failure instanceof Error ? result.failure : new Error(String(result.failure));
      return { published: result.done.length, lockHeldElsewhere: false };
    } catch (err) {
      if (inTransaction && !lost) {
        await conn`rollback`.catch((e: unknown) => {
          if (connectionLost(e)) lost = true;
        });
      }
      throw err;
    } finally {
      if (!lost) conn.release();
    }
  }

  /**
   * Hands `rows` to the bus in order, many in flight, never two of one aggregate at once
   * (see the class comment); stops handing over at the first failure. Resolves when
   * nothing is in flight any more, with the ids acknowledged and the first failure.
   */
  private publishAll(rows: ClaimedRow[]): Promise<{ done: string[]; failure: unknown }> {
    const done: string[] = [];
    let failure: unknown = null;
    let failed = false;
    let next = 0;
    let inFlight = 0;
    const busy = new OrderKeys();
    // Encoded once: a row held back by its aggregate is looked at again after each acknowledgement.
    let message: OutboxMessage | null = null;
    return new Promise((resolve) => {
      const pump = () => {
        while (!failed && next < rows.length) {
          const row = rows[next]!;
          try {
            message ??= this.encode({ id: row.id, subject: row.subject, data: row.data, body: row.body, headers: outboxHeaders(row.headers) });
          } catch (err) {
            failure = err;
            failed = true;
            break;
          }
          const key = message.orderKey ?? defaultOrderKey(message.headers);
          if (busy.conflicts(key)) break; // an earlier row of its aggregate is unacknowledged
          next++;
          inFlight++;
          busy.add(key);
          const { subject, data, headers } = message;
          message = null;
          let sent: Promise<void>;
          const started = performance.now();
          try {
            sent = this.bus.publish({ id: row.id, subject, data, headers });
          } catch (err) {
            sent = Promise.reject(err); // a bus that throws instead of rejecting
          }
          sent.then(
            () => {
              recordMessageSent(this.bus.kind, subject, (performance.now() - started) / 1000);
              done.push(row.id);
              settle(key);
            },
            (err) => {
              recordMessageSent(this.bus.kind, subject, (performance.now() - started) / 1000, errorType(err));
              if (!failed) failure = err;
              failed = true;
              settle(key);
            },
          );
        }
        if (inFlight === 0) resolve({ done, failure });
      };
      const settle = (key: readonly string[]) => {
        inFlight--;
        busy.remove(key);
        pump();
      };
      pump();
    });
  }

  private get table(): string {
    return `${this.schema}.outbox`;
  }
}

type Settled<T extends readonly unknown[]> = { -readonly [K in keyof T]: Awaited<T[K]> };

/**
 * The results of statements sent together on one reserved connection, or the first
 * failure. A lost connection (connectionLost in database.ts) rejects at once and calls
 * `onLost`: postgres.js may never send (nor settle) what it queued behind a statement
 * that was waiting for the server when the connection went.
 */
function settleTogether<T extends readonly unknown[]>(queries: T, onLost: () => void): Promise<Settled<T>> {
  return new Promise((resolve, reject) => {
    const values: unknown[] = [];
    let left = queries.length;
    let failure: { err: unknown } | null = null;
    const done = () => {
      if (--left > 0) return;
      if (failure) reject(failure.err);
      else resolve(values as Settled<T>);
    };
    queries.forEach((q, i) => {
      void Promise.resolve(q).then(
        (v) => {
          values[i] = v;
          done();
        },
        (err: unknown) => {
          failure ??= { err };
          if (connectionLost(err)) {
            onLost();
            reject(err);
          }
          done();
        },
      );
    });
  });
}

/** An outbox row as the claim reads it (`locked`: the claim got the schema's advisory lock). */
type ClaimedRow = Omit<OutboxRow, 'headers'> & { headers: unknown; locked: boolean };

/** What one batch did. */
interface Batch {
  published: number;
  /** Nothing was claimed because another relay holds the schema's lock. */
  lockHeldElsewhere: boolean;
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
