/**
 * GET /v1/openapi.json (issue 3 item 7): the OpenAPI 3.1 document of the public
 * contract, served by the real gateway app without authentication.
 *
 * - It is linted by the real linter: `redocly lint` (node_modules/.bin/redocly, the
 *   `recommended` ruleset) on the served bytes, expecting no error and no warning.
 * - Its schemas are the validator's own: the body schemas deep-equal the files in
 *   gateway/schemas/ and are the very objects validate.ts compiled; every parameter's
 *   schema is the parameters.json entry that validates it.
 * - Every route the contract router knows is an operation of the document, and every
 *   operation is a route the gateway answers.
 * - What the presenters, the problem renderer and the webhook envelopes produce fits
 *   the response and webhook schemas (every public enum value included).
 *
 * The gateway runs in-process with its internal services unreachable: serving the
 * document must need none of them (no Authorize call, nothing counted).
 */
import { credentialInterceptor } from '../support/credentials';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { BlockReason, BlockSchema, ListBlocksResponseSchema, PutBlockResponseSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import { BookingCancelledSchema, BookingConfirmedSchema, CancellationInitiator, UserErasedSchema } from '../../gen/psync/calendar/v1/events_pb';
import { MissingReason, PhotoRejectionReason, PropertyStatus, UpsertPropertyResponseSchema } from '../../gen/psync/catalog/v1/catalog_pb';
import { UpsertResult } from '../../gen/psync/common/v1/upsert_result_pb';
import { ExchangeTokenResponseSchema } from '../../gen/psync/identity/v1/identity_pb';
import {
  AcknowledgeDeletionResponseSchema,
  EndpointStatus,
  PutEndpointResponseSchema,
  WebhookEventType,
} from '../../gen/psync/notifications/v1/notifications_pb';
import { createGatewayApp } from '../../gateway/app';
import { buildOpenApiDocument, openApiDocument, SPEC_DATE } from '../../gateway/openapi';
import { presentBlockList, presentBlockPut } from '../../gateway/presenters/blocks';
import { presentAcknowledgement } from '../../gateway/presenters/deletion-requests';
import { presentPropertyUpsert } from '../../gateway/presenters/properties';
import { presentToken } from '../../gateway/presenters/token';
import { presentEndpoint } from '../../gateway/presenters/webhooks';
import { PROBLEM_CODES, type ProblemCode, problemDocument, ProblemError } from '../../gateway/problems';
import { contractRoutes, type RouteDeps } from '../../gateway/routes';
import { openApiRoutes } from '../../gateway/routes/openapi';
import acknowledgeSchema from '../../gateway/schemas/acknowledge.json';
import blockSchema from '../../gateway/schemas/block.json';
import parametersSchema from '../../gateway/schemas/parameters.json';
import propertySchema from '../../gateway/schemas/property.json';
import webhookEndpointSchema from '../../gateway/schemas/webhook-endpoint.json';
import { loadConfig } from '../../services/kit/config';
import { InternalClients } from '../../services/kit/internal-client';
import { createLogger } from '../../services/kit/logger';
import { challengeEnvelope, fromBookingCancelled, fromBookingConfirmed, fromUserErased, scrubGuestName } from '../../services/notifications/envelope';
import { ROOT } from '../support/process';
import { freePort } from '../support/system';
import { send, type Received } from './http-client';

let server: http.Server;
let base: string;
let clients: InternalClients;
let served: Received;
/** The served document (parsed). */
let doc: any;

const read = (file: string): unknown => JSON.parse(readFileSync(join(ROOT, 'gateway/schemas', file), 'utf8'));
const METHODS = ['get', 'put', 'post', 'delete'] as const;
const CONTRACT_ERRORS = ['400', '401', '403', '429', '500', '501', '503'];

beforeAll(async () => {
  const dead = `http://127.0.0.1:${await freePort()}`;
  const config = loadConfig({ RATE_LIMIT_PER_HOUR: '600', TOKEN_RATE_LIMIT_PER_HOUR: '60' });
  const log = createLogger({ level: 'silent', name: 'openapi-test' });
  clients = new InternalClients([credentialInterceptor()], 2000);
  const app = createGatewayApp({ config, log, clients, urls: { identity: dead, catalog: dead, calendar: dead, notifications: dead } }, () => false);
  server = http.createServer(app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  served = await send(base, { path: '/v1/openapi.json' });
  doc = served.json;
});

afterAll(async () => {
  clients.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('GET /v1/openapi.json', () => {
  test('served without authentication (identity is unreachable), JSON, with the default rate-limit headers', () => {
    expect(served.status).toBe(200);
    expect(served.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(served.headers['x-request-id']).toEqual(expect.any(String));
    // Not counted: the full quota, as for a request with no key.
    expect(served.headers['ratelimit-policy']).toBe('600;w=3600');
    expect(served.headers['ratelimit-remaining']).toBe('600');
    expect(served.text).toBe(openApiDocument().text);
    expect(doc.openapi).toBe('3.1.0');
  });

  test('a token is not looked at (a bad one changes nothing); HEAD is GET; other methods are 405', async () => {
    const withBadToken = await send(base, { path: '/v1/openapi.json', headers: { Authorization: 'Bearer pst_nope.nope' } });
    expect(withBadToken.status).toBe(200);
    expect(withBadToken.text).toBe(served.text);
    const head = await send(base, { method: 'HEAD', path: '/v1/openapi.json' });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    const post = await send(base, { method: 'POST', path: '/v1/openapi.json' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
  });
});

describe('linted by @redocly/cli', () => {
  test('redocly lint (recommended) finds no error and no warning', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'psync-openapi-'));
    try {
      writeFileSync(join(dir, 'openapi.json'), served.text);
      writeFileSync(join(dir, 'redocly.yaml'), 'extends:\n  - recommended\n');
      // The one finding that does not apply, ignored for that operation only (not the rule):
      // operation-4xx-response on GET /openapi.json — serving a static document without
      // authentication, validation or counting has no 4xx outcome to describe. Unknown
      // methods (405) belong to the path, not to the operation.
      writeFileSync(
        join(dir, '.redocly.lint-ignore.yaml'),
        "openapi.json:\n  operation-4xx-response:\n    - '#/paths/~1openapi.json/get/responses'\n",
      );
      const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(
          join(ROOT, 'node_modules/.bin/redocly'),
          ['lint', '--config', 'redocly.yaml', '--format', 'json', 'openapi.json'],
          { cwd: dir, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' }, timeout: 60000 },
          (err, out, errOut) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout: out, stderr: errOut }),
        );
      });
      let report: { totals: { errors: number; warnings: number; ignored: number }; problems: { ruleId: string; message: string }[] };
      try {
        report = JSON.parse(stdout);
      } catch {
        throw new Error(`redocly printed no JSON report (exit ${code}):\n${stdout}\n${stderr}`);
      }
      expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
      expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 1 });
      expect(code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('built from the schemas the gateway validates with', () => {
  test('the request bodies are the schema files, unchanged', () => {
    const s = doc.components.schemas;
    expect(s.Property).toEqual(read('property.json'));
    expect(s.Block).toEqual(read('block.json'));
    expect(s.WebhookEndpoint).toEqual(read('webhook-endpoint.json'));
    expect(s.DeletionAcknowledgement).toEqual(read('acknowledge.json'));
    expect(s.Money).toEqual((read('property.json') as any).properties.base_rate);
    const body = (path: string, method: string) => doc.paths[path][method].requestBody.content['application/json'].schema.$ref;
    expect(body('/properties/{provider_id}', 'put')).toBe('#/components/schemas/Property');
    expect(body('/blocks/{external_uid}', 'put')).toBe('#/components/schemas/Block');
    expect(body('/webhooks/endpoint', 'put')).toBe('#/components/schemas/WebhookEndpoint');
    expect(body('/deletion-requests/{event_id}/acknowledge', 'post')).toBe('#/components/schemas/DeletionAcknowledgement');
  });

  test('in-process they are the very objects validate.ts compiled (the same JSON modules), not copies', () => {
    const built = buildOpenApiDocument();
    expect(built.components.schemas.Property).toBe(propertySchema);
    expect(built.components.schemas.Block).toBe(blockSchema);
    expect(built.components.schemas.WebhookEndpoint).toBe(webhookEndpointSchema);
    expect(built.components.schemas.DeletionAcknowledgement).toBe(acknowledgeSchema);
    const p = built.components.parameters as Record<string, { schema: unknown }>;
    expect(p.provider_id!.schema).toBe(parametersSchema.$defs.property_path.properties.provider_id);
    expect(p.page_size!.schema).toBe(parametersSchema.$defs.blocks_query.properties.page_size);
    // Building the document leaves the validator's schemas as they were on disk.
    expect(propertySchema).toEqual(read('property.json'));
    expect(parametersSchema).toEqual(read('parameters.json'));
  });

  test('every path and query parameter is the parameters.json schema that validates it, and nothing else', () => {
    const defs = (read('parameters.json') as any).$defs;
    const paramsOf = (path: string, method: string) =>
      [...(doc.paths[path].parameters ?? []), ...(doc.paths[path][method].parameters ?? [])].map((p: any) =>
        p.$ref ? doc.components.parameters[p.$ref.split('/').pop()] : p,
      );
    const expectParams = (path: string, method: string, where: 'path' | 'query', def: any) => {
      const ps = paramsOf(path, method).filter((p: any) => p.in === where);
      expect(ps.map((p: any) => p.name).sort()).toEqual(Object.keys(def.properties ?? {}).sort());
      for (const p of ps) {
        expect(p.schema).toEqual(def.properties[p.name]);
        expect(p.required).toBe(where === 'path');
      }
    };
    expectParams('/properties/{provider_id}', 'put', 'path', defs.property_path);
    expectParams('/blocks/{external_uid}', 'put', 'path', defs.block_path);
    expectParams('/blocks/{external_uid}', 'delete', 'path', defs.block_path);
    expectParams('/deletion-requests/{event_id}/acknowledge', 'post', 'path', defs.deletion_request_path);
    expectParams('/blocks', 'get', 'query', defs.blocks_query);
    for (const [path, method] of [['/properties/{provider_id}', 'put'], ['/blocks/{external_uid}', 'put'], ['/blocks/{external_uid}', 'delete'], ['/webhooks/endpoint', 'put'], ['/deletion-requests/{event_id}/acknowledge', 'post']] as const) {
      expectParams(path, method, 'query', defs.no_parameters);
    }
  });
});

describe('covers the contract', () => {
  /** `/v1/blocks/:external_uid` → `/blocks/{external_uid}` (the server URL is `/v1`). */
  const docPath = (template: string) => template.replace(/^\/v1/, '').replace(/:([a-z_]+)/g, '{$1}');
  const stubDeps = { upstreams: {}, contract: {}, tokenQuota: 60 } as unknown as RouteDeps;
  const routes = [...contractRoutes(stubDeps), ...openApiRoutes()];

  test('every route the contract router knows is an operation, and every operation is a route', () => {
    const fromRoutes = routes.map((r) => `${r.method} ${docPath(r.path)}`).sort();
    const fromDoc = Object.entries(doc.paths)
      .flatMap(([path, item]: [string, any]) => METHODS.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    expect(fromDoc).toEqual(fromRoutes);
    expect(fromRoutes).toEqual(
      [
        'POST /token',
        'PUT /properties/{provider_id}',
        'PUT /blocks/{external_uid}',
        'DELETE /blocks/{external_uid}',
        'GET /blocks',
        'PUT /webhooks/endpoint',
        'POST /deletion-requests/{event_id}/acknowledge',
        'GET /openapi.json',
      ].sort(),
    );
  });

  test('every documented operation is answered by the gateway (never 404/405)', async () => {
    for (const [path, item] of Object.entries(doc.paths) as [string, any][]) {
      for (const m of METHODS.filter((x) => item[x])) {
        const url = `/v1${path.replace(/\{[a-z_]+\}/g, (p) => (p === '{event_id}' ? '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f' : 'x'))}`;
        const res = await send(base, { method: m.toUpperCase(), path: url });
        // Without a token: 401 (the token endpoint's {message}, or a problem), 200 for this document.
        expect([`${m} ${path}`, res.status]).toEqual([`${m} ${path}`, path === '/openapi.json' ? 200 : 401]);
      }
    }
  });

  test('info, servers and security schemes', () => {
    expect(doc.info.version).toContain(SPEC_DATE);
    expect(doc.info.version).toContain('v1');
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/v1' })]);
    expect(doc.security).toEqual([{ accessToken: [] }]);
    expect(doc.components.securitySchemes.accessToken).toEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }));
    expect(doc.components.securitySchemes.apiKey).toEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }));
    expect(doc.paths['/token'].post.security).toEqual([{ apiKey: [] }]);
    expect(doc.paths['/openapi.json'].get.security).toEqual([]);
  });

  test('documented statuses per endpoint, problem documents for every error, {message} for token refusals', () => {
    const resolve = (r: any) => (r.$ref ? doc.components.responses[r.$ref.split('/').pop()] : r);
    const statuses = (path: string, m: string) => Object.keys(doc.paths[path][m].responses).sort();
    expect(statuses('/token', 'post')).toEqual(['200', '401', '429', '500', '503']);
    expect(statuses('/properties/{provider_id}', 'put')).toEqual(['200', ...CONTRACT_ERRORS].sort());
    expect(statuses('/blocks/{external_uid}', 'put')).toEqual(['200', '404', '409', ...CONTRACT_ERRORS].sort());
    expect(statuses('/blocks/{external_uid}', 'delete')).toEqual(['204', ...CONTRACT_ERRORS].sort());
    expect(statuses('/blocks', 'get')).toEqual(['200', ...CONTRACT_ERRORS].sort());
    expect(statuses('/webhooks/endpoint', 'put')).toEqual(['200', ...CONTRACT_ERRORS].sort());
    expect(statuses('/deletion-requests/{event_id}/acknowledge', 'post')).toEqual(['200', '404', ...CONTRACT_ERRORS].sort());

    for (const [path, item] of Object.entries(doc.paths) as [string, any][]) {
      for (const m of METHODS.filter((x) => item[x])) {
        for (const [status, r] of Object.entries(item[m].responses) as [string, any][]) {
          const res = resolve(r);
          const where = `${m} ${path} ${status}`;
          // Every response carries the rate-limit headers; a 429 adds Retry-After, a 401 WWW-Authenticate.
          for (const h of ['RateLimit-Policy', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit']) {
            expect([where, h, res.headers?.[h]]).toEqual([where, h, { $ref: `#/components/headers/${h}` }]);
          }
          if (status === '429') expect([where, res.headers['Retry-After']]).toEqual([where, { $ref: '#/components/headers/Retry-After' }]);
          if (status === '401') expect([where, res.headers['WWW-Authenticate']]).toEqual([where, { $ref: '#/components/headers/WWW-Authenticate' }]);
          if (Number(status) < 400) continue;
          const tokenRefusal = path === '/token' && status !== '500';
          const media = Object.keys(res.content);
          expect([where, media]).toEqual([where, [tokenRefusal ? 'application/json' : 'application/problem+json']]);
          if (!tokenRefusal) {
            const schema = res.content['application/problem+json'].schema;
            expect(schema.allOf[0]).toEqual({ $ref: '#/components/schemas/Problem' });
            expect(schema.allOf[1].properties.status).toEqual({ const: Number(status) });
          }
        }
      }
    }
    expect(Object.keys(doc.components.schemas.Problem.properties)).toEqual(
      expect.arrayContaining(['type', 'title', 'status', 'detail', 'instance', 'code', 'errors', 'conflicts']),
    );
    expect(doc.components.headers['Retry-After'].required).toBe(true);
  });

  test('the webhook deliveries are OpenAPI 3.1 webhooks, signed', () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual(['booking.cancelled', 'booking.confirmed', 'endpoint.challenge', 'user.erased']);
    for (const [kind, item] of Object.entries(doc.webhooks) as [string, any][]) {
      const op = item.post;
      expect(op.parameters.map((p: any) => [p.name, p.in, p.required])).toEqual([
        ['X-Signature', 'header', true],
        ['X-Signature-Timestamp', 'header', true],
        ['X-Signature-Previous', 'header', false],
      ]);
      const schema = doc.components.schemas[op.requestBody.content['application/json'].schema.$ref.split('/').pop()];
      expect([kind, schema.properties.event_type]).toEqual([kind, { type: 'string', const: kind }]);
    }
    expect(doc.components.schemas.BookingConfirmedEvent.properties.data.required).toEqual([
      'booking_reference', 'listing_id', 'provider_id', 'check_in', 'check_out', 'check_in_time', 'check_out_time', 'party_size', 'guest_name', 'amount_paid',
    ]);
    expect(doc.components.schemas.BookingCancelledEvent.properties.data.required).toEqual(['booking_reference', 'listing_id', 'cancelled_at', 'initiated_by']);
    expect(doc.components.schemas.UserErasedEvent.properties.data.required).toEqual(['booking_references', 'provider_ids']);
  });
});

