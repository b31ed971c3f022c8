/**
 * The OpenAPI 3.1 document of the public contract (partner-sync-api-v1, dated
 * 2026-08-26), served at `GET /v1/openapi.json` (routes/openapi.ts; no auth).
 *
 * Built from the very JSON Schemas the gateway validates with: the request bodies are
 * the objects of `schemas/*.json` themselves (JSON Schema 2020-12 is OpenAPI 3.1's
 * dialect, so they are embedded untouched, `$schema`, `$id`, `if`/`then` and the
 * `x-error-*` annotations included), and every path and query parameter's schema is
 * the object of `schemas/parameters.json` that validates it. Enumerations in the
 * response and webhook schemas reuse the same arrays where the request schemas have
 * them; problem codes and titles come from problems.ts, violation codes from the same
 * vocabulary. Nothing here is copied by hand, so the document cannot drift from the
 * validator (test/gateway/openapi.test.ts also lints it with @redocly/cli and checks
 * that the presenters' outputs fit the response schemas).
 *
 * The objects taken from `schemas/*.json` are shared with ajv: never mutate them.
 */
import acknowledgeSchema from './schemas/acknowledge.json';
import blockSchema from './schemas/block.json';
import parametersSchema from './schemas/parameters.json';
import propertySchema from './schemas/property.json';
import webhookEndpointSchema from './schemas/webhook-endpoint.json';
import { PROBLEM_CODES, PROBLEM_CONTENT_TYPE, type ProblemCode, problemDocument, ProblemError, VIOLATION_CODES } from './problems';
import { BODY_LIMIT_BYTES } from './body';

/** The path prefix of this contract version. */
export const API_VERSION = 'v1';
/** The date of the specification this document describes (spec "Versioning"). */
export const SPEC_DATE = '2026-08-26';
/** Where the document is served (also a route of the contract router). */
export const OPENAPI_PATH = `/${API_VERSION}/openapi.json`;
/** DOCS_URL's default: base of problem `type` URIs in the examples. */
const DEFAULT_DOCS_URL = 'https://docs.partner-sync.example/v1';

/** A JSON value as the document holds it. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** The parts of the document the tests and the route look at. */
export interface OpenApiDocument extends JsonObject {
  openapi: string;
  info: JsonObject;
  servers: JsonObject[];
  paths: { [path: string]: JsonObject };
  webhooks: { [name: string]: JsonObject };
  components: JsonObject & { schemas: JsonObject };
}

/** The JSON files as `Json` (they are plain JSON; TypeScript's inferred literal types say no more). */
const json = (v: unknown): JsonObject => v as JsonObject;

const ref = (kind: 'schemas' | 'responses' | 'parameters' | 'headers' | 'requestBodies', name: string): JsonObject => ({
  $ref: `#/components/${kind}/${name}`,
});

const params = parametersSchema.$defs;
const blocksQuery = params.blocks_query.properties;

/** A fixed example request id (instance `urn:psync:request:<uuid>`). */
const EXAMPLE_REQUEST_ID = '3f1c5f0e-8d2b-4c53-9a61-2b1f2e7c9d40';
const EXAMPLE_UUID = '8a5e2c61-1f3b-4d7e-9c0a-6b2d4e8f1a37';

// ---------------------------------------------------------------- headers

const RATE_LIMIT_HEADERS: Record<string, JsonObject> = {
  'RateLimit-Policy': {
    description:
      'The quota and its window, `<quota>;w=3600` (e.g. `600;w=3600`). On `POST /token` it describes the token endpoint\'s own ceiling (TOKEN_RATE_LIMIT_PER_HOUR, default `60;w=3600`).',
    schema: { type: 'string', pattern: '^[0-9]+;w=[0-9]+$', examples: ['600;w=3600'] },
  },
  'RateLimit-Limit': {
    description: 'The quota: requests per API key per window of 3600 s.',
    schema: { type: 'integer', minimum: 0, examples: [600] },
  },
  'RateLimit-Remaining': {
    description:
      'What is left in the current window, already counting this request (599 after a fresh key\'s first call; 0 on a `429`). Without a known key (a `401`), the full quota.',
    schema: { type: 'integer', minimum: 0, examples: [599] },
  },
  'RateLimit-Reset': {
    description: 'Seconds until the current window ends (windows are aligned to the Unix epoch hour).',
    schema: { type: 'integer', minimum: 1, maximum: 3600, examples: [1800] },
  },
  RateLimit: {
    description: 'The same state in the current IETF draft\'s field, `"default";r=<remaining>;t=<reset>` (additive).',
    schema: { type: 'string', examples: ['"default";r=599;t=1800'] },
  },
};

