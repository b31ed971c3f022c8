/**
 * The horizon of the WatchEvents log: an xid below which no transaction can still add
 * an event to `calendar.events`, so everything below it can be streamed (or pruned)
 * in (xid, seq) order and nothing can later appear before it.
 *
 * It belongs to the calendar alone (migration 0005, docs/calendar.md "WatchEvents"):
 * every event-writing transaction registers before its first write (a shared advisory
 * lock, taken by `calendar.lock_listing`), and `calendar.event_horizon()` is the
 * snapshot's xmax lowered to the xid of every registered writer still running. A
 * transaction that writes no calendar event — in another database, another schema,
 * or a read-only one — never holds it back.
 *
 * The rule for callers: read the horizon in one statement and the events below it in a
 * LATER statement (READ COMMITTED), never in the same one: the proof in the migration
 * needs the events' snapshot to be taken after the horizon was read.
 */
import type { Sql, Tx } from '../kit/db';

/** Reads the calendar's horizon (an xid8, as decimal text). */
export async function readEventHorizon(sql: Sql | Tx): Promise<string> {
  const [row] = await sql<{ horizon: string }[]>`select calendar.event_horizon()::text as horizon`;
  return row!.horizon;
}

/**
 * Shares horizon reads between the streams of one process: a stream woken by a commit
 * needs a horizon read that BEGAN after that commit, so a caller joins the read queued
 * behind the one in flight (never the one in flight, which may have begun earlier), and
 * everyone who asks meanwhile shares that queued read. N streams woken together cost
 * one or two reads instead of N.
 */
export class SharedHorizon {
  private running: Promise<string> | undefined;
  private queued: Promise<string> | undefined;

  constructor(private readonly read: (sql: Sql) => Promise<string> = readEventHorizon) {}

  /** A horizon read that began after this call. */
  get(sql: Sql): Promise<string> {
    if (!this.running) return this.start(sql);
    this.queued ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.start(sql);
      });
    return this.queued;
  }

  private start(sql: Sql): Promise<string> {
    const p: Promise<string> = this.read(sql).finally(() => {
      if (this.running === p) this.running = undefined;
    });
    this.running = p;
    return p;
  }
}
