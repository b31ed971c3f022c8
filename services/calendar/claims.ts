/**
 * Who holds which nights (`calendar.claims`, see the migration): the per-listing
 * lock, hold expiry and the conflict scan every writer runs inside its transaction.
 *
 * Every transaction that claims nights on a listing first takes that listing's
 * transaction-scoped advisory lock, so writers on one listing run one after another
 * in any process or replica; inside the lock it expires overdue holds, scans for
 * conflicts (so the answer lists every colliding night exactly) and writes. The
 * exclusion constraints stay the last line of defence: a 23P01 is still mapped to a
 * conflict (see `withListingTransaction`).
 */
import type { Sql, Tx } from '../kit/database';
import { CalendarChangeKind, NightHolderKind } from '../../gen/psync/calendar/v1/events_pb';
import { calendarChanged, type PendingEvent } from './event-log';
import { conflict, sqlState, SqlState } from './errors';

/** Which holders a scan looks at: marketplace only (for blocks) or everything (for holds and bookings). */
export type ScanScope = 'marketplace' | 'all';

/** Takes the listing's lock for the rest of the transaction. */
export async function lockListing(tx: Tx, listingId: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtextextended(${`psync.calendar.listing:${listingId}`}, 0))`;
}

/**
 * Expires the listing's overdue live holds (status `expired`, their claims deleted) and
 * returns their HOLD_EXPIRED events. Call under the listing's lock, before claiming.
 */
export async function expireHolds(tx: Tx, listingId: string, at: Date): Promise<PendingEvent[]> {
  const rows = await tx<{ hold_id: string; workspace_id: string; check_in: string; check_out: string }[]>`
    with expired as (
      update calendar.holds set status = 'expired', ended_at = expires_at
      where listing_id = ${listingId} and status = 'live' and expires_at <= clock_timestamp()
      returning hold_id, workspace_id, check_in, check_out
    ), freed as (
      delete from calendar.claims
      where holder_kind = 'hold' and holder_id in (select hold_id::text from expired)
    )
    select hold_id, workspace_id, check_in::text, check_out::text from expired
  `;
  return rows.map((r) =>
    calendarChanged({
      at,
      workspaceId: r.workspace_id,
      listingId,
      kind: CalendarChangeKind.HOLD_EXPIRED,
      holder: { kind: NightHolderKind.HOLD, id: r.hold_id },
      released: { checkIn: r.check_in, checkOut: r.check_out },
    }),
  );
}

/**
 * Every night of [checkIn, checkOut) on the listing already held by a holder in
 * `scope`, ascending and distinct ("YYYY-MM-DD"). Uses the exclusion constraints'
 * GiST index. Holds are in `calendar.claims` only while live (expireHolds runs first).
 */
export async function scanConflicts(tx: Tx | Sql, listingId: string, checkIn: string, checkOut: string, scope: ScanScope): Promise<string[]> {
  const marketplaceOnly = scope === 'marketplace';
  const rows = await tx<{ night: string }[]>`
    select distinct (greatest(lower(c.nights), ${checkIn}::date) + n.i)::text as night
    from calendar.claims c
    cross join lateral generate_series(
      0, least(upper(c.nights), ${checkOut}::date) - greatest(lower(c.nights), ${checkIn}::date) - 1
    ) as n(i)
    where c.listing_id = ${listingId}
      and c.nights && daterange(${checkIn}::date, ${checkOut}::date)
      and (${!marketplaceOnly}::boolean or c.side = 'marketplace')
    order by 1
  `;
  return rows.map((r) => r.night);
}

/** Throws the conflict error when `dates` is not empty. */
export function refuseConflicts(dates: string[]): void {
  if (dates.length > 0) throw conflict(dates);
}

/**
 * Runs `fn` in a transaction, retrying (up to 5 attempts) when PostgreSQL reports a
 * transient clash: a unique violation from two first PUTs of the same external_uid
 * racing (the retry finds the row), a deadlock or a serialization failure.
 *
 * An exclusion violation (23P01) cannot happen while every writer holds the listing
 * lock; if it does anyway, `rescan` is asked for the nights colliding now: any →
 * the conflict error, none (the other holder is gone) → the transaction is retried.
 */
export async function withListingTransaction<T>(
  sql: Sql,
  fn: (tx: Tx) => Promise<T>,
  rescan?: () => Promise<string[]>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await sql.begin((tx) => fn(tx))) as T;
    } catch (err) {
      const state = sqlState(err);
      if (state === SqlState.exclusionViolation && rescan) {
        refuseConflicts(await rescan());
        if (attempt >= 5) throw err;
        continue;
      }
      const transient = state === SqlState.uniqueViolation || state === SqlState.deadlockDetected || state === SqlState.serializationFailure;
      if (!transient || attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 2 * attempt + Math.random() * 5));
    }
  }
}
