/**
 * The OpenAPI 3.1 document of the public contract (partner-sync-api-v1, dated
 * 2026-08-26), served at `GET /v1/openapi.json` (routes/openapi.ts; no auth) and
 * committed as docs/openapi.json (`npm run openapi:write`, openapi-write.ts; a test
 * fails while the file is stale).
 *
 * The document is declared in TypeScript in gateway/contract/, beside what each route
 * accepts and answers; this module only puts the parts together:
 *
 *   document.ts                  openapi, info, servers, security, tags (in document
 *                                order), the security schemes
 *   <group>-operations.ts        the paths of one tag with their operations (the Webhooks
 *                                tag also holds the `webhooks`), each operation wrapped in
 *                                `withExamples(…, <operation>Examples)`
 *   <group>-examples.ts          those operations' Example Objects: the request body's, and
 *                                the responses' by status
 *   components-schemas.ts        the route groups' TypeBox declarations themselves (the
 *                                objects ajv compiled: never mutate them; JSON ignores their
 *                                symbol keys), the webhook payloads and the problem document
 *   components-responses.ts      shared responses (examples in components-examples.ts),
 *   components-parameters.ts,    parameters (each schema a route's own path or query
 *   components-headers.ts        declaration) and headers
 *
 * The helpers of contract/operation.ts say what repeats: `headers()` (the RateLimit-*,
 * X-Request-Id and Cache-Control every answer carries), `answer()` (a JSON answer),
 * `problem(codes, …)` (a problem response answering those codes), `problems({…})` (an
 * operation's problem responses by status: those every contract operation has, then its
 * own — a code whose shared response is named by it, or a `problem`), `otherMethods()`
 * and `curl(method, target)` (`withExamples` adds a JSON request's first example as its
 * body). A problem example gives only its summary, request (`x-request`) and
 * violations or conflicts: its document is what problems.ts renders for its response's
 * code. Values the code owns (limits, the configuration's defaults: the document shows the
 * defaults and never varies with a deployment) are the constants themselves, in template
 * literals (contract/document-values.ts names the ones only the document derives).
 *
 * What is still written literally is CHECKED against the code. In
 * test/gateway/openapi-data.test.ts: enumerations of the answers and webhook payloads
 * equal the code's vocabularies; each curl sample is its operation's method and path. In
 * test/gateway/openapi.test.ts: the `errors[]` of every `400` example is exactly what the
 * gateway's validators report for that example's request (`x-request`); every example
 * validates against its schema; each path's `x-other-methods.allow` is the `Allow` the
 * router answers. test/gateway/openapi-examples.test.ts sends the examples to a running
 * system.
 *
 * To add an endpoint: the route in gateway/routes/; what it accepts and answers in
 * gateway/contract/<group>.ts (TypeBox; listed in REQUEST_SCHEMAS or RESPONSE_SCHEMAS of
 * its index.ts, an answer also named in components-schemas.ts); its path and operation in
 * <group>-operations.ts (a new path item starts with `otherMethods(…)`, the `Allow` the
 * router answers, `HEAD` beside `GET`; a new tag also needs its entry in document.ts and
 * in TAGS below); its examples in <group>-examples.ts (a `400` example with `x-request`
 * and the `errors[]` the validators report, which the tests print when they differ). Then
 * `npm run openapi:write` and `npm run sdk:generate`, and run
 * test/gateway/openapi*.test.ts; the coverage test fails until route and document agree.
 */
import { DOCUMENT, SECURITY_SCHEMES } from './contract/document';
import { SCHEMAS } from './contract/components-schemas';
import { RESPONSES } from './contract/components-responses';
import { PARAMETERS } from './contract/components-parameters';
import { HEADERS } from './contract/components-headers';
import type { TagOperations } from './contract/operation';
import { TOKEN_OPERATIONS } from './contract/token-operations';
import { PROPERTIES_OPERATIONS } from './contract/properties-operations';
import { BLOCKS_OPERATIONS } from './contract/blocks-operations';
import { WEBHOOKS_OPERATIONS } from './contract/webhooks-operations';
import { DELETION_REQUESTS_OPERATIONS } from './contract/deletion-requests-operations';
import { EVENTS_OPERATIONS } from './contract/events-operations';
import { SANDBOX_OPERATIONS } from './contract/sandbox-operations';
import { REQUESTS_OPERATIONS } from './contract/requests-operations';
import { META_OPERATIONS } from './contract/meta-operations';
import { API_VERSION } from './contract/document-values';
import type { JsonObject } from './json';

/** Where the document is served (also a route of the contract router). */
export const OPENAPI_PATH = `/${API_VERSION}/openapi.json`;
/** Where the generated document is committed (npm run openapi:write). */
export const OPENAPI_FILE = 'docs/openapi.json';

/** Each tag's operations, in the order of the document's paths. */
const TAGS: TagOperations[] = [
  TOKEN_OPERATIONS,
  PROPERTIES_OPERATIONS,
  BLOCKS_OPERATIONS,
  WEBHOOKS_OPERATIONS,
  DELETION_REQUESTS_OPERATIONS,
  EVENTS_OPERATIONS,
  SANDBOX_OPERATIONS,
  REQUESTS_OPERATIONS,
  META_OPERATIONS,
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

/** Builds the document from the declarations of gateway/contract/ (pure; the schema objects are the validators' own, shared, not copied). */
export function buildOpenApiDocument(): OpenApiDocument {
  const paths: Record<string, unknown> = {};
  const webhooks: Record<string, unknown> = {};
  for (const tag of TAGS) {
    for (const [into, items] of [
      [paths, tag.paths],
      [webhooks, tag.webhooks ?? {}],
    ] as const) {
      for (const [key, item] of Object.entries(items)) {
        if (into[key]) throw new Error(`openapi: ${key} is declared by two tags`);
        into[key] = item;
      }
    }
  }
  const components = { securitySchemes: SECURITY_SCHEMES, schemas: SCHEMAS, responses: RESPONSES, parameters: PARAMETERS, headers: HEADERS };
  return { ...DOCUMENT, paths, webhooks, components } as unknown as OpenApiDocument;
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
