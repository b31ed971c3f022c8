/**
 * JSON Schema validation of bodies, path parameters and query strings (ajv, JSON
 * Schema 2020-12, strict, all errors), and the translation of ajv's errors into the
 * public `errors[]` of `{field, code}` (docs/contract-gaps.md, "`errors[].code` values").
 *
 * - `field`: a dotted path with indices (`address.country`, `photos[1].url`); for a
 *   missing property the path of that property; for an unknown one the unknown
 *   field's path; for the document itself `body`; for parameters the parameter name.
 * - `code`: required, unknown_field, type, format, pattern, enum, min_length,
 *   max_length, minimum, maximum, min_items, max_items, one_of, invalid.
 * - Never a submitted value: only names and codes leave this module.
 *
 * Two annotation keywords (the `x-` prefix keeps them legal in OpenAPI 3.1):
 * `x-error-field` names the field a failed `oneOf` is reported on, and `x-error-code`
 * replaces the code of a failed `pattern`/`format` (the webhook URL's one generic
 * `invalid`, spec "PUT /webhooks/endpoint").
 */
import type { TSchema } from '@sinclair/typebox';
import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { isAbsoluteUri } from '../services/kit/base';
import { storableDate, storableDateTime } from './instant-formats';
import type { Violation, ViolationCode } from './problems';
import type { Validated } from './contract-schema';

/** At most this many violations are reported for one request (the rest add nothing a client can act on). */
export const MAX_VIOLATIONS = 100;
/** Longer field-name segments (from unknown fields) are cut to this many characters. */
const MAX_SEGMENT_LENGTH = 128;

const ajv = new Ajv2020({ allErrors: true, strict: true, verbose: true, useDefaults: true });
addFormats(ajv);
// Only dates and instants the system can store, wherever a schema says `date` or `date-time`.
ajv.addFormat('date', storableDate);
ajv.addFormat('date-time', storableDateTime);
// The URI rule the catalog applies too (services/kit/base/absolute-uri.ts): one function for both sides.
ajv.addFormat('uri', isAbsoluteUri);
ajv.addKeyword({ keyword: 'x-error-field', schemaType: 'string' });
ajv.addKeyword({ keyword: 'x-error-code', schemaType: 'string' });
/**
 * A compiled request schema reporting public violations. `T` is the shape a document
 * has once it has none (filled with the schema's defaults: validation may add them;
 * contract-schema.ts derives it from the schema).
 */
export interface Validator<T> {
  /** The schema it checks (the OpenAPI document embeds this very object). */
  readonly schema: TSchema;
  /** The names of the properties the schema types as integers (a query string's digits become numbers for them). */
  readonly integerNames: readonly string[];
  violations(data: unknown): Violation[];
  /** Type-level only: the validated shape. */
  readonly shape?: T;
}

/** A validator for `schema` (compiled once); `root` names the document itself in violations. */
export function validator<S extends TSchema>(schema: S, root: 'body' | 'path' | 'query' = 'body'): Validator<Validated<S>> {
  const fn: ValidateFunction = ajv.compile(schema);
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return {
    schema,
    integerNames: Object.keys(properties).filter((name) => properties[name]!.type === 'integer'),
    violations: (data: unknown) => (fn(data) ? [] : toViolations(fn.errors ?? [], data, root)),
  };
}

const KEYWORD_CODES: Record<string, ViolationCode> = {
  required: 'required',
  additionalProperties: 'unknown_field',
  unevaluatedProperties: 'unknown_field',
  type: 'type',
  format: 'format',
  pattern: 'pattern',
  enum: 'enum',
  const: 'enum',
  minLength: 'min_length',
  maxLength: 'max_length',
  minimum: 'minimum',
  exclusiveMinimum: 'minimum',
  maximum: 'maximum',
  exclusiveMaximum: 'maximum',
  minItems: 'min_items',
  maxItems: 'max_items',
  oneOf: 'one_of',
};

/** JSON Pointer segment → text. */
const unescapePointer = (s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~');

/** Segments as a dotted path with indices, walking `data` to tell array indices from keys. */
export function fieldPath(segments: string[], data: unknown): string {
  let out = '';
  let cur: unknown = data;
  for (const raw of segments) {
    const seg = raw.length > MAX_SEGMENT_LENGTH ? `${raw.slice(0, MAX_SEGMENT_LENGTH)}…` : raw;
    if (Array.isArray(cur) && /^\d+$/.test(raw)) out += `[${seg}]`;
    else out += out === '' ? seg : `.${seg}`;
    cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[raw] : undefined;
  }
  return out;
}

/** ajv errors → public violations (deduplicated, in ajv's order, capped). */
export function toViolations(errors: ErrorObject[], data: unknown, root = 'body'): Violation[] {
  // A document of the wrong type is that one violation; what its keywords say about it adds nothing.
  if (errors.some((e) => e.keyword === 'type' && e.instancePath === '')) return [{ field: root, code: 'type' }];
  // The branches of a failed oneOf only explain it; the oneOf itself is the violation.
  const oneOfPaths = errors.filter((e) => e.keyword === 'oneOf').map((e) => `${e.schemaPath}/`);
  const out: Violation[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    if (e.keyword === 'if') continue;
    if (oneOfPaths.some((p) => e.schemaPath.startsWith(p))) continue;
    const segments = e.instancePath === '' ? [] : e.instancePath.split('/').slice(1).map(unescapePointer);
    const parent = (e.parentSchema ?? {}) as Record<string, unknown>;
    const params = e.params as Record<string, unknown>;
    if (e.keyword === 'required' && typeof params.missingProperty === 'string') segments.push(params.missingProperty);
    if (e.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') segments.push(params.additionalProperty);
    if (e.keyword === 'unevaluatedProperties' && typeof params.unevaluatedProperty === 'string') segments.push(params.unevaluatedProperty);
    if (e.keyword === 'oneOf' && typeof parent['x-error-field'] === 'string') segments.push(parent['x-error-field']);
    let code: ViolationCode = KEYWORD_CODES[e.keyword] ?? 'invalid';
    if ((e.keyword === 'pattern' || e.keyword === 'format') && typeof parent['x-error-code'] === 'string') {
      code = parent['x-error-code'] as ViolationCode;
    }
    const field = fieldPath(segments, data) || root;
    const key = `${field}\u0000${code}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ field, code });
    if (out.length >= MAX_VIOLATIONS) break;
  }
  return out;
}

/**
 * A query string as the schema sees it: integer parameters of `schema` given as
 * digit strings become numbers; anything else stays as sent (a repeated parameter
 * is an array and fails `type`).
 */
export function queryForSchema(query: Record<string, string | string[] | undefined>, integerNames: readonly string[]): Record<string, unknown> {
  // No prototype: a parameter named `__proto__` is a parameter like any other (and refused as unknown).
  const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    out[name] = integerNames.includes(name) && typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value;
  }
  return out;
}
