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
import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { isAbsoluteUri } from '../services/kit/base';
import { storableDate, storableDateTime } from './instant-formats';
import type { Violation, ViolationCode } from './problems';
import propertySchema from './schemas/property.json';
import blockSchema from './schemas/block.json';
import webhookEndpointSchema from './schemas/webhook-endpoint.json';
import acknowledgeSchema from './schemas/acknowledge.json';
import parametersSchema from './schemas/parameters.json';
import testEventSchema from './schemas/test-event.json';

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
/** Every JSON Schema of the contract (contract-field-names.ts reads their field names). */
export const CONTRACT_SCHEMAS: readonly object[] = [propertySchema, blockSchema, webhookEndpointSchema, acknowledgeSchema, testEventSchema, parametersSchema];
for (const s of CONTRACT_SCHEMAS) ajv.addSchema(s);

/**
 * A compiled schema reporting public violations. `T` is the shape a document has once
 * it has none (filled with the schema's defaults: validation may add them).
 */
export interface Validator<T> {
  violations(data: unknown): Violation[];
  /** Type-level only: the validated shape. */
  readonly shape?: T;
}

function compiled(ref: string): ValidateFunction {
  const fn = ajv.getSchema(ref);
  if (!fn) throw new Error(`schema ${ref} is not registered`);
  return fn;
}

/** A validator for the schema at `ref` (an `$id`, optionally with a `#/$defs/…` pointer); `root` names the document itself in violations. */
export function validator<T>(ref: string, root = 'body'): Validator<T> {
  const fn = compiled(ref);
  return { violations: (data: unknown) => (fn(data) ? [] : toViolations(fn.errors ?? [], data, root)) };
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

const PARAMETERS = 'https://schemas.partner-sync.example/v1/parameters.json';

/** The compiled schemas of the contract, by what they check. */
export const schemas = {
  property: validator<PropertyBody>('https://schemas.partner-sync.example/v1/property.json'),
  block: validator<BlockBody>('https://schemas.partner-sync.example/v1/block.json'),
  webhookEndpoint: validator<WebhookEndpointBody>('https://schemas.partner-sync.example/v1/webhook-endpoint.json'),
  acknowledge: validator<AcknowledgeBody>('https://schemas.partner-sync.example/v1/acknowledge.json'),
  testEvent: validator<TestEventBody>('https://schemas.partner-sync.example/v1/test-event.json'),
  propertyPath: validator<{ provider_id: string }>(`${PARAMETERS}#/$defs/property_path`, 'path'),
  blockPath: validator<{ external_uid: string }>(`${PARAMETERS}#/$defs/block_path`, 'path'),
  deletionRequestPath: validator<{ event_id: string }>(`${PARAMETERS}#/$defs/deletion_request_path`, 'path'),
  noParameters: validator<Record<string, never>>(`${PARAMETERS}#/$defs/no_parameters`, 'query'),
  blocksQuery: validator<BlocksQuery>(`${PARAMETERS}#/$defs/blocks_query`, 'query'),
  propertiesQuery: validator<PropertiesQuery>(`${PARAMETERS}#/$defs/properties_query`, 'query'),
  listingPath: validator<{ listing_id: string }>(`${PARAMETERS}#/$defs/listing_path`, 'path'),
  listingNightsQuery: validator<ListingNightsQuery>(`${PARAMETERS}#/$defs/listing_nights_query`, 'query'),
  deliveryPath: validator<{ event_id: string }>(`${PARAMETERS}#/$defs/delivery_path`, 'path'),
  deliveriesQuery: validator<DeliveriesQuery>(`${PARAMETERS}#/$defs/deliveries_query`, 'query'),
  eventsQuery: validator<EventsQuery>(`${PARAMETERS}#/$defs/events_query`, 'query'),
  endpointCheckPath: validator<{ id: string }>(`${PARAMETERS}#/$defs/endpoint_check_path`, 'path'),
  requestsQuery: validator<RequestsQuery>(`${PARAMETERS}#/$defs/requests_query`, 'query'),
};

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

// ---- Public JSON shapes the schemas guarantee (kept in step with schemas/*.json) ----

export interface MoneyBody {
  value: string;
  currency: string;
}

export interface PropertyBody {
  name: string;
  description?: string;
  property_type: string;
  address: {
    line1: string;
    city: string;
    region?: string;
    postal_code?: string;
    country: string;
    latitude: number;
    longitude: number;
  };
  occupancy: { max_guests: number; bedrooms: number; beds: number; bathrooms: number };
  base_rate?: MoneyBody;
  amenities?: string[];
  photos?: { url: string; position: number }[];
  check_in_time: string;
  check_out_time: string;
  status: 'listed' | 'unlisted';
}

export type BlockReasonName = 'reserved' | 'maintenance' | 'owner_stay' | 'other';

export interface BlockBody {
  provider_id?: string;
  listing_id?: string;
  check_in: string;
  check_out: string;
  /** Filled with the default `reserved` by validation when absent. */
  reason: BlockReasonName;
}

export type WebhookEventName = 'booking.confirmed' | 'booking.cancelled' | 'user.erased';

export interface WebhookEndpointBody {
  url: string;
  events: WebhookEventName[];
}

export interface AcknowledgeBody {
  completed_at?: string;
}

export interface BlocksQuery {
  from?: string;
  to?: string;
  /** Default 1 (filled by validation). */
  page: number;
  /** Default 50 (filled by validation). */
  page_size: number;
}

export interface PropertiesQuery {
  /** Default 1 (filled by validation). */
  page: number;
  /** Default 50 (filled by validation). */
  page_size: number;
}

export interface ListingNightsQuery {
  from: string;
  /** Exclusive. */
  to: string;
}

export interface TestEventBody {
  event_type: WebhookEventName;
  listing_id: string;
  booking_reference?: string;
  check_in?: string;
  check_out?: string;
  initiated_by?: 'guest' | 'host';
}

/** GET /v1/events. */
export interface EventsQuery {
  /** A previous page's `next_after` (digits); absent: from the oldest event kept. */
  after?: string;
  /** Default 50 (filled by validation). */
  limit: number;
}

export type DeliveryStateName = 'pending' | 'delivered' | 'abandoned';

export interface DeliveriesQuery {
  state?: DeliveryStateName;
  event_type?: WebhookEventName;
  /** Default 1 (filled by validation). */
  page: number;
  /** Default 50 (filled by validation). */
  page_size: number;
}

export interface RequestsQuery {
  status?: number;
  code?: string;
  /** Default 50 (filled by validation). */
  limit: number;
  /** The `next_cursor` of the previous page. */
  after?: string;
}
