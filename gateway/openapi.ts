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
 * The same document is committed as docs/openapi.json (`npm run openapi:write`,
 * openapi-write.ts; a test fails while the file is stale). It never depends on the
 * server's configuration: deployment values (quotas, token lifetime, the base of
 * problem `type` URIs) appear as the configuration's defaults, described as such, and
 * no operator setting is named.
 *
 * Examples: every operation has request and response examples; a request example and
 * the response example of the same name belong together, and an error example whose
 * request cannot be a valid request example carries it in `x-request`. The `errors[]`
 * of the `400` examples are what the gateway's own validators report for that request;
 * test/gateway/openapi-examples.test.ts sends every example to a running system.
 *
 * The objects taken from `schemas/*.json` are shared with ajv: never mutate them.
 */
import acknowledgeSchema from './schemas/acknowledge.json';
import blockSchema from './schemas/block.json';
import parametersSchema from './schemas/parameters.json';
import propertySchema from './schemas/property.json';
import webhookEndpointSchema from './schemas/webhook-endpoint.json';
import { PROBLEM_CODES, PROBLEM_CONTENT_TYPE, type ProblemCode, problemDocument, ProblemError, validationFailed, VIOLATION_CODES } from './problems';
import { BODY_LIMIT_BYTES } from './body';
import { WWW_AUTHENTICATE } from './connect-errors';
import { INVALID_API_KEY, TOO_MANY_FAILURES } from './routes/token';
import { COMPLETED_AT_MAX_AHEAD_MS } from './routes/deletion-requests';
import { schemas as validators, queryForSchema, type Validator } from './validate';
import { sandboxOpenApi } from './openapi-sandbox';
import type { Json, JsonObject } from './json';
import { settings } from '../services/kit/config';
import { MAX_NIGHTS, MAX_TOKEN_TTL_SECONDS, PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, RATE_WINDOW_SECONDS } from '../services/kit/limits';

/** The path prefix of this contract version. */
export const API_VERSION = 'v1';
/** The date of the specification this document describes (spec "Versioning"). */
export const SPEC_DATE = '2026-08-26';
/** Where the document is served (also a route of the contract router). */
export const OPENAPI_PATH = `/${API_VERSION}/openapi.json`;
/**
 * The document never varies with the server's configuration: where a value is the
 * deployment's (quotas, token lifetime, the base of problem `type` URIs), it shows the
 * configuration's default and says that the `RateLimit-*` headers, `expires_in` and
 * the problem documents carry the deployment's actual values. No setting is named.
 */
const DEFAULTS = {
  docsUrl: settings.docsUrl.default,
  contractQuota: settings.rateLimitPerHour.default,
  tokenQuota: settings.tokenRateLimitPerHour.default,
  tokenTtlSeconds: settings.tokenTtlSeconds.default,
} as const;
const DEFAULT_DOCS_URL = DEFAULTS.docsUrl;
/** Where the generated document is committed (npm run openapi:write). */
export const OPENAPI_FILE = 'docs/openapi.json';

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
    description: `The quota and its window, \`<quota>;w=${RATE_WINDOW_SECONDS}\`. The quota is the deployment's: by default \`${DEFAULTS.contractQuota};w=${RATE_WINDOW_SECONDS}\` on the contract endpoints; on \`POST /token\` it describes the token endpoint's own ceiling (by default \`${DEFAULTS.tokenQuota};w=${RATE_WINDOW_SECONDS}\`). Read it rather than assuming a number.`,
    schema: { type: 'string', pattern: '^[0-9]+;w=[0-9]+$', examples: [`${DEFAULTS.contractQuota};w=${RATE_WINDOW_SECONDS}`] },
  },
  'RateLimit-Limit': {
    description: `The quota: requests per API key per window of ${RATE_WINDOW_SECONDS} s (by default ${DEFAULTS.contractQuota}; ${DEFAULTS.tokenQuota} on \`POST /token\`).`,
    schema: { type: 'integer', minimum: 0, examples: [DEFAULTS.contractQuota] },
  },
  'RateLimit-Remaining': {
    description: `What is left in the current window, already counting this request (quota − 1 after a fresh key's first call, e.g. ${DEFAULTS.contractQuota - 1}; 0 on a \`429\`). Without a known key (a \`401\`), the full quota.`,
    schema: { type: 'integer', minimum: 0, examples: [DEFAULTS.contractQuota - 1] },
  },
  'RateLimit-Reset': {
    description: 'Seconds until the current window ends (windows are aligned to the Unix epoch hour).',
    schema: { type: 'integer', minimum: 1, maximum: RATE_WINDOW_SECONDS, examples: [RATE_WINDOW_SECONDS / 2] },
  },
  RateLimit: {
    description: 'The same state in the current IETF draft\'s field, `"default";r=<remaining>;t=<reset>` (additive).',
    schema: { type: 'string', examples: [`"default";r=${DEFAULTS.contractQuota - 1};t=1800`] },
  },
};

