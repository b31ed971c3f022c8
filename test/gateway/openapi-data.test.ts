/**
 * The OpenAPI document as declared (gateway/contract/*-operations.ts, *-examples.ts,
 * components-*.ts, assembled by gateway/openapi.ts): what is written literally there is
 * checked here against the code that owns it.
 *
 * - Values: the configuration defaults the document shows are the code's.
 * - Vocabularies: every enumeration of the response and webhook schemas equals the
 *   code's (upsert results, property statuses, missing reasons, photo rejections, block
 *   reasons, endpoint statuses, delivery states, event kinds).
 * - Code samples: each curl command is its operation's request (method, path with the
 *   parameters' examples, its own query parameters — written by hand — and its first
 *   request example as body, shell quoting included — added by operation.ts).
 * - Problem examples: every problem response declares its code (operation.ts `problem`),
 *   so its examples' values are what problems.ts renders for that code. (The token
 *   endpoint's `{message}` examples are the route's own constants, contract/token.ts.)
 *
 * Checked in openapi.test.ts: that the `errors[]` of every `400` example is what the
 * validators report for its request, that every example validates against its schema
 * ("examples"), and that the 404 and 405 the gateway answers are the documented ones.
 */
import { buildOpenApiDocument } from '../../gateway/openapi';
import { CONTRACT_QUOTA, DOCS_URL, TOKEN_QUOTA, TOKEN_TTL_SECONDS } from '../../gateway/contract/document-values';
import { PROBLEM_CODES } from '../../gateway/problems';
import {
  blockReasons,
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
import { settings } from '../../services/kit/runtime';
import { documentAjv, operations, requestExamples } from './openapi-walk';

const doc = JSON.parse(JSON.stringify(buildOpenApiDocument()));
const schemas = doc.components.schemas;

describe('references', () => {
  test('every $ref names a component the document has (a shared problem response is named after its code)', () => {
    const missing: string[] = [];
    const walk = (v: any, at: string) => {
      if (v === null || typeof v !== 'object') return;
      if (typeof v.$ref === 'string') {
        const [, kind, name] = /^#\/components\/([^/]+)\/([^/]+)$/.exec(v.$ref) ?? [];
        if (!kind || !doc.components[kind]?.[name!]) missing.push(`${at}: ${v.$ref}`);
      }
      for (const [k, c] of Object.entries(v)) walk(c, `${at}/${k}`);
    };
    walk(doc, '');
    expect(missing).toEqual([]);
  });
});

describe('values', () => {
  test('the values the document shows are the configuration defaults', () => {
    expect([DOCS_URL, CONTRACT_QUOTA, TOKEN_QUOTA, TOKEN_TTL_SECONDS]).toEqual([
      settings.docsUrl.default,
      settings.rateLimitPerHour.default,
      settings.tokenRateLimitPerHour.default,
      settings.tokenTtlSeconds.default,
    ]);
    expect(doc.components.headers['RateLimit-Limit'].schema.examples).toEqual([settings.rateLimitPerHour.default]);
    expect(doc.paths['/token'].post.responses['200'].content['application/json'].examples.token.value.expires_in).toBe(settings.tokenTtlSeconds.default);
  });
});

describe('enumerations are the code’s vocabularies', () => {
  const props = (name: string) => schemas[name].properties;

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

  test('webhooks: one per event kind', () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([...webhookEvents.names].sort());
  });
});

describe('examples written literally are what the code renders', () => {
  test('every problem response declares its code and status, so its examples are the documents problems.ts renders for it', () => {
    const problemMedia: [string, any][] = [];
    const walk = (v: any, at: string) => {
      if (v === null || typeof v !== 'object') return;
      if (v['application/problem+json']) problemMedia.push([at, v['application/problem+json']]);
      for (const [k, c] of Object.entries(v)) walk(c, `${at}/${k}`);
    };
    walk(doc, '');
    expect(problemMedia.length).toBeGreaterThan(20);
    for (const [at, media] of problemMedia) {
      const own = media.schema.allOf?.[1]?.properties;
      const codes: (keyof typeof PROBLEM_CODES)[] = own?.code?.const ? [own.code.const] : (own?.code?.enum ?? []);
      expect([at, codes.length > 0, codes.map((c) => PROBLEM_CODES[c]?.status)]).toEqual([at, true, codes.map(() => own.status.const)]);
      for (const e of Object.values<any>(media.examples ?? {})) expect([at, codes.includes(e.value.code), e.value.status]).toEqual([at, true, own.status.const]);
    }
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
