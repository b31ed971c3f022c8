/**
 * The schemas' `date` and `date-time` formats, registered by validate.ts in place of
 * ajv-formats' own for every schema: only dates and instants the system can store
 * (services/kit/base/storable-values.ts; docs/decisions.md "Text and instants that can be
 * stored"). A full-date of year 0001–9999; a date-time whose instant, after applying
 * its UTC offset, lies in 0001-01-01T00:00:00Z … 9999-12-31T23:59:59.999…Z. Anything
 * else is a `format` violation, like any malformed value.
 */
import { fullFormats } from 'ajv-formats/dist/formats';
import { isStorableInstantMs } from '../services/kit/base';

type FormatCheck = (text: string) => boolean;
const rfc3339Date = (fullFormats.date as { validate: FormatCheck }).validate;
const rfc3339DateTime = (fullFormats['date-time'] as { validate: FormatCheck }).validate;

/** The parts of an RFC 3339 date-time (the grammar ajv-formats accepts: `T`/`t`/space, `Z`/`z`, `±HH`, `±HHMM`, `±HH:MM`). */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt\s](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2})(?::?(\d{2}))?)$/;

/**
 * Milliseconds since the epoch of an RFC 3339 date-time with any year 0000–9999 and
 * offset, computed from its parts (Date.parse accepts fewer of the forms RFC 3339
 * allows); NaN when `text` is not one. A leap second (…:60) is the same instant as
 * :59.999; digits past the millisecond are dropped.
 */
export function instantMs(text: string): number {
  if (!rfc3339DateTime(text)) return Number.NaN;
  const m = DATE_TIME.exec(text);
  if (!m) return Number.NaN;
  const n = (i: number) => Number(m[i] ?? 0);
  const leap = n(6) === 60;
  const d = new Date(0);
  d.setUTCFullYear(n(1), n(2) - 1, n(3));
  d.setUTCHours(n(4), n(5), leap ? 59 : n(6), leap ? 999 : Number((m[7] ?? '').slice(0, 3).padEnd(3, '0')));
  const offsetMinutes = m[8] === undefined ? 0 : (m[8] === '-' ? -1 : 1) * (n(9) * 60 + n(10));
  return d.getTime() - offsetMinutes * 60_000;
}

/** The `date` format: an RFC 3339 full-date of year 0001–9999. */
export function storableDate(text: string): boolean {
  return rfc3339Date(text) && !text.startsWith('0000');
}

/** The `date-time` format: an RFC 3339 date-time whose instant, in UTC, lies in 0001-01-01 … 9999-12-31. */
export function storableDateTime(text: string): boolean {
  return isStorableInstantMs(instantMs(text));
}
