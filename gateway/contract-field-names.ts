/**
 * The field names the contract has, read from its request schemas (contract/), and a violation's
 * `field` path reduced to them: what the request log stores of `errors[].field`
 * (docs/partners/request-log.md "What is recorded"). A partner's answer names an
 * unknown property as sent (cut to 128 characters a segment, validate.ts), so the
 * partner sees what was wrong; the log, kept for 14 days and read by support, keeps
 * only the contract's own names and never a partner's arbitrary key text — which can
 * hold a secret, a guest's name, or a character the database cannot store.
 */
import { REQUEST_SCHEMAS } from './contract';

/** Stands for the first segment of a path that is not a name of the contract (and all below it). */
export const UNKNOWN_FIELD = '*';

/** The roots validate.ts names a whole document by. */
const ROOTS = ['body', 'path', 'query'];

/** Every property name declared anywhere in `schema` (`properties`, `required`, `x-error-field`). */
function collectNames(schema: unknown, out: Set<string>): void {
  if (schema === null || typeof schema !== 'object') return;
  if (Array.isArray(schema)) {
    for (const item of schema) collectNames(item, out);
    return;
  }
  const s = schema as Record<string, unknown>;
  if (s.properties !== null && typeof s.properties === 'object') for (const name of Object.keys(s.properties)) out.add(name);
  if (Array.isArray(s.required)) for (const name of s.required) if (typeof name === 'string') out.add(name);
  if (typeof s['x-error-field'] === 'string') out.add(s['x-error-field']);
  for (const value of Object.values(s)) collectNames(value, out);
}

/** The contract's field names (built once). */
export const CONTRACT_FIELD_NAMES: ReadonlySet<string> = (() => {
  const names = new Set(ROOTS);
  for (const schema of Object.values(REQUEST_SCHEMAS)) collectNames(schema, names);
  return names;
})();

/** A segment: a name followed by the end, a dot or an index; or an index `[n]`. */
const NAME = /^\.?([A-Za-z_][A-Za-z0-9_]*)(?=$|[.[])/;
const INDEX = /^\[(\d{1,9})\]/;

/**
 * `field` (a path as validate.ts writes it: `photos[1].url`) with its first segment
 * that is not a contract name replaced by {@link UNKNOWN_FIELD} and the rest dropped:
 * `check_in` → `check_in`, `note` → `*`, `address.x` → `address.*`,
 * `photos[0].x.y` → `photos[0].*`.
 */
export function knownFieldPath(field: string): string {
  let out = '';
  let rest = field;
  while (rest !== '') {
    const index = out === '' ? null : INDEX.exec(rest);
    if (index) {
      out += index[0];
      rest = rest.slice(index[0].length);
      continue;
    }
    const name = NAME.exec(rest);
    // A dot separates a name from what is before it: none before the first, one before each other.
    const wellSeparated = name !== null && name[0].startsWith('.') === (out !== '');
    if (!name || !wellSeparated || !CONTRACT_FIELD_NAMES.has(name[1]!)) {
      return out === '' ? UNKNOWN_FIELD : `${out}.${UNKNOWN_FIELD}`;
    }
    out += out === '' ? name[1] : `.${name[1]}`;
    rest = rest.slice(name[0].length);
  }
  return out === '' ? UNKNOWN_FIELD : out;
}
