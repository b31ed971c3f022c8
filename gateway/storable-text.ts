/**
 * Text the system can store, for every decoded string of a contract request: path
 * parameters, query parameters, and every string anywhere in the JSON body. One
 * holding U+0000 or an unpaired surrogate (services/kit/base/storable-values.ts;
 * docs/decisions.md "Text and instants that can be stored") is a violation
 * `{field, code: invalid}`; contract-route.ts applies this to every request, beside
 * the schemas.
 */
import { isUnstorableText } from '../services/kit/base';
import type { Violation } from './problems';
import { fieldPath, MAX_VIOLATIONS } from './validate';

/**
 * How deep the walk goes. No contract schema describes anything below depth 3, so a
 * string deeper than this sits in a part of the body the schema refuses anyway; the
 * bound keeps a hostile `[[[[…` body from exhausting the stack.
 */
const MAX_DEPTH = 32;

/** True when any string inside `value` (a parsed JSON value) cannot be stored. */
function holdsUnstorableText(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return isUnstorableText(value);
  if (value === null || typeof value !== 'object' || depth >= MAX_DEPTH) return false;
  if (Array.isArray(value)) {
    for (const item of value) if (holdsUnstorableText(item, depth + 1)) return true;
    return false;
  }
  for (const key in value) if (holdsUnstorableText((value as Record<string, unknown>)[key], depth + 1)) return true;
  return false;
}

/** Collects the paths (as segments) of the strings inside `value` that cannot be stored. */
function collectUnstorable(value: unknown, segments: string[], out: string[][]): void {
  if (out.length >= MAX_VIOLATIONS) return;
  if (typeof value === 'string') {
    if (isUnstorableText(value)) out.push(segments);
    return;
  }
  if (value === null || typeof value !== 'object' || segments.length >= MAX_DEPTH) return;
  if (Array.isArray(value)) {
    value.forEach((item, i) => collectUnstorable(item, [...segments, String(i)], out));
    return;
  }
  for (const key in value) collectUnstorable((value as Record<string, unknown>)[key], [...segments, key], out);
}

/**
 * `{field, code: invalid}` for each string in a contract request that cannot be stored,
 * leaving out fields `found` already reports (an unknown field, a bad format …).
 *
 * - `body`: the parsed JSON body; fields are dotted paths with indices, the document
 *   itself `body`.
 * - `parameters`: decoded path or query parameters by name (a repeated query
 *   parameter is an array); the field is the parameter's name.
 */
export function unstorableTextViolations(value: unknown, where: 'body' | 'parameters', found: readonly Violation[]): Violation[] {
  if (!holdsUnstorableText(value)) return [];
  const paths: string[][] = [];
  if (where === 'body') {
    collectUnstorable(value, [], paths);
  } else {
    for (const [name, v] of Object.entries(value as Record<string, unknown>)) if (holdsUnstorableText(v)) paths.push([name]);
  }
  const reported = new Set(found.map((v) => v.field));
  const out: Violation[] = [];
  for (const segments of paths) {
    const field = where === 'body' ? fieldPath(segments, value) || 'body' : segments[0]!;
    if (reported.has(field)) continue;
    reported.add(field);
    out.push({ field, code: 'invalid' });
  }
  return out;
}
