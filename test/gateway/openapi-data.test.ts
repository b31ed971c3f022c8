/**
 * The OpenAPI document as data (gateway/openapi/, assembled by gateway/openapi.ts):
 * what is written literally there is checked here against the code that owns it.
 *
 * - Placeholders: every `{{NAME}}` of the data is one of VALUES and every VALUES entry
 *   is used; nothing of the conventions (`{{…}}`, `$embed`) is left in the document.
 * - Vocabularies: every enumeration of the response and webhook schemas equals the
 *   code's (problem codes, violation codes, upsert results, property statuses, missing
 *   reasons, photo rejections, block reasons, endpoint statuses, delivery states,
 *   event kinds, cancellation initiators).
 * - Code samples: each curl command is its operation's request (method, path with the
 *   parameters' examples, its own query parameters, its first request example as body).
 * - Problem examples: each is exactly the document problems.ts renders for its code
 *   (with its `errors[]` / `conflicts[]`), with the default documentation base and the
 *   examples' request id; the token endpoint's `{message}` examples are the route's bodies.
 *
 * Checked in openapi.test.ts: that the `errors[]` of every `400` example is what the
 * validators report for its request, that every example validates against its schema
 * ("examples"), and that the 404 and 405 the gateway answers are the documented ones.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApiDocument, EXAMPLE_REQUEST_ID, VALUES } from '../../gateway/openapi';
import { PROBLEM_CODES, type ProblemCode, problemDocument, ProblemError, VIOLATION_CODES } from '../../gateway/problems';
import {
  blockReasons,
  cancellationInitiators,
  deliveryStates,
  endpointStatuses,
  listingNightStates,
  missingReasons,
  photoRejectionReasons,
  photoStates,
  propertyStatuses,
  upsertResults,
  webhookEvents,
} from '../../gateway/public-enums';
import { INVALID_API_KEY, TOKEN_CEILING_REACHED, TOKEN_NOT_CONFIGURED, TOO_MANY_FAILURES } from '../../gateway/routes/token';
import { settings } from '../../services/kit/runtime';
import { ROOT } from '../support/process';
import { documentAjv, operations, requestExamples, responseExamples } from './openapi-walk';

const DATA = join(ROOT, 'gateway/openapi');
const doc = JSON.parse(JSON.stringify(buildOpenApiDocument()));
const schemas = doc.components.schemas;

/** Every data file's text, by its path under gateway/openapi/. */
function dataFiles(dir = DATA, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const rel = `${prefix}${entry.name}`;
    if (entry.isDirectory()) Object.assign(out, dataFiles(join(dir, entry.name), `${rel}/`));
    else out[rel] = readFileSync(join(dir, entry.name), 'utf8');
  }
  return out;
}

describe('placeholders and embedded schemas', () => {
  test('every {{NAME}} of the data and the contract declarations is a named value, every value is used, and none is left in the document', () => {
    const used = new Set<string>();
    const contract = join(ROOT, 'gateway/contract');
    const declarations = readdirSync(contract).map((name) => readFileSync(join(contract, name), 'utf8'));
    for (const text of [...Object.values(dataFiles()), ...declarations]) for (const m of text.matchAll(/\{\{([A-Z0-9_]+)\}\}/g)) used.add(m[1]!);
    expect([...used].sort()).toEqual(Object.keys(VALUES).sort());
    const text = JSON.stringify(doc);
    expect(text).not.toContain('{{');
    expect(text).not.toContain('$embed');
  });

  test('the values are the code’s', () => {
    expect(VALUES).toEqual(
      expect.objectContaining({
        DOCS_URL: settings.docsUrl.default,
        CONTRACT_QUOTA: settings.rateLimitPerHour.default,
        TOKEN_QUOTA: settings.tokenRateLimitPerHour.default,
        TOKEN_TTL_SECONDS: settings.tokenTtlSeconds.default,
      }),
    );
    expect(doc.components.headers['RateLimit-Limit'].schema.examples).toEqual([settings.rateLimitPerHour.default]);
    expect(doc.paths['/token'].post.responses['200'].content['application/json'].examples.token.value.expires_in).toBe(settings.tokenTtlSeconds.default);
  });
});