describe('what the gateway sends fits the document', () => {
  let ajv: Ajv2020;
  const schemaOf = (name: string): ValidateFunction => {
    const fn = ajv.getSchema(`urn:psync:openapi#/components/schemas/${name}`);
    if (!fn) throw new Error(`no schema ${name}`);
    return fn;
  };
  /** Valid, and (responses have no additionalProperties: clients tolerate new fields) no field the schema does not name. */
  const expectFits = (name: string, value: unknown) => {
    const fn = schemaOf(name);
    const ok = fn(value);
    expect([name, ok ? [] : fn.errors]).toEqual([name, []]);
    const props = doc.components.schemas[name].properties;
    if (props && value && typeof value === 'object') {
      expect(Object.keys(value).filter((k) => !(k in props))).toEqual([]);
    }
  };
  /** Every value of a protobuf enum except UNSPECIFIED (0). */
  const values = <E extends number>(e: Record<string, string | number>): E[] => Object.values(e).filter((v): v is E => typeof v === 'number' && v !== 0);

  beforeAll(() => {
    ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(JSON.parse(served.text), 'urn:psync:openapi');
  });

  test('token', () => {
    expectFits(
      'Token',
      presentToken(create(ExchangeTokenResponseSchema, { accessToken: 'pst_x.y', tokenType: 'Bearer', expiresIn: 900, workspaceId: '8a5e2c61-1f3b-4d7e-9c0a-6b2d4e8f1a37', sandbox: true })),
    );
    expectFits('Message', { message: 'invalid API key' });
  });

  test('property upsert: every missing reason, every rejection reason, every status; listing_id null', () => {
    for (const listingId of ['L-1', undefined]) {
      for (const status of values<PropertyStatus>(PropertyStatus)) {
        expectFits(
          'PropertyUpsert',
          presentPropertyUpsert(
            create(UpsertPropertyResponseSchema, {
              providerId: 'p-1',
              result: UpsertResult.CREATED,
              listingId,
              status,
              publishable: false,
              missing: values<MissingReason>(MissingReason),
              unknownAmenities: ['sauna'],
              photosRejected: values<PhotoRejectionReason>(PhotoRejectionReason).map((reason) => ({ url: 'https://img.example.org/a.jpg', reason })),
            }),
          ),
        );
      }
    }
  });

  test('blocks: put response and list items with every reason', () => {
    for (const result of values<UpsertResult>(UpsertResult)) {
      expectFits('BlockPut', presentBlockPut(create(PutBlockResponseSchema, { result, nights: 730, listingId: 'L-1' })));
    }
    const items = values<BlockReason>(BlockReason).map((reason, i) =>
      create(BlockSchema, { externalUid: `r-${i}`, listingId: 'L-1', checkIn: '2030-01-01', checkOut: '2030-01-03', reason, nights: 2 }),
    );
    const list = presentBlockList(create(ListBlocksResponseSchema, { items, hasMore: true }));
    expectFits('BlockList', list);
    for (const item of list.items) expectFits('BlockItem', item);
    expectFits('BlockList', presentBlockList(create(ListBlocksResponseSchema, { items: [], hasMore: false })));
  });

  test('webhook endpoint: every status and subscribable kind, with and without the secret', () => {
    const kinds = values<WebhookEventType>(WebhookEventType).filter((k) => k !== WebhookEventType.ENDPOINT_CHALLENGE);
    for (const status of values<EndpointStatus>(EndpointStatus)) {
      for (const signingSecret of ['whsec_x', undefined]) {
        expectFits('WebhookEndpointState', presentEndpoint(create(PutEndpointResponseSchema, { url: 'https://hooks.example.org/psync', events: kinds, status, signingSecret })));
      }
    }
    expectFits('WebhookEndpointState', presentEndpoint(create(PutEndpointResponseSchema, { url: 'https://hooks.example.org:8443/p', events: [], status: EndpointStatus.ACTIVE })));
  });

  test('deletion acknowledgement', () => {
    expectFits(
      'DeletionAcknowledgementState',
      presentAcknowledgement(create(AcknowledgeDeletionResponseSchema, { eventId: '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f', acknowledgedAt: timestampFromMs(Date.UTC(2030, 0, 1)) })),
    );
  });

  test('problem documents of every code fit Problem and their documented response', () => {
    const byCode = new Map<string, string[]>();
    for (const [name, r] of Object.entries(doc.components.responses) as [string, any][]) {
      const media = r.content?.['application/problem+json'];
      if (!media) continue;
      const code = media.schema.allOf[1].properties.code.const as string;
      byCode.set(code, [...(byCode.get(code) ?? []), name]);
      const fn = ajv.getSchema(`urn:psync:openapi#/components/responses/${name}/content/application~1problem+json/schema`)!;
      const err = new ProblemError(code as ProblemCode, {
        errors: code === 'validation_failed' ? [{ field: 'body', code: 'type' }] : undefined,
        conflicts: code === 'conflict' ? ['2030-01-01'] : undefined,
      });
      const document = problemDocument(err, 'https://docs.test.example/v1', '3f1c5f0e-8d2b-4c53-9a61-2b1f2e7c9d40');
      expect([name, fn(document) ? [] : fn.errors]).toEqual([name, []]);
      expect([name, fn(problemDocument(new ProblemError('internal_error'), 'https://d.example', '3f1c5f0e-8d2b-4c53-9a61-2b1f2e7c9d40'))]).toEqual([name, code === 'internal_error']);
    }
    // Every code a contract endpoint answers is documented (404 not_found / 405 belong to no operation).
    expect([...byCode.keys()].sort()).toEqual(
      (Object.keys(PROBLEM_CODES) as ProblemCode[]).filter((c) => c !== 'not_found' && c !== 'method_not_allowed').sort(),
    );
    for (const code of Object.keys(PROBLEM_CODES) as ProblemCode[]) expectFits('Problem', problemDocument(new ProblemError(code), 'https://d.example', '3f1c5f0e-8d2b-4c53-9a61-2b1f2e7c9d40'));
  });

  test('the delivery envelopes the notifications service builds fit the webhook schemas', () => {
    const at = timestampFromMs(Date.UTC(2030, 4, 1, 12));
    const confirmed = JSON.parse(
      fromBookingConfirmed(
        create(BookingConfirmedSchema, {
          eventId: '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f', workspaceId: 'w', occurredAt: at, bookingReference: 'BK1', listingId: 'L1',
          checkIn: '2030-05-01', checkOut: '2030-05-03', checkInTime: '15:00', checkOutTime: '11:00', partySize: 2, guestName: 'Ada',
          amountPaid: { value: '10.00', currency: 'EUR' },
        }),
      ).body,
    );
    expectFits('BookingConfirmedEvent', confirmed);
    expectFits('BookingConfirmedEvent', JSON.parse(scrubGuestName(JSON.stringify(confirmed))));
    for (const initiatedBy of values<CancellationInitiator>(CancellationInitiator)) {
      expectFits(
        'BookingCancelledEvent',
        JSON.parse(fromBookingCancelled(create(BookingCancelledSchema, { eventId: '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f', workspaceId: 'w', occurredAt: at, cancelledAt: at, bookingReference: 'BK1', listingId: 'L1', initiatedBy })).body),
      );
    }
    expectFits(
      'UserErasedEvent',
      JSON.parse(fromUserErased(create(UserErasedSchema, { eventId: '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f', workspaceId: 'w', occurredAt: at, bookingReferences: ['BK1'], providerIds: ['p1'] })).body),
    );
    const challenge = challengeEnvelope();
    expectFits('ChallengeEvent', JSON.parse(challenge.body));
    expectFits('ChallengeAnswer', { challenge: challenge.challenge });
  });
});
