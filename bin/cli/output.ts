/**
 * `--output json|table`, a flag of every command. json (the default) is the one JSON
 * object of the operator interface; table is for people: a list's items as aligned
 * columns under a header of their field names, the other fields (or a record's) as
 * aligned `field  value` lines before it.
 */

/** The flag's name: every command takes it. */
export const OUTPUT_FLAG = 'output';

/** The usage problem of an --output value, if any. */
export function outputProblem(value: string): string | undefined {
  return value === 'json' || value === 'table' ? undefined : '--output must be json or table';
}

/** One cell: null as `-`, lists comma-separated, objects as JSON; never a line break. */
function cell(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map((v) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v))).join(',');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value).replace(/\s+/g, ' ');
}

/** Rows padded to each column's widest cell, two spaces apart; the last column unpadded. */
function aligned(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => r[i]!.length))) ?? [];
  return rows.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

/**
 * `out` as text: its `items` (when a list) as a table whose columns are `columns` (or
 * the first item's fields), every other field as a `field  value` line above it.
 */
export function renderTable(out: Record<string, unknown>, columns?: readonly string[]): string {
  const items = Array.isArray(out.items) ? (out.items as Record<string, unknown>[]) : undefined;
  const fields = Object.entries(out).filter(([k]) => !(items && k === 'items'));
  const lines: string[] = [];
  if (fields.length > 0) lines.push(...aligned(fields.map(([k, v]) => [k, cell(v)])));
  if (items) {
    const cols = columns ?? Object.keys(items[0] ?? {});
    if (lines.length > 0 && cols.length > 0) lines.push('');
    if (cols.length > 0) lines.push(...aligned([[...cols], ...items.map((item) => cols.map((c) => cell(item[c])))]));
  }
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}
