/**
 * The stay of a test `booking.confirmed` (services/notifications/test-events.ts): given dates, or the default
 * (30 days from today, UTC, for two nights), and their checks. Pure, so the gateway
 * validates a test event's dates with the very rules the service applies, before its
 * `501` for production workspaces (a 501 means the request was valid). In the kit
 * because both the gateway and the notifications service use it.
 */
import { formatDay, nightCountProblem, parseDay } from './night-range';

/** Default stay: starting this many days after today (UTC)… */
export const TEST_STAY_LEAD_DAYS = 30;
/** …for this many nights. */
export const TEST_STAY_NIGHTS = 2;
/** The first day no date-time can be stored at (year 10000), in days since 1970-01-01. */
const END_OF_TIME_DAY = Date.UTC(10000, 0, 1) / 86_400_000;

export type TestStay = { checkIn: string; checkOut: string; nights: number };
export type StayViolation = { field: 'check_in' | 'check_out'; code: 'format' | 'invalid' | 'maximum' };

/**
 * The stay, or what is wrong with it: a date that is not one → `format`; `check_out`
 * not after `check_in` → `invalid`, more than MAX_NIGHTS → `maximum` (both on
 * `check_out`, the night-range rule of blocks: night-range.ts `nightCountProblem`); a default
 * departure past year 9999 → `check_in` `maximum`.
 */
export function resolveTestStay(checkIn: string | undefined, checkOut: string | undefined, now: Date): TestStay | StayViolation[] {
  const today = Math.floor(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) / 86_400_000);
  const inDay = checkIn === undefined ? today + TEST_STAY_LEAD_DAYS : parseDay(checkIn);
  const outDay = checkOut === undefined ? (inDay === undefined ? undefined : inDay + TEST_STAY_NIGHTS) : parseDay(checkOut);
  const violations: StayViolation[] = [];
  if (inDay === undefined) violations.push({ field: 'check_in', code: 'format' });
  if (checkOut !== undefined && outDay === undefined) violations.push({ field: 'check_out', code: 'format' });
  if (violations.length > 0 || inDay === undefined || outDay === undefined) return violations;
  const problem = nightCountProblem(outDay - inDay);
  if (problem) return [problem];
  if (outDay >= END_OF_TIME_DAY) return [{ field: 'check_in', code: 'maximum' }];
  return { checkIn: formatDay(inDay), checkOut: formatDay(outDay), nights: outDay - inDay };
}