const OTHER_HEADERS: Record<string, JsonObject> = {
  'X-Request-Id': {
    description: 'The request\'s id; a problem document\'s `instance` is `urn:psync:request:<this id>`. Quote it to support.',
    schema: { type: 'string', format: 'uuid' },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying (RFC 9110): the seconds left in the current rate-limit window.',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
  'WWW-Authenticate': {
    description: 'The Bearer challenge (RFC 6750): `Bearer realm="partner-sync"`.',
    required: true,
    schema: { type: 'string', examples: ['Bearer realm="partner-sync"'] },
  },
  'Cache-Control': {
    description: '`no-store` (RFC 6749 §5.1): an access token is never cached.',
    required: true,
    schema: { type: 'string', const: 'no-store' },
  },
};

/** Headers every response of the contract carries. */
function commonHeaders(): JsonObject {
  const out: JsonObject = {};
  for (const name of [...Object.keys(RATE_LIMIT_HEADERS), 'X-Request-Id']) out[name] = ref('headers', name);
  return out;
}

function withHeaders(...names: string[]): JsonObject {
  const out = commonHeaders();
  for (const n of names) out[n] = ref('headers', n);
  return out;
}

// ---------------------------------------------------------------- schemas

const PROBLEM_CODE_NAMES = Object.keys(PROBLEM_CODES) as ProblemCode[];

const problemSchema: JsonObject = {
  type: 'object',
  description:
    'An RFC 9457 problem document (`application/problem+json`): the shape of every error except the token endpoint\'s refusals. Clients branch on `code`, never on `type`, `title` or `detail`, and must tolerate codes added later. Nothing in it ever repeats a submitted value.',
  required: ['type', 'title', 'status', 'detail', 'instance', 'code'],
  properties: {
    type: {
      type: 'string',
      format: 'uri',
      description: '`{DOCS_URL}/errors/<code with hyphens>`: a stable identifier, not to be fetched.',
      examples: [`${DEFAULT_DOCS_URL}/errors/validation-failed`],
    },
    title: { type: 'string', description: 'A short summary of the code.' },
    status: { type: 'integer', minimum: 400, maximum: 599, description: 'The HTTP status.' },
    detail: { type: 'string', description: 'Human text per code; may change.' },
    instance: {
      type: 'string',
      description: 'This occurrence: `urn:psync:request:<uuid>`, the request\'s `X-Request-Id`. Not a URL.',
      pattern: '^urn:psync:request:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
    },
    code: {
      type: 'string',
      description: `The error code; the codes of this version are ${PROBLEM_CODE_NAMES.map((c) => `\`${c}\``).join(', ')}. New codes may be added.`,
      examples: PROBLEM_CODE_NAMES,
    },
    errors: {
      type: 'array',
      description: '`validation_failed` only: every violation, in the order found (at most 100). Names fields, never their values.',
      maxItems: 100,
      items: ref('schemas', 'Violation'),
    },
    conflicts: {
      type: 'array',
      description: '`conflict` only: every colliding night, `YYYY-MM-DD`, untruncated.',
      items: { type: 'string', format: 'date' },
    },
  },
};

const violationSchema: JsonObject = {
  type: 'object',
  description: 'One schema violation.',
  required: ['field', 'code'],
  properties: {
    field: {
      type: 'string',
      description:
        'A dotted path with indices (`address.country`, `photos[1].url`); `body` for the document itself; the parameter\'s name for path and query parameters.',
    },
    code: {
      type: 'string',
      enum: [...VIOLATION_CODES],
      description: '`one_of`: both or neither of two exclusive fields; `invalid`: any other bad value.',
    },
  },
};

const tokenSchema: JsonObject = {
  type: 'object',
  required: ['access_token', 'token_type', 'expires_in', 'workspace_id', 'sandbox'],
  properties: {
    access_token: { type: 'string', description: 'Send it as `Authorization: Bearer <ACCESS_TOKEN>` on every other call.' },
    token_type: { type: 'string', const: 'Bearer' },
    expires_in: { type: 'integer', minimum: 1, maximum: 3600, description: 'Seconds the token is valid (TOKEN_TTL_SECONDS, default 900).' },
    workspace_id: { type: 'string', format: 'uuid', description: 'The workspace of the key.' },
    sandbox: { type: 'boolean', description: 'Whether the workspace is a sandbox (otherwise production).' },
  },
};

const messageSchema: JsonObject = {
  type: 'object',
  description: 'A refusal of the token endpoint: `{message}`, not a problem document.',
  required: ['message'],
  properties: { message: { type: 'string' } },
};

const upsertResult = { type: 'string', enum: ['created', 'updated'] };

const propertyUpsertSchema: JsonObject = {
  type: 'object',
  required: ['provider_id', 'result', 'listing_id', 'status', 'publishable', 'missing', 'unknown_amenities', 'photos_rejected'],
  properties: {
    provider_id: json(params.property_path.properties.provider_id),
    result: upsertResult,
    listing_id: {
      type: ['string', 'null'],
      description: 'The marketplace listing; `null` until the property can be shown to a guest, never a placeholder.',
    },
    status: json(propertySchema.properties.status),
    publishable: { type: 'boolean', description: 'Whether the property can be shown to guests as it stands.' },
    missing: {
      type: 'array',
      description:
        'Why `publishable` is false; empty when true. `photos_processing` clears on its own when photo fetching ends; `unlisted` is reported beside any real deficiency.',
      items: { type: 'string', enum: ['price', 'amenities', 'cover_photo', 'photos', 'photos_processing', 'unlisted'] },
    },
    unknown_amenities: {
      type: 'array',
      description: 'Amenity slugs not recognised: not linked, and they do not fail the push.',
      items: json(propertySchema.properties.amenities.items),
    },
    photos_rejected: {
      type: 'array',
      description: 'One entry per photo URL that did not become a photo.',
      items: {
        type: 'object',
        required: ['url', 'reason'],
        properties: {
          url: json(propertySchema.properties.photos.items.properties.url),
          reason: { type: 'string', enum: ['unreachable', 'forbidden_url', 'not_an_image', 'too_large', 'too_small'] },
        },
      },
    },
  },
};

const nights = { type: 'integer', minimum: 1, maximum: 730 };

const blockPutSchema: JsonObject = {
  type: 'object',
  required: ['result', 'nights', 'listing_id'],
  properties: {
    result: upsertResult,
    nights: { ...nights, description: 'The nights held, restated so the partner can check the count.' },
    listing_id: { ...json(blockSchema.properties.listing_id), description: 'The listing the block landed on.' },
  },
};

const blockItemSchema: JsonObject = {
  type: 'object',
  required: ['external_uid', 'listing_id', 'check_in', 'check_out', 'reason', 'nights'],
  properties: {
    external_uid: json(params.block_path.properties.external_uid),
    listing_id: json(blockSchema.properties.listing_id),
    check_in: json(blockSchema.properties.check_in),
    check_out: json(blockSchema.properties.check_out),
    reason: { type: 'string', enum: blockSchema.properties.reason.enum },
    nights,
  },
};

const blockListSchema: JsonObject = {
  type: 'object',
  description: 'One page of the calling partner\'s blocks, ordered by `check_in`, `check_out`, `external_uid`. There is no total.',
  required: ['items', 'has_more'],
  properties: {
    items: { type: 'array', maxItems: 200, items: ref('schemas', 'BlockItem') },
    has_more: { type: 'boolean', description: 'Whether a later page has rows.' },
  },
};

const endpointResponseSchema: JsonObject = {
  type: 'object',
  required: ['url', 'events', 'status'],
  properties: {
    url: json(webhookEndpointSchema.properties.url),
    events: json(webhookEndpointSchema.properties.events),
    status: {
      type: 'string',
      enum: ['pending_verification', 'active', 'suspended'],
      description:
        '`active` once the challenge was echoed; `pending_verification` when it was not (call again to retry); `suspended` after a run of abandoned deliveries, left by a registration whose challenge is echoed.',
    },
    signing_secret: {
      type: 'string',
      description: 'Present only on the call that first issues it. The HMAC key of `X-Signature` is its UTF-8 bytes exactly as returned.',
    },
  },
};

const acknowledgementSchema: JsonObject = {
  type: 'object',
  required: ['event_id', 'acknowledged_at'],
  properties: {
    event_id: json(params.deletion_request_path.properties.event_id),
    acknowledged_at: { type: 'string', format: 'date-time', description: 'When the acknowledgement was first recorded (a second call returns the first).' },
  },
};

// ---------------------------------------------------------------- webhooks

const signatureHeaders: JsonObject[] = [
  {
    name: 'X-Signature',
    in: 'header',
    required: true,
    description:
      'Lowercase hex HMAC-SHA256 keyed with the UTF-8 bytes of the signing secret over `v1:` + `X-Signature-Timestamp` + `:` + the raw body. Verify over the raw body before parsing, in constant time.',
    schema: { type: 'string', pattern: '^[0-9a-f]{64}$' },
  },
  {
    name: 'X-Signature-Timestamp',
    in: 'header',
    required: true,
    description: 'Unix seconds, covered by the signature. Reject a timestamp more than five minutes old before comparing.',
    schema: { type: 'integer', minimum: 0 },
  },
  {
    name: 'X-Signature-Previous',
    in: 'header',
    required: false,
    description:
      'The same body signed with the previous secret, only while a rotation overlap is open (its absence is normal). During a rotation accept either signature.',
    schema: { type: 'string', pattern: '^[0-9a-f]{64}$' },
  },
];

/** The envelope of a delivery of kind `kind` with `data`. */
function envelope(kind: string, description: string, data: JsonObject): JsonObject {
  return {
    type: 'object',
    description,
    required: ['event_id', 'event_type', 'occurred_at', 'data'],
    properties: {
      event_id: { type: 'string', format: 'uuid', description: 'Stable across retries: deduplicate on it and answer duplicates with 2xx.' },
      event_type: { type: 'string', const: kind },
      occurred_at: {
        type: 'string',
        format: 'date-time',
        description: 'When the event happened (for a booking, when it was confirmed), not when it was sent. Order deliveries by it, never by arrival.',
      },
      data: { type: 'object', required: Object.keys(data.properties as JsonObject), ...data },
    },
  };
}

const bookingReference = { type: 'string', minLength: 1, description: 'The marketplace\'s booking reference.' };

const webhookSchemas: Record<string, JsonObject> = {
  ChallengeEvent: envelope('endpoint.challenge', 'Sent during every `PUT /webhooks/endpoint`, only to verify the endpoint.', {
    properties: { challenge: { type: 'string', minLength: 1, description: 'Opaque and single-use: echo it within five seconds.' } },
  }),
  ChallengeAnswer: {
    type: 'object',
    description: 'The receiver\'s answer to a challenge: the body is what is checked.',
    required: ['challenge'],
    properties: { challenge: { type: 'string', description: 'The same string as `data.challenge`.' } },
  },
  BookingConfirmedEvent: envelope(
    'booking.confirmed',
    'A guest completed and paid for a booking on a synced property. No email, phone or durable guest identifier; the split between marketplace and property is not included.',
    {
      properties: {
        booking_reference: bookingReference,
        listing_id: { type: 'string', minLength: 1 },
        provider_id: { type: ['string', 'null'], description: 'The partner\'s property id; `null` when the partner did not push the property.' },
        check_in: { type: 'string', format: 'date' },
        check_out: { type: 'string', format: 'date', description: 'Departure day (exclusive).' },
        check_in_time: json(propertySchema.properties.check_in_time),
        check_out_time: json(propertySchema.properties.check_out_time),
        party_size: { type: 'integer', minimum: 1 },
        guest_name: { type: ['string', 'null'], description: 'The guest\'s name; `null` in a retry sent after the guest erased their account.' },
        amount_paid: ref('schemas', 'Money'),
      },
    },
  ),
  BookingCancelledEvent: envelope('booking.cancelled', 'A booking was cancelled. No guest name and no money.', {
    properties: {
      booking_reference: bookingReference,
      listing_id: { type: 'string', minLength: 1 },
      cancelled_at: { type: 'string', format: 'date-time' },
      initiated_by: {
        type: 'string',
        enum: ['guest', 'host'],
        description: '`guest`: the nights can be re-sold; `host`: the property withdrew.',
      },
    },
  }),
  UserErasedEvent: envelope(
    'user.erased',
    'A guest erased their account: delete the named records, then call `POST /deletion-requests/{event_id}/acknowledge` with this `event_id`. No personal data and no user id.',
    {
      properties: {
        booking_references: { type: 'array', items: bookingReference },
        provider_ids: { type: 'array', items: json(params.property_path.properties.provider_id) },
      },
    },
  ),
};

/** A webhook: the POST the service sends to the registered endpoint. */
function webhook(kind: string, schemaName: string, summary: string, extra: { challenge?: boolean } = {}): JsonObject {
  const acknowledged: JsonObject = extra.challenge
    ? {
        description: 'Verified: a 2xx answer with the JSON `{"challenge": "<same string>"}` within five seconds. Anything else leaves the endpoint `pending_verification`.',
        content: { 'application/json': { schema: ref('schemas', 'ChallengeAnswer') } },
      }
    : { description: 'Any 2xx acknowledges the delivery (also for a duplicate `event_id`).' };
  return {
    post: {
      operationId: `webhook_${kind.replace(/\./g, '_')}`,
      summary,
      description:
        'A signed HTTPS POST to the registered endpoint (port 443 or 8443), only once it is `active`' +
        (extra.challenge ? '.' : ', and only for subscribed kinds. Anything but a 2xx is retried with exponential backoff (WEBHOOK_RETRY_SCHEDULE); after the last attempt the delivery is abandoned and surfaced to operators. Redirects are never followed.'),
      tags: ['Webhooks'],
      security: [],
      parameters: signatureHeaders,
      requestBody: { required: true, content: { 'application/json': { schema: ref('schemas', schemaName) } } },
      responses: {
        '2XX': acknowledged,
        '4XX': { description: extra.challenge ? 'Not verified: the endpoint stays `pending_verification`.' : 'Not acknowledged: retried later.' },
        '5XX': { description: extra.challenge ? 'Not verified: the endpoint stays `pending_verification`.' : 'Not acknowledged: retried later.' },
      },
    },
  };
}

// ---------------------------------------------------------------- responses

/** A problem response whose `code` is `code` (and whose `status` is its status). */
function problemResponse(code: ProblemCode, description: string, opts: { headers?: string[]; extra?: JsonObject; example?: ProblemError } = {}): JsonObject {
  const status = PROBLEM_CODES[code].status;
  const narrowed: JsonObject = {
    type: 'object',
    properties: { code: { const: code }, status: { const: status } },
    ...(opts.extra ?? {}),
  };
  return {
    description,
    headers: withHeaders(...(opts.headers ?? [])),
    content: {
      [PROBLEM_CONTENT_TYPE]: {
        schema: { allOf: [ref('schemas', 'Problem'), narrowed] },
        example: json(problemDocument(opts.example ?? new ProblemError(code), DEFAULT_DOCS_URL, EXAMPLE_REQUEST_ID)),
      },
    },
  };
}

function messageResponse(description: string, message: string, headers: string[] = []): JsonObject {
  return {
    description,
    headers: { ...withHeaders(...headers) },
    content: { 'application/json': { schema: ref('schemas', 'Message'), example: { message } } },
  };
}

const responses: Record<string, JsonObject> = {
  ValidationFailed: problemResponse(
    'validation_failed',
    '`validation_failed`: the request does not match the schema — body, path and query parameters checked together, unknown fields and parameters included; also a body that is not JSON, has another content type than `application/json` or exceeds 256 KiB (field `body`).',
    {
      extra: { required: ['errors'] },
      example: new ProblemError('validation_failed', { errors: [{ field: 'address.country', code: 'enum' }, { field: 'photos[1].url', code: 'format' }] }),
    },
  ),
  Unauthorized: problemResponse('unauthorized', '`unauthorized`: a missing, malformed or expired access token, or a revoked key. Not counted.', {
    headers: ['WWW-Authenticate'],
  }),
  WorkspaceScopeMismatch: problemResponse(
    'workspace_scope_mismatch',
    '`workspace_scope_mismatch`: the token\'s environment does not match the addressed workspace, or the workspace does not resolve.',
  ),
  PropertyNotFound: problemResponse(
    'property_not_found',
    '`property_not_found`: the listing does not exist or belongs to another tenant (indistinguishable).',
  ),
  DeletionRequestNotFound: problemResponse(
    'deletion_request_not_found',
    '`deletion_request_not_found`: no deletion request with this `event_id` for this partner (unknown or another partner\'s: indistinguishable).',
  ),
  Conflict: problemResponse('conflict', '`conflict`: nights collide with a marketplace booking or live hold; nothing was written, the whole range is refused.', {
    extra: { required: ['conflicts'] },
    example: new ProblemError('conflict', { conflicts: ['2030-05-01', '2030-05-02'] }),
  }),
  RateLimited: problemResponse('rate_limited', '`rate_limited`: the key\'s quota for the current window is used up. This request was not counted.', {
    headers: ['Retry-After'],
  }),
  InternalError: problemResponse('internal_error', '`internal_error`: a fault on the service\'s side; idempotent requests may be retried.'),
  NotEnabled: problemResponse(
    'not_enabled',
    '`not_enabled`: the request was valid, but this contract is not enabled for the workspace (every production workspace; blocks addressed by `provider_id` in every environment). Nothing was written.',
  ),
  ServiceUnavailable: problemResponse('service_unavailable', '`service_unavailable`: a capability this request needs is not available; nothing was written. Retry later.'),
  TokenRefused: messageResponse(
    'An unknown, revoked, wrong or missing API key: one identical refusal.',
    'invalid API key',
    ['WWW-Authenticate'],
  ),
  TokenRateLimited: messageResponse(
    'Too many token exchanges for this API key in the current window (TOKEN_RATE_LIMIT_PER_HOUR).',
    'too many token requests for this API key; retry later',
    ['Retry-After'],
  ),
  TokenNotConfigured: messageResponse('The token endpoint is not configured (no token-signing key).', 'the token endpoint is not configured'),
};

/** The problem responses of a token-authenticated contract endpoint, plus `extra` (e.g. 404, 409). */
function contractErrors(extra: Record<string, string> = {}): JsonObject {
  const out: JsonObject = {
    '400': ref('responses', 'ValidationFailed'),
    '401': ref('responses', 'Unauthorized'),
    '403': ref('responses', 'WorkspaceScopeMismatch'),
  };
  for (const [status, name] of Object.entries(extra)) out[status] = ref('responses', name);
  Object.assign(out, {
    '429': ref('responses', 'RateLimited'),
    '500': ref('responses', 'InternalError'),
    '501': ref('responses', 'NotEnabled'),
    '503': ref('responses', 'ServiceUnavailable'),
  });
  return out;
}

function ok(description: string, schema: string): JsonObject {
  return { description, headers: commonHeaders(), content: { 'application/json': { schema: ref('schemas', schema) } } };
}

function jsonBody(schema: string, description: string, required = true): JsonObject {
  return { required, description, content: { 'application/json': { schema: ref('schemas', schema) } } };
}

// ---------------------------------------------------------------- parameters

function parameter(name: string, where: 'path' | 'query', schema: unknown, description: string): JsonObject {
  return { name, in: where, required: where === 'path', description, schema: json(schema) };
}

const parameters: Record<string, JsonObject> = {
  provider_id: parameter('provider_id', 'path', params.property_path.properties.provider_id, 'The partner\'s own property identifier, unique within its integration (1–128 characters).'),
  external_uid: parameter('external_uid', 'path', params.block_path.properties.external_uid, 'The partner\'s own block identifier, typically a reservation id (1–255 characters).'),
  event_id: parameter('event_id', 'path', params.deletion_request_path.properties.event_id, 'The `event_id` of the `user.erased` delivery being acknowledged.'),
  from: parameter('from', 'query', blocksQuery.from, 'Only blocks holding a night on or after this date (a block whose `check_out` equals `from` is not returned).'),
  to: parameter('to', 'query', blocksQuery.to, 'Only blocks holding a night on or before this date.'),
  page: parameter('page', 'query', blocksQuery.page, '1-based page.'),
  page_size: parameter('page_size', 'query', blocksQuery.page_size, 'Rows per page.'),
};

// ---------------------------------------------------------------- the document

const DESCRIPTION = [
  'A two-way synchronisation between a channel partner\'s platform and the booking marketplace: partners push properties and calendar blocks, register one webhook endpoint and receive signed deliveries.',
  '',
  `Specification \`partner-sync-api-v1\`, dated ${SPEC_DATE}; every path is relative to \`{base_url}\`, which ends with \`/${API_VERSION}\`. Published schemas are frozen; later changes are additive, so clients must tolerate new optional fields and new error codes.`,
  '',
  '**Authentication.** Exchange the API key at `POST /token` (`Authorization: Bearer <API_KEY>`), then send `Authorization: Bearer <ACCESS_TOKEN>` on every other call; the header is the only place read.',
  '',
  '**Order of checks.** Authentication (`401`), rate limit (`429`, not counted), authorisation (`403`), validation (`400`), then `501 not_enabled` (production workspaces, blocks addressed by `provider_id`): a `501` means the request was valid.',
  '',
  `**Limits.** 600 contract requests per API key per window of 3600 s (RATE_LIMIT_PER_HOUR), shown on every response in the \`RateLimit-*\` headers; request bodies up to ${BODY_LIMIT_BYTES / 1024} KiB.`,
  '',
  '**Errors.** Every error except a token endpoint refusal is an `application/problem+json` document. A path no endpoint has is `404 not_found`; a known path with another method is `405 method_not_allowed` with `Allow`.',
].join('\n');

/** Builds the document (pure; the objects from schemas/*.json are shared, not copied). */
export function buildOpenApiDocument(): OpenApiDocument {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Partner Synchronisation API',
      version: `${API_VERSION} (${SPEC_DATE})`,
      summary: `partner-sync-api-${API_VERSION}, specification dated ${SPEC_DATE}`,
      description: DESCRIPTION,
      license: { name: 'Proprietary', url: `${DEFAULT_DOCS_URL}/terms` },
      contact: { name: 'Partner Sync integration support', url: DEFAULT_DOCS_URL },
      'x-spec-date': SPEC_DATE,
    },
    servers: [{ url: `/${API_VERSION}`, description: 'The gateway serving this document (`{base_url}` ends with `/v1`).' }],
    security: [{ accessToken: [] }],
    tags: [
      { name: 'Authentication', description: 'Exchanging an API key for an access token.' },
      { name: 'Properties', description: 'Properties the partner manages, pushed as a whole.' },
      { name: 'Blocks', description: 'Calendar blocks: nights already taken on the partner\'s platform.' },
      { name: 'Webhooks', description: 'The one webhook endpoint of a workspace and the signed deliveries sent to it.' },
      { name: 'Deletion requests', description: 'Confirming that a `user.erased` request was carried out.' },
      { name: 'Meta', description: 'This document.' },
    ],
    paths: {
      '/token': {
        post: {
          operationId: 'exchangeToken',
          summary: 'Exchange an API key for an access token',
          description:
            'The API key is read only from `Authorization: Bearer <API_KEY>`; the body is ignored. An unknown key, a revoked key, a wrong secret and a missing header all get the one identical `401`. Its own ceiling per key (TOKEN_RATE_LIMIT_PER_HOUR, default 60 per hour) is what its `RateLimit-*` headers describe; exchanges do not count toward the contract quota.',
          tags: ['Authentication'],
          security: [{ apiKey: [] }],
          responses: {
            '200': {
              description: 'A fresh access token.',
              headers: withHeaders('Cache-Control'),
              content: { 'application/json': { schema: ref('schemas', 'Token') } },
            },
            '401': ref('responses', 'TokenRefused'),
            '429': ref('responses', 'TokenRateLimited'),
            '500': ref('responses', 'InternalError'),
            '503': ref('responses', 'TokenNotConfigured'),
          },
        },
      },
      '/properties/{provider_id}': {
        parameters: [ref('parameters', 'provider_id')],
        put: {
          operationId: 'upsertProperty',
          summary: 'Create or replace a property',
          description:
            'The body is the complete property: anything omitted is removed (replace, not merge). A property with no price, photos or amenities is accepted and held incomplete; the first push of a complete property answers `publishable: false` with `photos_processing`.',
          tags: ['Properties'],
          requestBody: jsonBody('Property', 'The complete property.'),
          responses: { '200': ok('Created or updated.', 'PropertyUpsert'), ...contractErrors() },
        },
      },
      '/blocks': {
        get: {
          operationId: 'listBlocks',
          summary: 'List the partner\'s blocks',
          description:
            'Only the calling partner\'s blocks in the key\'s workspace. A page past the end is `200` with `items: []` and `has_more: false`.',
          tags: ['Blocks'],
          parameters: [ref('parameters', 'from'), ref('parameters', 'to'), ref('parameters', 'page'), ref('parameters', 'page_size')],
          responses: { '200': ok('One page of blocks.', 'BlockList'), ...contractErrors() },
        },
      },
      '/blocks/{external_uid}': {
        parameters: [ref('parameters', 'external_uid')],
        put: {
          operationId: 'putBlock',
          summary: 'Create, re-confirm or move a block',
          description:
            'Exactly one of `provider_id` and `listing_id` (addressing by `provider_id` answers `501` in every environment: use `listing_id`). At most 730 nights; the departure day stays sellable. An identical retry is a no-op (`updated`); other dates move the block in one step. The conflict scan runs on every push.',
          tags: ['Blocks'],
          requestBody: jsonBody('Block', 'The block.'),
          responses: {
            '200': ok('Created (`created`) or re-confirmed or moved (`updated`).', 'BlockPut'),
            ...contractErrors({ '404': 'PropertyNotFound', '409': 'Conflict' }),
          },
        },
        delete: {
          operationId: 'deleteBlock',
          summary: 'Release a block',
          description:
            'Frees only the nights the block still holds; a night unavailable for another reason stays unavailable. `204` whether or not the block existed. To shorten a stay, `PUT` the shorter range.',
          tags: ['Blocks'],
          responses: { '204': { description: 'Released (or there was nothing to release).', headers: commonHeaders() }, ...contractErrors() },
        },
      },
      '/webhooks/endpoint': {
        put: {
          operationId: 'putWebhookEndpoint',
          summary: 'Register the webhook endpoint',
          description:
            'One endpoint per workspace. Every call POSTs a signed `endpoint.challenge` to the URL during the call: echoed within five seconds → `active`, else `pending_verification`. Re-registration replaces the URL and event list and keeps the secret; `events: []` pauses delivery. A refused URL is one generic violation `{url, invalid}` that does not say which check failed.',
          tags: ['Webhooks'],
          requestBody: jsonBody('WebhookEndpoint', 'The endpoint and the subscribed kinds.'),
          responses: { '200': ok('Registered; `signing_secret` on the first registration only.', 'WebhookEndpointState'), ...contractErrors() },
        },
      },
      '/deletion-requests/{event_id}/acknowledge': {
        parameters: [ref('parameters', 'event_id')],
        post: {
          operationId: 'acknowledgeDeletionRequest',
          summary: 'Acknowledge a carried-out erasure',
          description:
            'Call it only once the records named by the `user.erased` delivery are deleted. An empty body is `{}`. Acknowledging twice answers `200` again with the first `acknowledged_at`. Sandbox only.',
          tags: ['Deletion requests'],
          requestBody: jsonBody('DeletionAcknowledgement', 'Optional `completed_at` (defaults to the time of receipt); the body may be empty.', false),
          responses: {
            '200': ok('Acknowledged.', 'DeletionAcknowledgementState'),
            ...contractErrors({ '404': 'DeletionRequestNotFound' }),
          },
        },
      },
      '/openapi.json': {
        get: {
          operationId: 'getOpenApiDocument',
          summary: 'This document',
          description: 'The OpenAPI 3.1 document of this contract. No authentication; not counted toward any quota.',
          tags: ['Meta'],
          security: [],
          responses: {
            '200': {
              description: 'The OpenAPI document.',
              headers: commonHeaders(),
              content: { 'application/json': { schema: { type: 'object', required: ['openapi', 'info'], properties: { openapi: { type: 'string' }, info: { type: 'object' } } } } },
            },
            '500': ref('responses', 'InternalError'),
          },
        },
      },
    },
    webhooks: {
      'endpoint.challenge': webhook('endpoint.challenge', 'ChallengeEvent', 'Endpoint verification challenge', { challenge: true }),
      'booking.confirmed': webhook('booking.confirmed', 'BookingConfirmedEvent', 'A booking was confirmed'),
      'booking.cancelled': webhook('booking.cancelled', 'BookingCancelledEvent', 'A booking was cancelled'),
      'user.erased': webhook('user.erased', 'UserErasedEvent', 'A guest erased their account'),
    },
    components: {
      securitySchemes: {
        accessToken: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'pst_<payload>.<mac>',
          description: 'An access token from `POST /token`, valid `expires_in` seconds (15 minutes by default, never more than one hour).',
        },
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'psk_<key_id>_<secret>',
          description: 'The long-lived API key of one workspace. It opens only `POST /token`.',
        },
      },
      schemas: {
        // The gateway's own validation schemas, as they are.
        Property: json(propertySchema),
        Block: json(blockSchema),
        WebhookEndpoint: json(webhookEndpointSchema),
        DeletionAcknowledgement: json(acknowledgeSchema),
        Money: json(propertySchema.properties.base_rate),
        // Responses.
        Token: tokenSchema,
        Message: messageSchema,
        PropertyUpsert: propertyUpsertSchema,
        BlockPut: blockPutSchema,
        BlockItem: blockItemSchema,
        BlockList: blockListSchema,
        WebhookEndpointState: endpointResponseSchema,
        DeletionAcknowledgementState: acknowledgementSchema,
        Problem: problemSchema,
        Violation: violationSchema,
        // Webhook deliveries.
        ...webhookSchemas,
      },
      responses,
      parameters,
      headers: { ...RATE_LIMIT_HEADERS, ...OTHER_HEADERS },
    },
  };
}

let cached: { doc: OpenApiDocument; text: string } | undefined;

/** The document and its JSON text, built once per process. */
export function openApiDocument(): { doc: OpenApiDocument; text: string } {
  if (!cached) {
    const doc = buildOpenApiDocument();
    cached = { doc, text: JSON.stringify(doc) };
  }
  return cached;
}
