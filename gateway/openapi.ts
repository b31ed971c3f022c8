/**
 * The OpenAPI 3.1 document of the public contract (partner-sync-api-v1, dated
 * 2026-08-26), served at `GET /v1/openapi.json` (routes/openapi.ts; no auth) and
 * committed as docs/openapi.json (`npm run openapi:write`, openapi-write.ts; a test
 * fails while the file is stale).
 *
 * The document is data, in gateway/openapi/ (JSON, so the build's JSON imports carry
 * it into dist/ and nothing parses it at run time); this module only assembles it:
 *
 *   document.json           openapi, info, servers, security, tags (in document order)
 *   tags/<tag>.json         the paths of one tag with their operations (the Webhooks
 *                           tag also holds the `webhooks`); responses shared by several
 *                           operations are `$ref`s into components
 *   components/<kind>.json  securitySchemes, schemas (the webhook payloads and the
 *                           problem document; every request and answer schema of a
 *                           route is an `$embed` of its TypeBox declaration in
 *                           gateway/contract/), responses, parameters, headers
 *   examples/<tag>.json     the Example Objects of that tag's operations, keyed by
 *                           `METHOD /path` (or `WEBHOOK <name>`): `request` (the request
 *                           body's examples) and `responses` (by status); placed into the
 *                           one media type of that body or response
 *   examples/components.json  the examples of components/responses.json, by response name
 *
 * Three conventions, and nothing else, are applied while assembling:
 *
 * - `{"$embed": "<name>#<JSON pointer>"}` is replaced by that object of the request
 *   schema `name` (REQUEST_SCHEMAS, contract/index.ts): the very object ajv compiled (not
 *   a copy), so a request body or parameter schema in the document is the validator's.
 *   Never mutate them.
 * - `{{NAME}}` in a string is replaced by the value named NAME in VALUES below (a string
 *   that is exactly `{{NAME}}` becomes the value itself, a number where the value is
 *   one). These are values the code owns — limits (services/kit/base/limits.ts), the
 *   configuration's defaults (services/kit/runtime/config.ts: the document never varies with a
 *   deployment's configuration, it shows the defaults and says so), the body limit, the
 *   token lifetime — so each is named once, in TypeScript, and a change there changes
 *   the document (house rule 11). Why placeholders rather than literals checked by a
 *   test: these numbers sit inside prose (descriptions) as often as in schema keywords,
 *   and a test cannot tell which "600" in a sentence is the quota; a placeholder says
 *   it. An unknown name throws.
 * - A `description` written as an array of lines is joined with newlines (long
 *   multi-paragraph descriptions read better that way).
 *
 * Everything else is written literally and CHECKED against the code. In
 * test/gateway/openapi-data.test.ts: enumerations (problem codes, violation codes, event
 * kinds …) equal the code's vocabularies; every problem example is exactly the document
 * problems.ts renders for its code (title, detail, type); the token endpoint's `{message}`
 * examples are the route's bodies; each curl sample is its operation's request. In
 * test/gateway/openapi.test.ts: the `errors[]` of every `400` example is exactly what
 * the gateway's validators report for that example's request (`x-request`); every
 * example validates against its schema; each path's `x-other-methods.allow` is the
 * `Allow` the router answers. test/gateway/openapi-examples.test.ts sends the examples
 * to a running system.
 *
 * To add an endpoint: add its path and operation to tags/<tag>.json (a new path item
 * starts with `x-other-methods`: the `Allow` the router answers for other methods,
 * `HEAD` beside `GET`; a new tag also needs its entry in document.json's `tags` and in
 * TAGS below), its request and response examples to examples/<tag>.json under
 * `METHOD /path` (a `400` example with `x-request` and the `errors[]` the validators
 * report, which the tests print when they differ), what it accepts and answers to
 * gateway/contract/<group>.ts (TypeBox; listed in REQUEST_SCHEMAS or RESPONSE_SCHEMAS of
 * its index.ts, an answer named in components/schemas.json by `$embed`), then
 * `npm run openapi:write` and `npm run sdk:generate`, and run
 * test/gateway/openapi*.test.ts. The route itself lives in gateway/routes/; the
 * coverage test fails until route and document agree.
 */
