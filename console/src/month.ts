/** Calendar arithmetic on `YYYY-MM-DD` dates in UTC, the API's night dates. */

/** `2030-08` of `date`, the month it falls in. */
export function monthOf(date: Date): string {
  return date.toISOString().slice(0, 7);
}

/** `YYYY-MM` when `raw` is one, else undefined. */
export function parseMonth(raw: string | null): string | undefined {
  return raw && /^\d{4}-(0[1-9]|1[0-2])$/.test(raw) ? raw : undefined;
}

/** The month `delta` months after `month`. */
export function addMonths(month: string, delta: number): string {
  const [y, m] = month.split('-').map(Number) as [number, number];
  return monthOf(new Date(Date.UTC(y, m - 1 + delta, 1)));
}

/** Every date of `month`, in order. */
export function datesOf(month: string): string[] {
  const [y, m] = month.split('-').map(Number) as [number, number];
  const days = new Date(Date.UTC(y, m, 0)).getUTCDate();
  return Array.from({ length: days }, (_, i) => `${month}-${String(i + 1).padStart(2, '0')}`);
}

/** Weeks of `month` starting on Monday; days of the neighbouring months are null. */
export function weeksOf(month: string): (string | null)[][] {
  const dates = datesOf(month);
  const lead = (new Date(`${dates[0]}T00:00:00Z`).getUTCDay() + 6) % 7;
  const cells: (string | null)[] = [...Array<null>(lead).fill(null), ...dates];
  while (cells.length % 7 !== 0) cells.push(null);
  const weeks: (string | null)[][] = [];
  for (let i = 0; i < cells.length; i += 7) weeks.push(cells.slice(i, i + 7));
  return weeks;
}

/** "August 2030". */
export function monthTitle(month: string): string {
  return new Date(`${month}-01T00:00:00Z`).toLocaleDateString('en', { month: 'long', year: 'numeric', timeZone: 'UTC' });
}

export const WEEKDAYS: readonly string[] = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
