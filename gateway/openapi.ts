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