const OTHER_HEADERS: Record<string, JsonObject> = {
  'X-Request-Id': {
    description: "The request's id; a problem document's `instance` is `urn:psync:request:<this id>`. Quote it to support.",
    schema: { type: 'string', format: 'uuid' },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying (RFC 9110): the seconds left in the current rate-limit window.',
    required: true,
    schema: { type: 'integer', minimum: 1, examples: [1800] },
  },
  'WWW-Authenticate': {
    description: 'The Bearer challenge (RFC 6750): `Bearer realm="partner-sync"`.',
    required: true,
    schema: { type: 'string', examples: [WWW_AUTHENTICATE] },
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
    "An RFC 9457 problem document (`application/problem+json`): the shape of every error except the token endpoint's refusals. Clients branch on `code`, never on `type`, `title` or `detail`, and must tolerate codes added later. Nothing in it ever repeats a submitted value.",
  required: ['type', 'title', 'status', 'detail', 'instance', 'code'],
  properties: {
    type: {
      type: 'string',
      format: 'uri',
      description: '`<documentation base>/errors/<code with hyphens>`, for example the one below: a stable identifier, not to be fetched.',
      examples: [`${DEFAULT_DOCS_URL}/errors/validation-failed`],
    },
    title: { type: 'string', description: 'A short summary of the code.' },
    status: { type: 'integer', minimum: 400, maximum: 599, description: 'The HTTP status.' },
    detail: { type: 'string', description: 'Human text per code; may change.' },
    instance: {
      type: 'string',
      description: "This occurrence: `urn:psync:request:<uuid>`, the request's `X-Request-Id`. Not a URL.",
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
      description: "A dotted path with indices (`address.country`, `photos[1].url`); `body` for the document itself; the parameter's name for path and query parameters.",
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
    expires_in: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_TOKEN_TTL_SECONDS,
      description: `Seconds the token is valid: the deployment's token lifetime, ${DEFAULTS.tokenTtlSeconds} (${DEFAULTS.tokenTtlSeconds / 60} minutes) by default and never more than ${MAX_TOKEN_TTL_SECONDS}. Use this value rather than a constant.`,
    },
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

const nights = { type: 'integer', minimum: 1, maximum: MAX_NIGHTS };

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
  description: "One page of the calling partner's blocks, ordered by `check_in`, `check_out`, `external_uid`. There is no total.",
  required: ['items', 'has_more'],
  properties: {
    items: { type: 'array', maxItems: PAGE_SIZE_MAX, items: ref('schemas', 'BlockItem') },
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
    example: '9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c0b2d4f6e8a1c3e5b7d9f0a2c4e6b8d1f',
  },
  {
    name: 'X-Signature-Timestamp',
    in: 'header',
    required: true,
    description: 'Unix seconds, covered by the signature. Reject a timestamp more than five minutes old before comparing.',
    schema: { type: 'integer', minimum: 0 },
    example: 1789372803,
  },
  {
    name: 'X-Signature-Previous',
    in: 'header',
    required: false,
    description: 'The same body signed with the previous secret, only while a rotation overlap is open (its absence is normal). During a rotation accept either signature.',
    schema: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    example: '3a5c7e9b1d2f4a6c8e0b2d4f6a8c1e3b5d7f9a0c2e4b6d8f1a3c5e7b9d0f2a4c',
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
      test: {
        type: 'boolean',
        const: true,
        description: 'Present only on a test event (`POST /sandbox/events`, sandbox tools), always `true`; absent from every real delivery.',
      },
    },
  };
}

const bookingReference = { type: 'string', minLength: 1, description: "The marketplace's booking reference." };

const webhookSchemas: Record<string, JsonObject> = {
  ChallengeEvent: envelope('endpoint.challenge', 'Sent during every `PUT /webhooks/endpoint`, only to verify the endpoint.', {
    properties: { challenge: { type: 'string', minLength: 1, description: 'Opaque and single-use: echo it within five seconds.' } },
  }),
  ChallengeAnswer: {
    type: 'object',
    description: "The receiver's answer to a challenge: the body is what is checked.",
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
        provider_id: { type: ['string', 'null'], description: "The partner's property id; `null` when the partner did not push the property." },
        check_in: { type: 'string', format: 'date' },
        check_out: { type: 'string', format: 'date', description: 'Departure day (exclusive).' },
        check_in_time: json(propertySchema.properties.check_in_time),
        check_out_time: json(propertySchema.properties.check_out_time),
        party_size: { type: 'integer', minimum: 1 },
        guest_name: { type: ['string', 'null'], description: "The guest's name; `null` in a retry sent after the guest erased their account." },
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

/** Delivery ids of the examples: the `user.erased` one is the `event_id` the acknowledge examples use. */
const EXAMPLE_DELIVERY_IDS = { booking: '2d6e8a41-7b3c-4f5e-a9d2-c1b0e4f7a863', erased: '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f' };

/** A webhook: the POST the service sends to the registered endpoint. */
function webhook(kind: string, schemaName: string, summary: string, data: JsonObject, extra: { challenge?: boolean } = {}): JsonObject {
  const name = kind.replace(/^.*\./, '');
  const delivery = {
    event_id: extra.challenge ? '5b0d9a4e-2c7f-4e1b-9d3a-8f6c1e2b7a90' : kind === 'user.erased' ? EXAMPLE_DELIVERY_IDS.erased : EXAMPLE_DELIVERY_IDS.booking,
    event_type: kind,
    occurred_at: '2026-09-14T08:00:03.117Z',
    data,
  };
  const acknowledged: JsonObject = extra.challenge
    ? {
        description: 'Verified: a 2xx answer with the JSON `{"challenge": "<same string>"}` within five seconds. Anything else leaves the endpoint `pending_verification`.',
        content: {
          'application/json': {
            schema: ref('schemas', 'ChallengeAnswer'),
            examples: { echo: { summary: 'The challenge, echoed', value: { challenge: data.challenge as string } } },
          },
        },
      }
    : { description: 'Any 2xx acknowledges the delivery (also for a duplicate `event_id`).' };
  return {
    post: {
      operationId: `webhook_${kind.replace(/\./g, '_')}`,
      summary,
      description:
        'A signed HTTPS POST to the registered endpoint (port 443 or 8443), only once it is `active`' +
        (extra.challenge
          ? '.'
          : ", and only for subscribed kinds. Anything but a 2xx is retried with exponential backoff (about a day in all); after the last attempt the delivery is abandoned and surfaced to the service's operators, who can replay it with the same `event_id`, and `POST /webhooks/deliveries/{event_id}/resend` sends it again. Redirects are never followed."),
      tags: ['Webhooks'],
      security: [],
      parameters: signatureHeaders,
      requestBody: {
        required: true,
        content: { 'application/json': { schema: ref('schemas', schemaName), examples: { [name]: { summary, value: json(delivery) } } } },
      },
      responses: {
        '2XX': acknowledged,
        '4XX': { description: extra.challenge ? 'Not verified: the endpoint stays `pending_verification`.' : 'Not acknowledged: retried later.' },
        '5XX': { description: extra.challenge ? 'Not verified: the endpoint stays `pending_verification`.' : 'Not acknowledged: retried later.' },
      },
    },
  };
}

// ---------------------------------------------------------------- examples

/**
 * A request as an example states it: path and query parameters (as sent, text) and
 * the body. Parameters not given take the parameters' own examples.
 */
interface ExampleRequest {
  path?: Record<string, string>;
  query?: Record<string, string>;
  body?: Json;
}

/** The placeholders the examples use for the partner's identifiers. */
export const EXAMPLE_IDS = {
  providerId: 'villa-42',
  externalUid: 'resv-100234',
  eventId: '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f',
  listingId: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j',
  unknownListingId: 'lst_zzzzzzzzzzzzzzzzzzzzzzzz',
  workspaceId: EXAMPLE_UUID,
  webhookUrl: 'https://hooks.partner.example/psync',
  /** A test delivery's `event_id` (the delivery log's examples). */
  deliveryEventId: '6c3e9b2a-4f1d-4a8e-b7c5-1d2e3f4a5b6c',
} as const;

const examplePropertyComplete: JsonObject = {
  name: 'Villa Azure',
  description: 'A quiet two-bedroom villa with a garden, ten minutes on foot from the beach.',
  property_type: 'villa',
  address: {
    line1: '12 Chemin des Pins',
    city: 'Antibes',
    region: "Provence-Alpes-Côte d'Azur",
    postal_code: '06600',
    country: 'FR',
    latitude: 43.5804,
    longitude: 7.1251,
  },
  occupancy: { max_guests: 4, bedrooms: 2, beds: 3, bathrooms: 1 },
  base_rate: { value: '180.00', currency: 'EUR' },
  amenities: ['wifi', 'kitchen', 'pool', 'air_conditioning', 'parking'],
  photos: [
    { url: 'https://images.partner.example/villa-42/living-room.jpg', position: 0 },
    { url: 'https://images.partner.example/villa-42/terrace.jpg', position: 1 },
  ],
  check_in_time: '15:00',
  check_out_time: '11:00',
  status: 'listed',
};

const examplePropertyIncomplete: JsonObject = {
  name: 'Studio Port Vauban',
  property_type: 'apartment',
  address: { line1: '3 Quai Henri Rambaud', city: 'Antibes', country: 'FR', latitude: 43.5851, longitude: 7.1283 },
  occupancy: { max_guests: 2, bedrooms: 0, beds: 1, bathrooms: 1 },
  check_in_time: '16:00',
  check_out_time: '10:00',
  status: 'unlisted',
};

const exampleBlock = (check_in: string, check_out: string, extra: JsonObject = {}): JsonObject => ({
  listing_id: EXAMPLE_IDS.listingId,
  check_in,
  check_out,
  reason: 'reserved',
  ...extra,
});

const ALL_EVENTS = json(webhookEndpointSchema.properties.events.items).enum as Json[];

/** An Example Object. */
const example = (summary: string, value: Json, extra: JsonObject = {}): JsonObject => ({ summary, ...extra, value });

/** What validates one operation's request: its parameters, query and body (the gateway's own validators). */
interface RequestValidation {
  params: Validator<unknown>;
  query: Validator<unknown>;
  integerQuery?: readonly string[];
  body?: Validator<unknown>;
}

const VALIDATION = {
  property: { params: validators.propertyPath, query: validators.noParameters, body: validators.property },
  putBlock: { params: validators.blockPath, query: validators.noParameters, body: validators.block },
  deleteBlock: { params: validators.blockPath, query: validators.noParameters },
  listBlocks: { params: validators.noParameters, query: validators.blocksQuery, integerQuery: ['page', 'page_size'] },
  endpoint: { params: validators.noParameters, query: validators.noParameters, body: validators.webhookEndpoint },
  acknowledge: { params: validators.deletionRequestPath, query: validators.noParameters, body: validators.acknowledge },
  testEvent: { params: validators.noParameters, query: validators.noParameters, body: validators.testEvent },
  deliveries: { params: validators.noParameters, query: validators.deliveriesQuery, integerQuery: ['page', 'page_size'] },
  delivery: { params: validators.deliveryPath, query: validators.noParameters },
} satisfies Record<string, RequestValidation>;

/** The violations the gateway reports for `req` (path, query, body, as contract-route.ts checks them). */
function violationsOf(v: RequestValidation, req: ExampleRequest) {
  return [
    ...v.params.violations({ ...(req.path ?? {}) }),
    ...v.query.violations(queryForSchema(req.query ?? {}, v.integerQuery ?? [])),
    // The validator may fill in defaults: never on the example itself.
    ...(v.body && req.body !== undefined ? v.body.violations(structuredClone(req.body)) : []),
  ];
}

interface ProblemExample {
  summary: string;
  /** The error; default: the code's generic one. */
  error?: ProblemError;
  /** The request that gets it, when it is not a request example of the same name. */
  request?: ExampleRequest;
}

/** The request parameters of an operation as the validator sees them: the examples' defaults, then `req`. */
const DEFAULT_PATH: Record<string, string> = {
  provider_id: EXAMPLE_IDS.providerId,
  external_uid: EXAMPLE_IDS.externalUid,
  event_id: EXAMPLE_IDS.eventId,
};

/** A `validation_failed` example whose `errors` are what the gateway's validators report for `request`. */
function invalid(v: RequestValidation, pathNames: string[], summary: string, request: ExampleRequest): ProblemExample {
  const path: Record<string, string> = {};
  for (const n of pathNames) path[n] = request.path?.[n] ?? DEFAULT_PATH[n]!;
  const errors = violationsOf(v, { ...request, path });
  if (errors.length === 0) throw new Error(`openapi: the invalid example "${summary}" is valid`);
  return { summary, error: validationFailed(errors), request };
}

// ---------------------------------------------------------------- responses

/** A problem response whose `code` is `code` (and whose `status` is its status), with named examples. */
function problemResponse(code: ProblemCode, description: string, opts: { headers?: string[]; extra?: JsonObject; examples?: Record<string, ProblemExample> } = {}): JsonObject {
  const status = PROBLEM_CODES[code].status;
  const narrowed: JsonObject = {
    type: 'object',
    properties: { code: { const: code }, status: { const: status } },
    ...(opts.extra ?? {}),
  };
  const examples: JsonObject = {};
  for (const [name, ex] of Object.entries(opts.examples ?? { [code]: { summary: PROBLEM_CODES[code].title } })) {
    const value = json(problemDocument(ex.error ?? new ProblemError(code), DEFAULT_DOCS_URL, EXAMPLE_REQUEST_ID));
    examples[name] = example(ex.summary, value, ex.request ? { 'x-request': json(ex.request) } : {});
  }
  return {
    description,
    headers: withHeaders(...(opts.headers ?? [])),
    content: { [PROBLEM_CONTENT_TYPE]: { schema: { allOf: [ref('schemas', 'Problem'), narrowed] }, examples } },
  };
}

function messageResponse(description: string, examples: Record<string, JsonObject>, headers: string[] = []): JsonObject {
  return {
    description,
    headers: { ...withHeaders(...headers) },
    content: { 'application/json': { schema: ref('schemas', 'Message'), examples } },
  };
}

const VALIDATION_FAILED_DESCRIPTION =
  '`validation_failed`: the request does not match the schema — body, path and query parameters checked together, unknown fields and parameters included; also a body that is not JSON, has another content type than `application/json` or exceeds ' +
  `${BODY_LIMIT_BYTES / 1024} KiB (field \`body\`). \`errors\` names every violation, never a submitted value.`;

/** The `400` of one operation, with its own examples. */
function validationFailedResponse(examples: Record<string, ProblemExample>): JsonObject {
  return problemResponse('validation_failed', VALIDATION_FAILED_DESCRIPTION, { extra: { required: ['errors'] }, examples });
}

const NOT_ENABLED_DESCRIPTION =
  '`not_enabled`: the request was valid, but this contract is not enabled for the workspace (every production workspace; blocks addressed by `provider_id` in every environment). Nothing was written.';
const NOT_ENABLED_PRODUCTION: ProblemExample = { summary: "Any valid request with a production workspace's token" };

const responses: Record<string, JsonObject> = {
  Unauthorized: problemResponse('unauthorized', '`unauthorized`: a missing, malformed or expired access token, or a revoked key. Not counted.', {
    headers: ['WWW-Authenticate'],
    examples: { missing_token: { summary: 'No, a malformed or an expired access token, or a revoked key' } },
  }),
  WorkspaceScopeMismatch: problemResponse(
    'workspace_scope_mismatch',
    "`workspace_scope_mismatch`: the token's environment does not match the addressed workspace, or the workspace does not resolve.",
    { examples: { scope_mismatch: { summary: 'The token does not grant access to the workspace' } } },
  ),
  PropertyNotFound: problemResponse('property_not_found', '`property_not_found`: the listing does not exist or belongs to another tenant (indistinguishable).', {
    examples: { unknown_listing: { summary: "A listing that does not exist or is another partner's" } },
  }),
  DeletionRequestNotFound: problemResponse(
    'deletion_request_not_found',
    "`deletion_request_not_found`: no deletion request with this `event_id` for this partner (unknown or another partner's: indistinguishable).",
    {
      examples: {
        unknown_event: {
          summary: "An `event_id` that is unknown or another partner's",
          request: { path: { event_id: '6f1c1f57-3a39-4f0a-9a8e-0a4f2e2d7c11' }, body: {} },
        },
      },
    },
  ),
  Conflict: problemResponse(
    'conflict',
    '`conflict`: nights collide with a marketplace booking or live hold; nothing was written, the whole range is refused. `conflicts` lists every colliding night.',
    {
      extra: { required: ['conflicts'] },
      examples: {
        colliding: {
          summary: 'Two nights of the range are held by a marketplace guest',
          error: new ProblemError('conflict', { conflicts: ['2030-08-02', '2030-08-03'] }),
        },
      },
    },
  ),
  RateLimited: problemResponse(
    'rate_limited',
    "`rate_limited`: the key's quota for the current window is used up (see the `RateLimit-*` headers). This request was not counted. Wait `Retry-After` seconds.",
    { headers: ['Retry-After'], examples: { quota_used_up: { summary: "The key's quota is used up for this window" } } },
  ),
  InternalError: problemResponse('internal_error', "`internal_error`: a fault on the service's side; idempotent requests may be retried.", {
    examples: { internal_error: { summary: "A fault on the service's side" } },
  }),
  NotEnabled: problemResponse('not_enabled', NOT_ENABLED_DESCRIPTION, { examples: { production: NOT_ENABLED_PRODUCTION } }),
  ServiceUnavailable: problemResponse('service_unavailable', '`service_unavailable`: a capability this request needs is not available; nothing was written. Retry later.', {
    examples: { unavailable: { summary: 'A needed capability is not available' } },
  }),
  TokenRefused: messageResponse(
    'An unknown, revoked, wrong or missing API key: one identical refusal.',
    { invalid_key: { summary: 'Unknown, revoked, wrong or missing key', value: json(INVALID_API_KEY) } },
    ['WWW-Authenticate'],
  ),
  TokenRateLimited: messageResponse(
    `Too many token exchanges for this API key in the current window (the token endpoint's own ceiling, by default ${DEFAULTS.tokenQuota} per hour), or too many failed exchanges from this client address or for this key. Wait \`Retry-After\` seconds.`,
    {
      too_many_exchanges: { summary: "The key's ceiling of exchanges is used up", value: { message: 'too many token requests for this API key; retry later' } },
      too_many_failures: { summary: 'Too many failed exchanges', value: json(TOO_MANY_FAILURES) },
    },
    ['Retry-After'],
  ),
  TokenNotConfigured: messageResponse('The token endpoint is not available in this deployment. Nothing was issued.', {
    not_configured: { summary: 'No tokens are issued', value: { message: 'the token endpoint is not configured' } },
  }),
};

/** The problem responses of a token-authenticated contract endpoint; `own` adds or replaces some (its 400, 404, 409, 501). */
function contractErrors(own: { '400': JsonObject } & Record<string, JsonObject>): JsonObject {
  const out: JsonObject = {
    '400': own['400'],
    '401': ref('responses', 'Unauthorized'),
    '403': ref('responses', 'WorkspaceScopeMismatch'),
  };
  for (const [status, r] of Object.entries(own)) if (status !== '400' && status !== '501') out[status] = r;
  Object.assign(out, {
    '429': ref('responses', 'RateLimited'),
    '500': ref('responses', 'InternalError'),
    '501': own['501'] ?? ref('responses', 'NotEnabled'),
    '503': ref('responses', 'ServiceUnavailable'),
  });
  return out;
}

function ok(description: string, schema: string, examples: Record<string, JsonObject>): JsonObject {
  return { description, headers: commonHeaders(), content: { 'application/json': { schema: ref('schemas', schema), examples } } };
}

function jsonBody(schema: string, description: string, examples: Record<string, JsonObject>, required = true): JsonObject {
  return { required, description, content: { 'application/json': { schema: ref('schemas', schema), examples } } };
}

// ---------------------------------------------------------------- parameters

function parameter(name: string, where: 'path' | 'query', schema: unknown, description: string, example: Json): JsonObject {
  return { name, in: where, required: where === 'path', description, schema: json(schema), example };
}

const parameters: Record<string, JsonObject> = {
  provider_id: parameter(
    'provider_id',
    'path',
    params.property_path.properties.provider_id,
    "The partner's own property identifier, unique within its integration (1–128 characters).",
    EXAMPLE_IDS.providerId,
  ),
  external_uid: parameter(
    'external_uid',
    'path',
    params.block_path.properties.external_uid,
    "The partner's own block identifier, typically a reservation id (1–255 characters).",
    EXAMPLE_IDS.externalUid,
  ),
  event_id: parameter(
    'event_id',
    'path',
    params.deletion_request_path.properties.event_id,
    'The `event_id` of the `user.erased` delivery being acknowledged.',
    EXAMPLE_IDS.eventId,
  ),
  from: parameter('from', 'query', blocksQuery.from, 'Only blocks holding a night on or after this date (a block whose `check_out` equals `from` is not returned).', '2030-07-01'),
  to: parameter('to', 'query', blocksQuery.to, 'Only blocks holding a night on or before this date.', '2030-07-31'),
  page: parameter('page', 'query', blocksQuery.page, '1-based page.', 1),
  page_size: parameter('page_size', 'query', blocksQuery.page_size, 'Rows per page.', PAGE_SIZE_DEFAULT),
};

// ---------------------------------------------------------------- code samples

/** A shell-quoted argument. */
const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * `x-codeSamples` (a Redocly extension): the operation's first request example as a
 * curl command, so even operations without a body show a complete request.
 */
function curl(method: string, path: string, opts: { query?: Record<string, Json>; body?: Json; auth?: 'API_KEY' | 'ACCESS_TOKEN' } = {}): JsonObject[] {
  const filled = path.replace(/\{([a-z_]+)\}/g, (_, n: string) => encodeURIComponent(DEFAULT_PATH[n]!));
  const qs = Object.entries(opts.query ?? {})
    .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
    .join('&');
  const lines = [`curl -X ${method} "$BASE_URL${filled}${qs ? `?${qs}` : ''}"`];
  if (opts.auth) lines.push(`-H "Authorization: Bearer $${opts.auth}"`);
  if (opts.body !== undefined) lines.push(`-H 'Content-Type: application/json'`, `--data ${sh(JSON.stringify(opts.body))}`);
  return [{ lang: 'Shell', label: 'curl', source: lines.join(' \\\n  ') }];
}

// ---------------------------------------------------------------- the document

const DESCRIPTION = [
  "A two-way synchronisation between a channel partner's platform and the booking marketplace: partners push properties and calendar blocks, register one webhook endpoint and receive signed deliveries.",
  '',
  `Specification \`partner-sync-api-v1\`, dated ${SPEC_DATE}; every path is relative to \`{base_url}\`, which ends with \`/${API_VERSION}\`. Published schemas are frozen; later changes are additive, so clients must tolerate new optional fields and new error codes.`,
  '',
  '**Authentication.** Exchange the API key at `POST /token` (`Authorization: Bearer <API_KEY>`), then send `Authorization: Bearer <ACCESS_TOKEN>` on every other call; the header is the only place read.',
  '',
  '**Order of checks.** Authentication (`401`), rate limit (`429`, not counted), authorisation (`403`), validation (`400`), then `501 not_enabled` (production workspaces, blocks addressed by `provider_id`): a `501` means the request was valid.',
  '',
  `**Limits.** The limits are those of the deployment, stated on every response by the \`RateLimit-*\` headers: by default ${DEFAULTS.contractQuota} contract requests per API key per window of ${RATE_WINDOW_SECONDS} s, and ${DEFAULTS.tokenQuota} token exchanges per key per window at \`POST /token\` (not counted toward the contract quota). An access token lives \`expires_in\` seconds (${DEFAULTS.tokenTtlSeconds / 60} minutes by default, never more than one hour). Request bodies up to ${BODY_LIMIT_BYTES / 1024} KiB.`,
  '',
  "**Examples.** Every operation has request and response examples. A request example and the response example of the same name belong together; an error example whose request cannot be a valid request example carries it in `x-request` (`path`, `query`, `body`). Identifiers in the examples (`listing_id`, `event_id`, URLs) are placeholders for the partner's own.",
  '',
  '**Errors.** Every error except a token endpoint refusal is an `application/problem+json` document. A path no endpoint has is `404 not_found`; a known path with another method is `405 method_not_allowed` with `Allow`.',
  '',
  '**Sandbox tools.** `POST /sandbox/events` sends a signed test event (`"test": true`) to the webhook endpoint; `GET /webhooks/deliveries` is the delivery log with every attempt, and `POST /webhooks/deliveries/{event_id}/resend` sends a delivery again. They are additive, counted toward the quota like every call, and answer `501` for production workspaces.',
].join('\n');

/** The sandbox tools' operations, schemas and responses (openapi-sandbox.ts), built with this module's helpers. */
function sandboxPart() {
  return sandboxOpenApi({
    ref,
    example,
    ok,
    jsonBody,
    contractErrors,
    problemResponse,
    validationFailedResponse,
    invalid,
    curl,
    parameter,
    commonHeaders,
    ids: EXAMPLE_IDS,
    docsUrl: DEFAULT_DOCS_URL,
    requestId: EXAMPLE_REQUEST_ID,
    validation: { testEvent: VALIDATION.testEvent, deliveries: VALIDATION.deliveries, delivery: VALIDATION.delivery },
  });
}

/** Builds the document (pure; the objects from schemas/*.json are shared, not copied). */
export function buildOpenApiDocument(): OpenApiDocument {
  const sandbox = sandboxPart();
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
      { name: 'Blocks', description: "Calendar blocks: nights already taken on the partner's platform." },
      { name: 'Webhooks', description: 'The one webhook endpoint of a workspace and the signed deliveries sent to it.' },
      { name: 'Deletion requests', description: 'Confirming that a `user.erased` request was carried out.' },
      ...sandbox.tags,
      { name: 'Meta', description: 'This document.' },
    ],
    paths: {
      '/token': {
        post: {
          operationId: 'exchangeToken',
          summary: 'Exchange an API key for an access token',
          description: `The API key is read only from \`Authorization: Bearer <API_KEY>\`; the body is ignored. An unknown key, a revoked key, a wrong secret and a missing header all get the one identical \`401\`. Its own ceiling per key (by default ${DEFAULTS.tokenQuota} exchanges per hour) is what its \`RateLimit-*\` headers describe; exchanges do not count toward the contract quota.`,
          tags: ['Authentication'],
          security: [{ apiKey: [] }],
          'x-codeSamples': curl('POST', '/token', { auth: 'API_KEY' }),
          responses: {
            '200': {
              description: 'A fresh access token.',
              headers: withHeaders('Cache-Control'),
              content: {
                'application/json': {
                  schema: ref('schemas', 'Token'),
                  examples: {
                    token: example("A sandbox workspace's token", {
                      access_token: 'pst_eyJ3IjoiOGE1ZTJjNjEiLCJlIjoxOTI0OTkxODAwfQ.q3V9bX2mYc7Kf0aLr8sT1wE4uJ6nP5hZ',
                      token_type: 'Bearer',
                      expires_in: DEFAULTS.tokenTtlSeconds,
                      workspace_id: EXAMPLE_IDS.workspaceId,
                      sandbox: true,
                    }),
                  },
                },
              },
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
          'x-codeSamples': curl('PUT', '/properties/{provider_id}', { auth: 'ACCESS_TOKEN', body: examplePropertyComplete }),
          requestBody: jsonBody('Property', 'The complete property.', {
            complete: example('A complete property (first push)', examplePropertyComplete),
            incomplete: example('Only the required fields, not yet for sale', examplePropertyIncomplete),
          }),
          responses: {
            '200': ok('Created or updated.', 'PropertyUpsert', {
              complete: example('First push of a complete property: the photos are being fetched', {
                provider_id: EXAMPLE_IDS.providerId,
                result: 'created',
                listing_id: null,
                status: 'listed',
                publishable: false,
                missing: ['photos_processing'],
                unknown_amenities: [],
                photos_rejected: [],
              }),
              incomplete: example('Held incomplete: no price, amenities or photos, and unlisted', {
                provider_id: EXAMPLE_IDS.providerId,
                result: 'created',
                listing_id: null,
                status: 'unlisted',
                publishable: false,
                missing: ['price', 'amenities', 'cover_photo', 'photos', 'unlisted'],
                unknown_amenities: [],
                photos_rejected: [],
              }),
              published: example('A later push once the photos are processed: publishable, with its listing', {
                provider_id: EXAMPLE_IDS.providerId,
                result: 'updated',
                listing_id: EXAMPLE_IDS.listingId,
                status: 'listed',
                publishable: true,
                missing: [],
                unknown_amenities: ['sauna'],
                photos_rejected: [{ url: 'https://images.partner.example/villa-42/old-kitchen.jpg', reason: 'unreachable' }],
              }),
            }),
            ...contractErrors({
              '400': validationFailedResponse({
                invalid: invalid(VALIDATION.property, ['provider_id'], 'A country name instead of its code, a photo without a URL, and a field the contract does not have', {
                  body: {
                    ...examplePropertyComplete,
                    address: { ...json(examplePropertyComplete.address), country: 'France' },
                    photos: [{ url: 'https://images.partner.example/villa-42/living-room.jpg', position: 0 }, { position: 1 }],
                    guest_notes: 'no pets',
                  },
                }),
              }),
            }),
          },
        },
      },
      '/blocks': {
        get: {
          operationId: 'listBlocks',
          summary: "List the partner's blocks",
          description: "Only the calling partner's blocks in the key's workspace. A page past the end is `200` with `items: []` and `has_more: false`.",
          tags: ['Blocks'],
          parameters: [ref('parameters', 'from'), ref('parameters', 'to'), ref('parameters', 'page'), ref('parameters', 'page_size')],
          'x-codeSamples': curl('GET', '/blocks', { auth: 'ACCESS_TOKEN', query: { from: '2030-07-01', to: '2030-07-31', page: 1, page_size: 50 } }),
          responses: {
            '200': ok('One page of blocks.', 'BlockList', {
              page: example('The blocks holding a night in July 2030', {
                items: [
                  { external_uid: EXAMPLE_IDS.externalUid, listing_id: EXAMPLE_IDS.listingId, check_in: '2030-07-10', check_out: '2030-07-14', reason: 'reserved', nights: 4 },
                  { external_uid: 'maint-7', listing_id: EXAMPLE_IDS.listingId, check_in: '2030-07-20', check_out: '2030-07-22', reason: 'maintenance', nights: 2 },
                ],
                has_more: false,
              }),
              past_the_end: example('A page past the end', { items: [], has_more: false }, { 'x-request': { query: { page: '9' } } }),
            }),
            ...contractErrors({
              '400': validationFailedResponse({
                invalid: invalid(VALIDATION.listBlocks, [], 'A page size over 200 and a parameter the endpoint does not have', {
                  query: { page_size: '500', workspace: 'other' },
                }),
              }),
            }),
          },
        },
      },
      '/blocks/{external_uid}': {
        parameters: [ref('parameters', 'external_uid')],
        put: {
          operationId: 'putBlock',
          summary: 'Create, re-confirm or move a block',
          description: `Exactly one of \`provider_id\` and \`listing_id\` (addressing by \`provider_id\` answers \`501\` in every environment: use \`listing_id\`). At most ${MAX_NIGHTS} nights; the departure day stays sellable. An identical retry is a no-op (\`updated\`); other dates move the block in one step. The conflict scan runs on every push.`,
          tags: ['Blocks'],
          'x-codeSamples': curl('PUT', '/blocks/{external_uid}', { auth: 'ACCESS_TOKEN', body: exampleBlock('2030-07-10', '2030-07-14') }),
          requestBody: jsonBody('Block', 'The block.', {
            created: example("Four nights taken on the partner's platform", exampleBlock('2030-07-10', '2030-07-14')),
            moved: example('The same reservation, later: the block moves', exampleBlock('2030-07-12', '2030-07-15')),
            unknown_listing: example("A listing that does not exist or is another partner's", {
              ...exampleBlock('2030-07-10', '2030-07-14'),
              listing_id: EXAMPLE_IDS.unknownListingId,
            }),
            colliding: example('A range some of whose nights a marketplace guest holds', exampleBlock('2030-08-01', '2030-08-05')),
            by_provider_id: example("Addressed by the partner's property id", {
              provider_id: EXAMPLE_IDS.providerId,
              check_in: '2030-07-10',
              check_out: '2030-07-14',
              reason: 'owner_stay',
            }),
          }),
          responses: {
            '200': ok('Created (`created`) or re-confirmed or moved (`updated`).', 'BlockPut', {
              created: example('Created', { result: 'created', nights: 4, listing_id: EXAMPLE_IDS.listingId }),
              moved: example('Moved in one step', { result: 'updated', nights: 3, listing_id: EXAMPLE_IDS.listingId }),
            }),
            ...contractErrors({
              '400': validationFailedResponse({
                invalid: invalid(VALIDATION.putBlock, ['external_uid'], 'Both identifiers, a date that is not a date, a reason outside the set and a guest name', {
                  body: {
                    provider_id: EXAMPLE_IDS.providerId,
                    listing_id: EXAMPLE_IDS.listingId,
                    check_in: '2030-07-32',
                    check_out: '2030-08-02',
                    reason: 'guest',
                    guest_name: 'Ada',
                  },
                }),
              }),
              '404': ref('responses', 'PropertyNotFound'),
              '409': ref('responses', 'Conflict'),
              '501': problemResponse('not_enabled', NOT_ENABLED_DESCRIPTION, {
                examples: {
                  by_provider_id: { summary: 'A block addressed by `provider_id` (every environment)' },
                  production: NOT_ENABLED_PRODUCTION,
                },
              }),
            }),
          },
        },
        delete: {
          operationId: 'deleteBlock',
          summary: 'Release a block',
          description:
            'Frees only the nights the block still holds; a night unavailable for another reason stays unavailable. `204` whether or not the block existed. To shorten a stay, `PUT` the shorter range.',
          tags: ['Blocks'],
          'x-codeSamples': curl('DELETE', '/blocks/{external_uid}', { auth: 'ACCESS_TOKEN' }),
          responses: {
            '204': { description: 'Released (or there was nothing to release).', headers: commonHeaders() },
            ...contractErrors({
              '400': validationFailedResponse({
                invalid: invalid(VALIDATION.deleteBlock, ['external_uid'], 'An `external_uid` over 255 characters', { path: { external_uid: 'r'.repeat(256) } }),
              }),
            }),
          },
        },
      },
      '/webhooks/endpoint': {
        put: {
          operationId: 'putWebhookEndpoint',
          summary: 'Register the webhook endpoint',
          description:
            'One endpoint per workspace. Every call POSTs a signed `endpoint.challenge` to the URL during the call: echoed within five seconds → `active`, else `pending_verification`. Re-registration replaces the URL and event list and keeps the secret; `events: []` pauses delivery. A refused URL is one generic violation `{url, invalid}` that does not say which check failed.',
          tags: ['Webhooks'],
          'x-codeSamples': curl('PUT', '/webhooks/endpoint', { auth: 'ACCESS_TOKEN', body: { url: EXAMPLE_IDS.webhookUrl, events: ALL_EVENTS } }),
          requestBody: jsonBody('WebhookEndpoint', 'The endpoint and the subscribed kinds.', {
            register: example('First registration, every kind', { url: EXAMPLE_IDS.webhookUrl, events: ALL_EVENTS }),
            pause: example('Pause delivery (the endpoint and its secret are kept)', { url: EXAMPLE_IDS.webhookUrl, events: [] }),
          }),
          responses: {
            '200': ok('Registered; `signing_secret` on the first registration only.', 'WebhookEndpointState', {
              register: example('The challenge was echoed; the secret is shown this once', {
                url: EXAMPLE_IDS.webhookUrl,
                events: ALL_EVENTS,
                status: 'active',
                signing_secret: 'whsec_Zm9yLWV4YW1wbGUtb25seS1ub3QtYS1yZWFsLXNlY3JldA',
              }),
              pause: example('Paused: no secret any more', { url: EXAMPLE_IDS.webhookUrl, events: [], status: 'active' }),
              not_echoed: example('The challenge was not echoed: call again to retry', {
                url: EXAMPLE_IDS.webhookUrl,
                events: ['booking.confirmed', 'booking.cancelled'],
                status: 'pending_verification',
              }),
            }),
            ...contractErrors({
              '400': validationFailedResponse({
                invalid: invalid(VALIDATION.endpoint, [], 'A URL that is not HTTPS (one generic `invalid`) and an unknown kind', {
                  body: { url: 'http://hooks.partner.example/psync', events: ['booking.confirmed', 'booking.modified'] },
                }),
              }),
            }),
          },
        },
      },
      '/deletion-requests/{event_id}/acknowledge': {
        parameters: [ref('parameters', 'event_id')],
        post: {
          operationId: 'acknowledgeDeletionRequest',
          summary: 'Acknowledge a carried-out erasure',
          description: `Call it only once the records named by the \`user.erased\` delivery are deleted. An empty body is \`{}\`. \`completed_at\` cannot be in the future (beyond ${COMPLETED_AT_MAX_AHEAD_MS / 60_000} minutes of clock skew: violation \`maximum\`). Acknowledging twice answers \`200\` again with the first \`acknowledged_at\`. Sandbox only.`,
          tags: ['Deletion requests'],
          'x-codeSamples': curl('POST', '/deletion-requests/{event_id}/acknowledge', { auth: 'ACCESS_TOKEN', body: { completed_at: '2026-09-14T09:30:00Z' } }),
          requestBody: jsonBody(
            'DeletionAcknowledgement',
            'Optional `completed_at` (defaults to the time of receipt); the body may be empty.',
            {
              completed_at: example('Deleted at a stated time', { completed_at: '2026-09-14T09:30:00Z' }),
              now: example('Deleted now (the same as an empty body)', {}),
            },
            false,
          ),
          responses: {
            '200': ok('Acknowledged.', 'DeletionAcknowledgementState', {
              completed_at: example('Acknowledged', { event_id: EXAMPLE_IDS.eventId, acknowledged_at: '2026-09-14T09:31:12.418Z' }),
              now: example('Acknowledged again: the first acknowledgement is returned', { event_id: EXAMPLE_IDS.eventId, acknowledged_at: '2026-09-14T09:31:12.418Z' }),
            }),
            ...contractErrors({
              '400': validationFailedResponse({
                invalid: invalid(VALIDATION.acknowledge, ['event_id'], 'An `event_id` that is not a UUID and a `completed_at` that is not a date-time', {
                  path: { event_id: 'erasure-17' },
                  body: { completed_at: 'yesterday' },
                }),
              }),
              '404': ref('responses', 'DeletionRequestNotFound'),
            }),
          },
        },
      },
      ...sandbox.paths,
      '/openapi.json': {
        get: {
          operationId: 'getOpenApiDocument',
          summary: 'This document',
          description: 'The OpenAPI 3.1 document of this contract. No authentication; not counted toward any quota.',
          tags: ['Meta'],
          security: [],
          'x-codeSamples': curl('GET', '/openapi.json'),
          responses: {
            '200': {
              description: 'The OpenAPI document.',
              headers: commonHeaders(),
              content: {
                'application/json': {
                  schema: { type: 'object', required: ['openapi', 'info'], properties: { openapi: { type: 'string' }, info: { type: 'object' } } },
                  examples: {
                    document: example('This document (abridged)', { openapi: '3.1.0', info: { title: 'Partner Synchronisation API', version: `${API_VERSION} (${SPEC_DATE})` } }),
                  },
                },
              },
            },
            '500': ref('responses', 'InternalError'),
          },
        },
      },
    },
    webhooks: {
      'endpoint.challenge': webhook(
        'endpoint.challenge',
        'ChallengeEvent',
        'Endpoint verification challenge',
        { challenge: 'q8Zk3Yb1Vx6Nc0Rt5Lw2Jm9Pa4Hd7Fs1Ge3Ku8Oi5Ty' },
        { challenge: true },
      ),
      'booking.confirmed': webhook('booking.confirmed', 'BookingConfirmedEvent', 'A booking was confirmed', {
        booking_reference: 'BK7Q2M4X9C',
        listing_id: EXAMPLE_IDS.listingId,
        provider_id: EXAMPLE_IDS.providerId,
        check_in: '2030-06-12',
        check_out: '2030-06-15',
        check_in_time: '15:00',
        check_out_time: '11:00',
        party_size: 3,
        guest_name: 'Ada Lovelace',
        amount_paid: { value: '612.00', currency: 'EUR' },
      }),
      'booking.cancelled': webhook('booking.cancelled', 'BookingCancelledEvent', 'A booking was cancelled', {
        booking_reference: 'BK7Q2M4X9C',
        listing_id: EXAMPLE_IDS.listingId,
        cancelled_at: '2026-09-14T08:00:03Z',
        initiated_by: 'guest',
      }),
      'user.erased': webhook('user.erased', 'UserErasedEvent', 'A guest erased their account', {
        booking_references: ['BK7Q2M4X9C'],
        provider_ids: [EXAMPLE_IDS.providerId],
      }),
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
        TestEvent: sandbox.schemas.TestEvent!,
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
        Delivery: sandbox.schemas.Delivery!,
        DeliveryAttempt: sandbox.schemas.DeliveryAttempt!,
        DeliveryList: sandbox.schemas.DeliveryList!,
        Problem: problemSchema,
        Violation: violationSchema,
        // Webhook deliveries.
        ...webhookSchemas,
      },
      responses: { ...responses, ...sandbox.responses },
      parameters: { ...parameters, ...sandbox.parameters },
      headers: { ...RATE_LIMIT_HEADERS, ...OTHER_HEADERS },
    },
  };
}

/** The text of the committed file `docs/openapi.json`: the same document, indented, with a final newline. */
export function openApiFileText(): string {
  return `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
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
