/**
 * Who holds which nights (`calendar.claims`, see the migrations): the conflict scan
 * and the retries of the calendar's writers.
 *
 * Every write that claims nights on a listing is one SQL function called as one
 * statement (put_block, place_hold, confirm_booking, release_hold, cancel_booking,
 * delete_block, sweep_holds in services/calendar/functions/; docs/calendar.md "One
 * style for writes"). Each takes that listing's transaction-scoped advisory lock first
 * (`calendar.lock_listing`), so writers on one listing run one after another in any
 * process or replica; inside the lock it expires overdue holds, scans for conflicts (so
 * the answer lists every colliding night exactly) and writes. The exclusion constraints
 * stay the last line of defence: a 23P01 is still mapped to a conflict (see
 * `withRetries`).
 */
import type { Sql, Tx } from '../kit/db';
import { sqlState, SqlState } from '../kit/rpc';
import { conflict } from './errors';

/** Which holders a scan looks at: marketplace only (for blocks) or everything (for holds and bookings). */
export type ScanScope = 'marketplace' | 'all';

/**
 * Every night of [checkIn, checkOut) on the listing already held by a holder in
 * `scope`, ascending and distinct ("YYYY-MM-DD"), from SQL `calendar.night_conflicts`
 * (the scan the writers run under the lock; it uses the exclusion constraints' GiST
 * index), for the rescan of `withRetries`. Holds are in `calendar.claims` only while
 * live (the writers expire overdue ones first).
 */
export async function scanConflicts(tx: Tx | Sql, listingId: string, checkIn: string, checkOut: string, scope: ScanScope): Promise<string[]> {
  const [row] = await tx<{ nights: string[] }[]>`
    select calendar.night_conflicts(${listingId}, ${checkIn}::date, ${checkOut}::date, ${scope === 'marketplace'}) as nights
  `;
  return row!.nights;
}

/** Throws the conflict error when `dates` is not empty. */
export function refuseConflicts(dates: string[]): void {
  if (dates.length > 0) throw conflict(dates);
}

/**
 * Runs `attempt` (one transaction, explicit or a single statement's implicit one),
 * retrying (up to 5 attempts) when PostgreSQL reports a transient clash: a unique
 * violation from two first PUTs of the same external_uid racing (the retry finds the
 * row), a deadlock or a serialization failure.
 *
 * An exclusion violation (23P01) cannot happen while every writer holds the listing
 * lock; if it does anyway, `rescan` is asked for the nights colliding now: any →
 * the conflict error, none (the other holder is gone) → the transaction is retried.
 */
export async function withRetries<T>(attempt: () => Promise<T>, rescan?: () => Promise<string[]>): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      const state = sqlState(err);
      if (state === SqlState.exclusionViolation && rescan) {
        refuseConflicts(await rescan());
        if (n >= 5) throw err;
        continue;
      }
      const transient = state === SqlState.uniqueViolation || state === SqlState.deadlockDetected || state === SqlState.serializationFailure;
      if (!transient || n >= 5) throw err;
      await new Promise((r) => setTimeout(r, 2 * n + Math.random() * 5));
    }
  }
}