import { COMPLETED_AT_MAX_AHEAD_MS, REQUEST_SCHEMAS, RESPONSE_SCHEMAS } from './contract';
import documentData from './openapi/document.json';
import securitySchemesData from './openapi/components/security-schemes.json';
import schemasData from './openapi/components/schemas.json';
import responsesData from './openapi/components/responses.json';
import parametersData from './openapi/components/parameters.json';
import headersData from './openapi/components/headers.json';
import componentExamples from './openapi/examples/components.json';
import authenticationTag from './openapi/tags/authentication.json';
import authenticationExamples from './openapi/examples/authentication.json';
import propertiesTag from './openapi/tags/properties.json';
import propertiesExamples from './openapi/examples/properties.json';
import blocksTag from './openapi/tags/blocks.json';
import blocksExamples from './openapi/examples/blocks.json';
import webhooksTag from './openapi/tags/webhooks.json';
import eventsTag from './openapi/tags/events.json';
import eventsExamples from './openapi/examples/events.json';
import webhooksExamples from './openapi/examples/webhooks.json';
import deletionRequestsTag from './openapi/tags/deletion-requests.json';
import deletionRequestsExamples from './openapi/examples/deletion-requests.json';
import sandboxToolsTag from './openapi/tags/sandbox-tools.json';
import sandboxToolsExamples from './openapi/examples/sandbox-tools.json';
import requestLogTag from './openapi/tags/request-log.json';
import requestLogExamples from './openapi/examples/request-log.json';
import metaTag from './openapi/tags/meta.json';
import metaExamples from './openapi/examples/meta.json';
import { BODY_LIMIT_BYTES } from './body';
import { WWW_AUTHENTICATE } from './connect-errors';
import type { Json, JsonObject } from './json';
import { settings } from '../services/kit/runtime';
import { EVENT_FEED_RETENTION_DAYS, MAX_NIGHTS, MAX_NIGHTS_READ, MAX_TOKEN_TTL_SECONDS, PAGE_SIZE_DEFAULT, RATE_WINDOW_SECONDS } from '../services/kit/base';

/** The path prefix of this contract version. */
export const API_VERSION = 'v1';
/** The date of the specification this document describes (spec "Versioning"). */
export const SPEC_DATE = '2026-08-26';
/** Where the document is served (also a route of the contract router). */
export const OPENAPI_PATH = `/${API_VERSION}/openapi.json`;
/** Where the generated document is committed (npm run openapi:write). */
export const OPENAPI_FILE = 'docs/openapi.json';

/** The placeholders the examples use for the partner's identifiers (openapi-examples.test.ts replaces them). */
export const EXAMPLE_IDS = {
  providerId: 'villa-42',
  externalUid: 'resv-100234',
  eventId: '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f',
  listingId: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j',
  unknownListingId: 'lst_zzzzzzzzzzzzzzzzzzzzzzzz',
  workspaceId: '8a5e2c61-1f3b-4d7e-9c0a-6b2d4e8f1a37',
  webhookUrl: 'https://hooks.partner.example/psync',
  /** A test delivery's `event_id` (the delivery log's examples). */
  deliveryEventId: '6c3e9b2a-4f1d-4a8e-b7c5-1d2e3f4a5b6c',
} as const;

/** A fixed example request id: every problem example's `instance` is `urn:psync:request:<this>`. */
export const EXAMPLE_REQUEST_ID = '3f1c5f0e-8d2b-4c53-9a61-2b1f2e7c9d40';

/** The `{{NAME}}` placeholders of the data and their values (see the header). */
export const VALUES: Readonly<Record<string, string | number>> = {
  API_VERSION,
  SPEC_DATE,
  DOCS_URL: settings.docsUrl.default,
  CONTRACT_QUOTA: settings.rateLimitPerHour.default,
  CONTRACT_QUOTA_LESS_ONE: settings.rateLimitPerHour.default - 1,
  TOKEN_QUOTA: settings.tokenRateLimitPerHour.default,
  TOKEN_TTL_SECONDS: settings.tokenTtlSeconds.default,
  TOKEN_TTL_MINUTES: settings.tokenTtlSeconds.default / 60,
  MAX_TOKEN_TTL_SECONDS,
  RATE_WINDOW_SECONDS,
  RATE_WINDOW_HALF: RATE_WINDOW_SECONDS / 2,
  MAX_NIGHTS,
  MAX_NIGHTS_READ,
  PAGE_SIZE_DEFAULT,
  EVENT_FEED_RETENTION_DAYS,
  BODY_LIMIT_KIB: BODY_LIMIT_BYTES / 1024,
  COMPLETED_AT_SKEW_MINUTES: COMPLETED_AT_MAX_AHEAD_MS / 60_000,
  WWW_AUTHENTICATE,
};

/** The request and answer schemas an `$embed` may name (contract/index.ts). */
const EMBEDDABLE: Record<string, unknown> = { ...REQUEST_SCHEMAS, ...RESPONSE_SCHEMAS };

/** Each tag's operations and their examples, in the order of the document's paths. */
const TAGS: { operations: unknown; examples: unknown }[] = [
  { operations: authenticationTag, examples: authenticationExamples },
  { operations: propertiesTag, examples: propertiesExamples },
  { operations: blocksTag, examples: blocksExamples },
  { operations: webhooksTag, examples: webhooksExamples },
  { operations: deletionRequestsTag, examples: deletionRequestsExamples },
  { operations: eventsTag, examples: eventsExamples },
  { operations: sandboxToolsTag, examples: sandboxToolsExamples },
  { operations: requestLogTag, examples: requestLogExamples },
  { operations: metaTag, examples: metaExamples },
];

/** The parts of the document the tests and the route look at. */
export interface OpenApiDocument extends JsonObject {
  openapi: string;
  info: JsonObject;
  servers: JsonObject[];
  paths: { [path: string]: JsonObject };
  webhooks: { [name: string]: JsonObject };
  components: JsonObject & { schemas: JsonObject };
}