describe('enumerations are the code’s vocabularies', () => {
  const props = (name: string) => schemas[name].properties;

  test('problem codes and violation codes', () => {
    const codes = Object.keys(PROBLEM_CODES);
    expect(props('Problem').code.examples).toEqual(codes);
    for (const c of codes) expect([c, props('Problem').code.description.includes(`\`${c}\``)]).toEqual([c, true]);
    expect(props('Violation').code.enum).toEqual([...VIOLATION_CODES]);
  });

  test('response schemas', () => {
    expect(props('PropertyUpsert').result.enum).toEqual(upsertResults.names);
    expect(props('BlockPut').result.enum).toEqual(upsertResults.names);
    expect(props('PropertyUpsert').status.enum).toEqual(propertyStatuses.names);
    expect(props('PropertyUpsert').missing.items.enum).toEqual(missingReasons.names);
    expect(props('PropertyUpsert').photos_rejected.items.properties.reason.enum).toEqual(photoRejectionReasons.names);
    expect(props('StoredProperty').missing.items.enum).toEqual(missingReasons.names);
    expect(props('PhotoState').state.enum).toEqual(photoStates.names);
    expect(props('PhotoState').reason.enum).toEqual(photoRejectionReasons.names);
    expect(props('BlockItem').reason.enum).toEqual(blockReasons.names);
    expect(props('ListingNight').state.enum).toEqual(listingNightStates.names.filter((n) => n !== 'withdrawn'));
    expect(props('WebhookEndpointState').status.enum).toEqual(endpointStatuses.names);
    expect(props('Delivery').state.enum).toEqual(deliveryStates.names);
    const subscribable = (webhookEvents.names as string[]).filter((k) => k !== 'endpoint.challenge');
    expect(props('Delivery').event_type.enum).toEqual(subscribable);
    expect(props('WebhookEndpointState').events.items.enum).toEqual(subscribable);
  });

  test('webhooks: one per event kind, and the cancellation initiators', () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([...webhookEvents.names].sort());
    expect(props('BookingCancelledEvent').data.properties.initiated_by.enum).toEqual(cancellationInitiators.names);
  });
});

describe('examples written as data are what the code renders', () => {
  test('every problem example is the document problems.ts renders for its code', () => {
    let count = 0;
    const check = (where: string, value: any) => {
      const err = new ProblemError(value.code as ProblemCode, { errors: value.errors, conflicts: value.conflicts });
      expect([where, value]).toEqual([where, problemDocument(err, settings.docsUrl.default, EXAMPLE_REQUEST_ID)]);
      count++;
    };
    for (const [name, r] of Object.entries<any>(doc.components.responses)) {
      for (const [ex, e] of Object.entries<any>(r.content['application/problem+json']?.examples ?? {})) check(`${name} ${ex}`, e.value);
    }
    for (const op of operations(doc)) {
      for (const e of responseExamples(doc, op)) {
        if (e.mediaType === 'application/problem+json' && !op.op.responses[e.status].$ref) check(`${op.key} ${e.status} ${e.name}`, e.example.value);
      }
    }
    expect(count).toBeGreaterThan(20);
  });

  test("the token endpoint's refusals are the route's bodies", () => {
    const r = doc.components.responses;
    const values = (name: string) => Object.values<any>(r[name].content['application/json'].examples).map((e) => e.value);
    expect(values('TokenRefused')).toEqual([INVALID_API_KEY]);
    expect(values('TokenRateLimited')).toEqual([TOKEN_CEILING_REACHED, TOO_MANY_FAILURES]);
    expect(values('TokenNotConfigured')).toEqual([TOKEN_NOT_CONFIGURED]);
  });

  test("each curl sample is its operation's request: method, path with the parameters' examples, query parameters of its own, the first request example as body", () => {
    for (const op of operations(doc).filter((o) => o.at[0] === 'paths')) {
      const source: string = op.op['x-codeSamples'][0].source;
      const m = /^curl -X ([A-Z]+) "\$BASE_URL([^"?]*)(?:\?([^"]*))?"/.exec(source);
      const path = op.path.replace(/\{([a-z_]+)\}/g, (_, n: string) => encodeURIComponent(op.parameters.find((p) => p.name === n).example));
      expect([op.key, m?.[1], m?.[2]]).toEqual([op.key, op.method.toUpperCase(), path]);
      const queryNames = op.parameters.filter((p) => p.in === 'query').map((p) => p.name);
      for (const name of new URLSearchParams(m?.[3] ?? '').keys()) expect([op.key, name, queryNames.includes(name)]).toEqual([op.key, name, true]);
      const data = /--data '(.*)'$/s.exec(source)?.[1];
      const first = requestExamples(op)[0];
      if (op.op.requestBody?.required) expect([op.key, data === undefined]).toEqual([op.key, false]);
      if (data !== undefined) expect([op.key, JSON.parse(data.replace(/'\\''/g, "'"))]).toEqual([op.key, first?.example.value]);
    }
  });

  test('POST /token declares its body as ignored: optional, any media type, any value', () => {
    const body = doc.paths['/token'].post.requestBody;
    expect(body.required).toBe(false);
    expect(Object.keys(body.content)).toEqual(['*/*']);
    const { schemaAt } = documentAjv(doc);
    const fn = schemaAt(['paths', '/token', 'post', 'requestBody', 'content', '*/*', 'schema']);
    for (const v of ['', 'key=psk_x', 42, null, [], { api_key: 'psk_x' }]) expect([v, fn(v)]).toEqual([v, true]);
  });
});
