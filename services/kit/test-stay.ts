/**
 * The stay of a test `booking.confirmed` (services/notifications/test-events.ts): given dates, or the default
 * (30 days from today, UTC, for two nights), and their checks. Pure, so the gateway
 * validates a test event's dates with the very rules the service applies, before its
 * `501` for production workspaces (a 501 means the request was valid). In the kit
 * because both the gateway and the notifications service use it.
 */
import { MAX_NIGHTS } from './limits';

/** Default stay: starting this many days after today (UTC)… */
export const TEST_STAY_LEAD_DAYS = 30;
/** …for this many nights. */
export const TEST_STAY_NIGHTS = 2;
const DAY_MS = 86_400_000;
/** The first instant no date-time can be stored at (year 10000). */
const END_OF_TIME_MS = Date.UTC(10000, 0, 1);

/** Midnight UTC of a `YYYY-MM-DD` that is a real calendar date from 0001-01-01, or NaN. */
export function dateMs(text: string): number {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || text < '0001-01-01') return Number.NaN;
  const ms = Date.parse(`${text}T00:00:00Z`);
  return !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 10) === text ? ms : Number.NaN;
}

/** `YYYY-MM-DD` of a midnight-UTC instant. */
const isoDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export type TestStay = { checkIn: string; checkOut: string; nights: number };
export type StayViolation = { field: 'check_in' | 'check_out'; code: 'format' | 'invalid' | 'maximum' };

/**
 * The stay, or what is wrong with it: a date that is not one → `format`; `check_out`
 * not after `check_in` → `invalid`, more than MAX_NIGHTS → `maximum` (both on
 * `check_out`, as for blocks); a default departure past year 9999 → `check_in`
 * `maximum`.
 */
export function resolveTestStay(checkIn: string | undefined, checkOut: string | undefined, now: Date): TestStay | StayViolation[] {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const inMs = checkIn === undefined ? today + TEST_STAY_LEAD_DAYS * DAY_MS : dateMs(checkIn);
  const outMs = checkOut === undefined ? inMs + TEST_STAY_NIGHTS * DAY_MS : dateMs(checkOut);
  const violations: StayViolation[] = [];
  if (Number.isNaN(inMs)) violations.push({ field: 'check_in', code: 'format' });
  if (checkOut !== undefined && Number.isNaN(outMs)) violations.push({ field: 'check_out', code: 'format' });
  if (violations.length > 0) return violations;
  const nights = Math.round((outMs - inMs) / DAY_MS);
  if (nights < 1) return [{ field: 'check_out', code: 'invalid' }];
  if (nights > MAX_NIGHTS) return [{ field: 'check_out', code: 'maximum' }];
  if (outMs >= END_OF_TIME_MS) return [{ field: 'check_in', code: 'maximum' }];
  return { checkIn: isoDate(inMs), checkOut: isoDate(outMs), nights };
}