/** The object at JSON pointer `pointer` (RFC 6901) of `root`. */
function atPointer(root: unknown, pointer: string, what: string): Json {
  let node = root as Json;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    const next = node !== null && typeof node === 'object' ? (node as JsonObject)[key] : undefined;
    if (next === undefined) throw new Error(`openapi: ${what} does not exist`);
    node = next;
  }
  return node;
}

/** The value of `{{NAME}}`. */
function value(name: string): string | number {
  const v = VALUES[name];
  if (v === undefined) throw new Error(`openapi: unknown placeholder {{${name}}}`);
  return v;
}

/** A copy of data `v` with the conventions of the header applied (embedded schemas are shared, not copied). */
function fill(v: unknown): Json {
  if (typeof v === 'string') {
    const whole = /^\{\{([A-Z0-9_]+)\}\}$/.exec(v);
    if (whole) return value(whole[1]!);
    return v.replace(/\{\{([A-Z0-9_]+)\}\}/g, (_, name: string) => String(value(name)));
  }
  if (Array.isArray(v)) return v.map(fill);
  if (v === null || typeof v !== 'object') return v as Json;
  const o = v as Record<string, unknown>;
  if (typeof o.$embed === 'string') {
    const [name, pointer = ''] = o.$embed.split('#');
    const schema = EMBEDDABLE[name!];
    if (!schema || Object.keys(o).length !== 1) throw new Error(`openapi: bad $embed ${o.$embed}`);
    const embedded = atPointer(schema, pointer, `$embed ${o.$embed}`);
    // An answer's descriptions may name values by placeholder: those are filled in a copy.
    return JSON.stringify(embedded).includes('{{') ? fill(JSON.parse(JSON.stringify(embedded))) : embedded;
  }
  const out: JsonObject = {};
  for (const [k, c] of Object.entries(o)) out[k] = k === 'description' && Array.isArray(c) ? (fill(c) as string[]).join('\n') : fill(c);
  return out;
}

/** The one media type object of `content` (every body and response here has one). */
function onlyMedia(content: Json | undefined, where: string): JsonObject {
  const media = Object.values((content ?? {}) as JsonObject);
  if (media.length !== 1) throw new Error(`openapi: ${where} has no single media type for its examples`);
  return media[0] as JsonObject;
}

interface OperationExamples {
  request?: JsonObject;
  responses?: Record<string, JsonObject>;
}

/** Puts `examples` into operation `op` (a filled copy, so it may be written to). */
function placeExamples(op: JsonObject, examples: OperationExamples, where: string): void {
  if (examples.request) onlyMedia((op.requestBody as JsonObject | undefined)?.content, `${where} request body`).examples = examples.request;
  for (const [status, named] of Object.entries(examples.responses ?? {})) {
    const response = (op.responses as JsonObject)[status] as JsonObject | undefined;
    if (!response || response.$ref) throw new Error(`openapi: ${where} ${status} is not a response of its own to put examples in`);
    onlyMedia(response.content, `${where} ${status}`).examples = named;
  }
}

const METHODS = ['get', 'put', 'post', 'delete'];

/** Assembles one tag: its paths and webhooks, with their examples in place. */
function assembleTag(operations: unknown, examples: unknown, doc: OpenApiDocument): void {
  const data = fill(operations) as { paths?: JsonObject; webhooks?: JsonObject };
  const byKey = fill(examples) as Record<string, OperationExamples>;
  const placed = new Set<string>();
  for (const [root, label] of [
    ['paths', ''],
    ['webhooks', 'WEBHOOK '],
  ] as const) {
    for (const [path, item] of Object.entries(data[root] ?? {}) as [string, JsonObject][]) {
      if (doc[root][path]) throw new Error(`openapi: ${path} is in two tag files`);
      doc[root][path] = item;
      for (const method of METHODS.filter((m) => item[m])) {
        const key = label ? `${label}${path}` : `${method.toUpperCase()} ${path}`;
        const own = byKey[key];
        if (own) placeExamples(item[method] as JsonObject, own, key);
        placed.add(key);
      }
    }
  }
  const stray = Object.keys(byKey).filter((k) => !placed.has(k));
  if (stray.length > 0) throw new Error(`openapi: examples for no operation: ${stray.join(', ')}`);
}

/** Builds the document from gateway/openapi/ (pure; the embedded schema objects are shared, not copied). */
export function buildOpenApiDocument(): OpenApiDocument {
  const doc = { ...(fill(documentData) as JsonObject), paths: {}, webhooks: {} } as OpenApiDocument;
  for (const tag of TAGS) assembleTag(tag.operations, tag.examples, doc);
  const responses = fill(responsesData) as JsonObject;
  for (const [name, named] of Object.entries(fill(componentExamples.responses) as JsonObject)) {
    const response = responses[name] as JsonObject | undefined;
    if (!response) throw new Error(`openapi: examples for no response ${name}`);
    onlyMedia(response.content, `components/responses/${name}`).examples = named;
  }
  doc.components = {
    securitySchemes: fill(securitySchemesData),
    schemas: fill(schemasData) as JsonObject,
    responses,
    parameters: fill(parametersData),
    headers: fill(headersData),
  };
  return doc;
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
