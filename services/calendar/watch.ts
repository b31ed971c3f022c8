/**
 * WatchEvents: a server stream of calendar and booking events in order, resumable.
 *
 * It reads `calendar.events` in (xid, seq) order, only up to the oldest transaction
 * still running (see the migration), so every reader sees the same order and nothing
 * can later appear before a position already streamed. Each message carries its
 * cursor, the event's `seq`; a reconnect with that cursor resumes right after it.
 * After the backlog the stream tails: it is woken at once by commits in this process
 * and polls every POLL_MS for commits made by other replicas.
 */
import { fromBinary } from '@bufbuild/protobuf';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext } from '@connectrpc/connect';
import type { WatchEventsRequest, WatchEventsResponseSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import { BookingCancelledSchema, BookingConfirmedSchema, CalendarChangedSchema } from '../../gen/psync/calendar/v1/events_pb';
import type { Sql } from '../kit/database';
import { invalidArgument } from './errors';
import type { StreamType } from './event-log';

const POLL_MS = 250;
const BATCH = 500;

/** Wakes waiting streams when this process commits events. */
export class WatchHub {
  private readonly waiters = new Set<() => void>();
  private closed = false;

  /** Something was committed: wake every waiting stream. */
  notify(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Ends every stream (shutdown). */
  close(): void {
    this.closed = true;
    this.notify();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Resolves on notify(), close(), abort or after `ms`. */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.closed || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done);
      this.waiters.add(done);
    });
  }
}

interface EventRow {
  seq: string;
  xid: string;
  type: StreamType;
  data: Buffer;
}

type WatchMessage = MessageInitShape<typeof WatchEventsResponseSchema>;

function toMessage(row: EventRow): WatchMessage {
  const cursor = String(row.seq);
  switch (row.type) {
    case 'calendar_changed':
      return { cursor, event: { case: 'calendarChanged', value: fromBinary(CalendarChangedSchema, row.data) } };
    case 'booking_confirmed':
      return { cursor, event: { case: 'bookingConfirmed', value: fromBinary(BookingConfirmedSchema, row.data) } };
    case 'booking_cancelled':
      return { cursor, event: { case: 'bookingCancelled', value: fromBinary(BookingCancelledSchema, row.data) } };
  }
}

/** The WatchEvents handler. */
export async function* watchEvents(sql: Sql, hub: WatchHub, req: WatchEventsRequest, ctx: HandlerContext): AsyncGenerator<WatchMessage> {
  // Position of the last event streamed: (xid, seq); '0','0' is before everything.
  let xid = '0';
  let seq = '0';
  if (req.cursor !== undefined) {
    if (!/^[1-9][0-9]{0,18}$/.test(req.cursor)) throw invalidArgument([{ field: 'cursor', code: 'format' }], 'malformed cursor');
    const [row] = await sql<{ xid: string }[]>`select xid::text from calendar.events where seq = ${req.cursor}`;
    if (!row) throw invalidArgument([{ field: 'cursor', code: 'invalid' }], 'unknown cursor');
    xid = row.xid;
    seq = req.cursor;
  }
  const listingId = req.listingId ?? null;
  const workspaceId = req.workspaceId?.toLowerCase() ?? null;

  while (!ctx.signal.aborted && !hub.isClosed) {
    const rows = await sql<EventRow[]>`
      with horizon as (select pg_snapshot_xmin(pg_current_snapshot()) as xmin)
      select e.seq::text, e.xid::text, e.type, e.data
      from calendar.events e, horizon
      where (e.xid, e.seq) > (${xid}::xid8, ${seq}::bigint)
        and e.xid < horizon.xmin
        ${listingId === null ? sql`` : sql`and e.listing_id = ${listingId}`}
        ${workspaceId === null ? sql`` : sql`and e.workspace_id = ${workspaceId}`}
      order by e.xid, e.seq
      limit ${BATCH}
    `;
    for (const row of rows) {
      if (ctx.signal.aborted) return;
      yield toMessage(row);
      xid = row.xid;
      seq = row.seq;
    }
    if (rows.length < BATCH) await hub.wait(POLL_MS, ctx.signal);
  }
}
