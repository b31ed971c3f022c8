/**
 * WatchEvents: a server stream of calendar and booking events in order, resumable.
 *
 * It reads `calendar.events` in (xid, seq) order, only below the calendar's horizon
 * (event-horizon.ts, migration 0005: the oldest event-writing transaction still
 * running; transactions that write no calendar event, anywhere on the server, do not
 * count), so every reader sees the same order and nothing can later appear before a
 * position already streamed. Each message carries its cursor, the event's `seq`; a
 * reconnect with that cursor resumes right after it. After the backlog the stream
 * tails: it is woken at once by commits in this process and polls every POLL_MS for
 * commits made by other replicas.
 *
 * Retention (event-retention.ts) deletes a prefix of that order and records where it
 * ends (the watermark). A cursor before it, or a stream it overtakes, fails
 * OUT_OF_RANGE (CURSOR_EXPIRED) instead of skipping what was pruned.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext } from '@connectrpc/connect';
import type { WatchEventsRequest, WatchEventsResponseSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import type { Sql } from '../kit/db';
import { WakeSignal } from '../kit/work';
import { cursorExpired, invalidArgument } from './errors';
import { SharedHorizon } from './event-horizon';
import { streamEvent, type StreamRow } from './event-codec';

const POLL_MS = 250;
const BATCH = 500;

/** Wakes waiting streams when this process commits events; shares their horizon reads. */
export class WatchHub {
  private readonly wake = new WakeSignal();
  /** The horizon reads of this process's streams (event-horizon.ts). */
  readonly horizon = new SharedHorizon();

  /** Something was committed: wake every waiting stream. */
  notify(): void {
    this.wake.notify();
  }

  /** Ends every stream (shutdown). */
  close(): void {
    this.wake.close();
  }

  get isClosed(): boolean {
    return this.wake.isClosed;
  }

  /** Counts notify() calls: read it before reading events, pass it to wait(). */
  get generation(): number {
    return this.wake.generation;
  }

  /** Resolves on notify(), close(), abort or after `ms`; at once if notified since `seenGeneration`. */
  wait(ms: number, signal: AbortSignal, seenGeneration?: number): Promise<void> {
    return this.wake.wait(ms, signal, seenGeneration);
  }
}

interface EventRow extends StreamRow {
  seq: string;
  xid: string;
}

type WatchMessage = MessageInitShape<typeof WatchEventsResponseSchema>;

/** The message of one event row; event-codec.ts builds (or decodes) the event itself. */
function toMessage(row: EventRow): WatchMessage {
  return { cursor: String(row.seq), event: streamEvent(row) };
}

/** A position in the stream: (xid, seq); ('0', '0') is before everything. */
interface Position {
  xid: string;
  seq: string;
}

const EXPIRED_MESSAGE =
  'cursor expired: the events after it are past the event retention (CALENDAR_EVENT_RETENTION_DAYS) and were pruned; ' +
  'resynchronise: call WatchEvents without a cursor and re-read GetAvailability for your listings';

/**
 * Where a stream starts. A cursor that is a retained event, or the last event pruned
 * (the watermark, migration 0004), resumes right after it; a cursor among the pruned
 * seqs → OUT_OF_RANGE (CURSOR_EXPIRED); any other → INVALID_ARGUMENT. No cursor: the
 * watermark, so the stream starts at the oldest event retained.
 */
async function startPosition(sql: Sql, cursor: string | undefined): Promise<Position> {
  if (cursor !== undefined && !/^[1-9][0-9]{0,18}$/.test(cursor)) throw invalidArgument([{ field: 'cursor', code: 'format' }], 'malformed cursor');
  const [row] = await sql<{ xid: string | null; pruned_xid: string; pruned_seq: string; max_seq: string }[]>`
    select e.xid::text, m.xid::text as pruned_xid, m.seq::text as pruned_seq, m.max_seq::text
    from calendar.events_pruned m
    left join calendar.events e on e.seq = ${cursor ?? null}::bigint`;
  const watermark = { xid: row!.pruned_xid, seq: row!.pruned_seq };
  if (cursor === undefined) return watermark;
  if (row!.xid !== null) return { xid: row!.xid, seq: cursor };
  if (cursor === watermark.seq) return watermark;
  if (BigInt(cursor) <= BigInt(row!.max_seq)) throw cursorExpired(EXPIRED_MESSAGE);
  throw invalidArgument([{ field: 'cursor', code: 'invalid' }], 'unknown cursor');
}

interface ReadRow extends Partial<EventRow> {
  /** The prune watermark is past the position: events after it may be gone. */
  overtaken: boolean;
}

/** The WatchEvents handler. */
export async function* watchEvents(sql: Sql, hub: WatchHub, req: WatchEventsRequest, ctx: HandlerContext): AsyncGenerator<WatchMessage> {
  // Position of the last event streamed, or of everything below a horizon already read.
  let pos = await startPosition(sql, req.cursor);
  // Without a cursor, until the first event the start may move forward with the
  // retention; after that (or from a cursor) every following event is owed.
  let anchored = req.cursor !== undefined;
  const listingId = req.listingId ?? null;
  const workspaceId = req.workspaceId?.toLowerCase() ?? null;

  while (!ctx.signal.aborted && !hub.isClosed) {
    // Commits from here on wake the wait below, even those made while this round reads.
    const seen = hub.generation;
    // The horizon first, in its own statement: the events below it must be read in a
    // later snapshot (event-horizon.ts).
    const horizon = await hub.horizon.get(sql);
    // Then one statement, one snapshot: the events after `pos` below the horizon and
    // whether a prune (which deletes and moves the watermark in one transaction) got
    // past `pos`.
    const rows = await sql<ReadRow[]>`
      select (select (m.xid, m.seq) > (${pos.xid}::xid8, ${pos.seq}::bigint) from calendar.events_pruned m) as overtaken,
             e.seq::text, e.xid::text, e.id::text, e.type, e.data, e.body
      from (select) h
      left join lateral (
        select x.seq, x.xid, x.id, x.type, x.data, x.body
        from calendar.events x
        where (x.xid, x.seq) > (${pos.xid}::xid8, ${pos.seq}::bigint)
          and x.xid < ${horizon}::xid8
          ${listingId === null ? sql`` : sql`and x.listing_id = ${listingId}`}
          ${workspaceId === null ? sql`` : sql`and x.workspace_id = ${workspaceId}`}
        order by x.xid, x.seq
        limit ${BATCH}
      ) e on true
      order by e.xid, e.seq
    `;
    const head = rows[0]!;
    if (head.overtaken && anchored) throw cursorExpired(EXPIRED_MESSAGE);
    const events = rows.filter((r): r is ReadRow & EventRow => r.seq != null);
    for (const row of events) {
      if (ctx.signal.aborted) return;
      yield toMessage(row);
      pos = { xid: row.xid, seq: row.seq };
      anchored = true;
    }
    if (events.length < BATCH) {
      // Every matching event below the horizon has been read: the position moves up to
      // it, so a filtered stream of a quiet listing is not overtaken by the retention.
      if (BigInt(horizon) > BigInt(pos.xid)) pos = { xid: horizon, seq: '0' };
      await hub.wait(POLL_MS, ctx.signal, seen);
    }
  }
}
