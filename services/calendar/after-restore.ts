/**
 * The calendar's step after a database restore (run-after-restore.ts): the lost server
 * may have given event seqs after the restore point to events that no longer exist, and
 * a marketplace WatchEvents cursor may be one of them. New events start a billion seqs
 * further on, and the retention watermark moves there too, so a cursor from the gap
 * reads as expired (CURSOR_EXPIRED: the marketplace resynchronises) instead of resuming
 * after some other event that reused its seq. Running it again moves on again; harmless.
 */
import type { Sql } from '../kit/db';

/** How far past the last event new events start: more than any gap could have used. */
const RESTORE_SEQ_SKIP = 1_000_000_000;

export async function skipEventSeqsOfTheGap(sql: Sql): Promise<{ next_event_seq_after: string }> {
  const [row] = await sql<{ v: string }[]>`
    with s as (
      select setval(pg_get_serial_sequence('calendar.events', 'seq'),
                    (select coalesce(max(seq), 0) from calendar.events) + ${RESTORE_SEQ_SKIP}) as v
    ), w as (
      update calendar.events_pruned set max_seq = greatest(max_seq, (select v from s))
    )
    select v::text from s`;
  return { next_event_seq_after: row!.v };
}
