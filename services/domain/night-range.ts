/**
 * Calendar dates ("YYYY-MM-DD", a night of the property's local calendar, no time
 * zone) and night ranges: check_in is the first night held, check_out the departure
 * day, exclusive (spec: "Calendar block"). Dates are handled as whole days since
 * 1970-01-01 so no time zone or DST can shift a night.
 *
 * The one home of the date and night-range rules in TypeScript: the calendar checks
 * every range with `checkRange`, the gateway reports a block's range with it before the
 * call (routes/blocks.ts), and a test event's stay is checked with it (test-stay.ts).
 * The JSON Schema checks each date's shape, protovalidate the internal field's shape,
 * and the table constraints (max_nights(), calendar migration 0008) are the database's
 * last line.
 */

import { MAX_NIGHTS } from '../kit/base';

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAY_MS = 86_400_000;

/** Days since 1970-01-01 of a valid "YYYY-MM-DD" (year 0001–9999), else undefined. */
export function parseDay(text: string): number | undefined {
  const m = DATE.exec(text);
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > 31) return undefined;
  const ms = Date.UTC(y, mo - 1, d);
  const back = new Date(ms);
  // Date.UTC maps years 0–99 to 1900–1999; setUTCFullYear does not.
  back.setUTCFullYear(y);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) return undefined;
  return Math.round(back.getTime() / DAY_MS);
}

/** "YYYY-MM-DD" of a day number. */
export function formatDay(day: number): string {
  const d = new Date(day * DAY_MS);
  const y = String(d.getUTCFullYear()).padStart(4, '0');
  return `${y}-${String(d.getUTCMonth() + 1).padStart(2, '0')}-${String(d.getUTCDate()).padStart(2, '0')}`;
}

/** A validated night range. */
export interface NightSpan {
  checkIn: string;
  checkOut: string;
  /** Number of nights, 1 to MAX_NIGHTS. */
  nights: number;
}

/** Why a range is not acceptable; `field` names the public field (docs/contract-gaps.md "`errors[].field` for the two exclusive block fields"). */
export interface RangeProblem {
  field: 'check_in' | 'check_out';
  code: 'required' | 'format' | 'invalid' | 'maximum';
}

/**
 * Validates check_in/check_out as a range of 1 to `max` nights. Problems are reported
 * per field: a missing or malformed date on its own field, and a range with check_out
 * not after check_in (`invalid`) or over `max` nights (`maximum`) on `check_out`
 * (docs/contract-gaps.md; the same codes as the gateway's).
 */
export function checkRange(checkIn: string, checkOut: string, max = MAX_NIGHTS): { span?: NightSpan; problems: RangeProblem[] } {
  const problems: RangeProblem[] = [];
  const a = checkIn === '' ? undefined : parseDay(checkIn);
  const b = checkOut === '' ? undefined : parseDay(checkOut);
  if (checkIn === '') problems.push({ field: 'check_in', code: 'required' });
  else if (a === undefined) problems.push({ field: 'check_in', code: 'format' });
  if (checkOut === '') problems.push({ field: 'check_out', code: 'required' });
  else if (b === undefined) problems.push({ field: 'check_out', code: 'format' });
  if (a === undefined || b === undefined) return { problems };
  const nights = b - a;
  const problem = nightCountProblem(nights, max);
  if (problem) return { problems: [problem] };
  return { span: { checkIn: formatDay(a), checkOut: formatDay(b), nights }, problems };
}

/** The range rule on a night count, reported on `check_out`: not after check_in → `invalid`, more than `max` nights → `maximum`. */
export function nightCountProblem(nights: number, max = MAX_NIGHTS): { field: 'check_out'; code: 'invalid' | 'maximum' } | undefined {
  if (nights < 1) return { field: 'check_out', code: 'invalid' };
  if (nights > max) return { field: 'check_out', code: 'maximum' };
  return undefined;
}

/** Every night of [checkIn, checkOut) as "YYYY-MM-DD", ascending. */
export function nightsOf(checkIn: string, checkOut: string): string[] {
  const a = parseDay(checkIn);
  const b = parseDay(checkOut);
  if (a === undefined || b === undefined) return [];
  const out: string[] = [];
  for (let d = a; d < b; d++) out.push(formatDay(d));
  return out;
}
