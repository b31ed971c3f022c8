/**
 * Who holds which nights (`calendar.claims`, see the migrations): the per-listing
 * lock, hold expiry and the conflict scan every writer runs inside its transaction.
 * Each is one SQL function (migrations 0003, 0008) that `put_block` uses as well, so the
 * calendar has one definition of each.
 *
 * Every transaction that claims nights on a listing first takes that listing's
 * transaction-scoped advisory lock, so writers on one listing run one after another
 * in any process or replica; inside the lock it expires overdue holds, scans for
 * conflicts (so the answer lists every colliding night exactly) and writes. The
 * exclusion constraints stay the last line of defence: a 23P01 is still mapped to a
 * conflict (see `withRetries`).
 */
import type { Sql, Tx } from '../kit/database';
import { currentTraceHeaders } from '../kit/telemetry';
import { sqlState, SqlState } from '../kit/errors';
import { conflict } from './errors';

/** Which holders a scan looks at: marketplace only (for blocks) or everything (for holds and bookings). */
export type ScanScope = 'marketplace' | 'all';

/** Takes the listing's lock for the rest of the transaction (SQL `calendar.lock_listing`). */
export async function lockListing(tx: Tx, listingId: string): Promise<void> {
  await tx`select calendar.lock_listing(${listingId})`;
}

/**
 * Expires the listing's overdue live holds (status `expired`, their claims deleted) and
 * writes their HOLD_EXPIRED events, in the transaction (SQL `calendar.expire_holds`,
 * which put_block uses too). Call under the listing's lock, before claiming. Returns how
 * many expired: more than 0 means events were written.
 */
export async function expireHolds(tx: Tx, listingId: string, at: Date): Promise<number> {
  const [row] = await tx<{ expired: number }[]>`
    select calendar.expire_holds(${listingId}, ${at}, ${tx.json(currentTraceHeaders())}) as expired
  `;
  return row!.expired;
}

/**
 * Every night of [checkIn, checkOut) on the listing already held by a holder in
 * `scope`, ascending and distinct ("YYYY-MM-DD"), from SQL `calendar.night_conflicts`
 * (the scan put_block runs too; it uses the exclusion constraints' GiST index). Holds
 * are in `calendar.claims` only while live (expireHolds runs first).
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

/** Runs `fn` in a transaction with the retries of `withRetries`. */
export async function withListingTransaction<T>(sql: Sql, fn: (tx: Tx) => Promise<T>, rescan?: () => Promise<string[]>): Promise<T> {
  return withRetries(async () => (await sql.begin((tx) => fn(tx))) as T, rescan);
}
