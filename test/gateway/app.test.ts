/**
 * The gateway app in-process, with its internal services unreachable (a closed port):
 * everything the contract frame answers on its own — 404/405, 401 without a token,
 * the token endpoint's refusal, 503 when identity cannot be reached — with problem
 * documents, X-Request-Id, rate-limit headers and one access log line per request.
 */
import { loadConfig } from '../../services/kit/runtime';
import { createLogger } from '../../services/kit/base';
import { startInProcessGateway, type InProcessGateway } from './in-process-gateway';
import { send, jsonRequest, Received } from './http-client';
import { validProperty } from './fixtures';
import { logEvents } from '../support/log-events';

let gateway: InProcessGateway;
let base: string;
const logLines: Record<string, any>[] = [];
const DOCS = 'https://docs.test.example/v1';

beforeAll(async () => {
  const config = loadConfig({ DOCS_URL: DOCS, RATE_LIMIT_PER_HOUR: '600', TOKEN_RATE_LIMIT_PER_HOUR: '60' });
  const log = createLogger({ level: 'debug', name: 'gateway-test' }, { write: (s: string) => void logLines.push(JSON.parse(s)) });
  gateway = await startInProcessGateway(config, log);
  base = gateway.base;
});

afterAll(() => gateway?.close());

function expectProblem(res: Received, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json).toEqual(
    expect.objectContaining({
      type: `${DOCS}/errors/${code.replace(/_/g, '-')}`,
      title: expect.any(String),
      status,
      detail: expect.any(String),
      instance: `urn:psync:request:${res.headers['x-request-id']}`,
      code,
    }),
  );
}

function expectDefaultRateLimit(res: Received, quota = 600) {
  expect(res.headers['ratelimit-policy']).toBe(`${quota};w=3600`);
  expect(res.headers['ratelimit-limit']).toBe(String(quota));
  expect(res.headers['ratelimit-remaining']).toBe(String(quota));
  const reset = Number(res.headers['ratelimit-reset']);
  expect(reset).toBeGreaterThanOrEqual(1);
  expect(reset).toBeLessThanOrEqual(3600);
  // Seconds left in the epoch-aligned hour (one second of slack for the clock tick, also across the hour).
  const diff = Math.abs(reset - (3600 - (Math.floor(Date.now() / 1000) % 3600)));
  expect(Math.min(diff, 3600 - diff)).toBeLessThanOrEqual(1);
  expect(res.headers.ratelimit).toBe(`"default";r=${quota};t=${reset}`);
}

describe('outside the contract', () => {
  test('/healthz answers without rate-limit headers', async () => {
    const res = await send(base, { path: '/healthz' });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ status: 'ok' });
    expect(res.headers['ratelimit-policy']).toBeUndefined();
  });

  test.each(['/', '/v1', '/v1/', '/v2/blocks', '/v1/property', '/v1/blocks/a/b', '/v1//blocks', '/V1/blocks', '/v1/webhooks', '/v1/openapi.yaml'])(
    'unknown path %s → 404 not_found problem',
    async (path) => {
      const res = await send(base, { path });
      expectProblem(res, 404, 'not_found');
      expectDefaultRateLimit(res);
    },
  );

  test.each<[string, string, string]>([
    ['PATCH', '/v1/blocks/abc', 'PUT, DELETE'],
    ['GET', '/v1/blocks/abc', 'PUT, DELETE'],
    ['POST', '/v1/blocks', 'GET, HEAD'],
    ['DELETE', '/v1/properties/p1', 'PUT, GET, HEAD'],
    ['POST', '/v1/properties', 'GET, HEAD'],
    ['PUT', '/v1/listings/lst_1/nights', 'GET, HEAD'],
    ['GET', '/v1/token', 'POST'],
    ['PUT', '/v1/token', 'POST'],
    ['DELETE', '/v1/webhooks/endpoint', 'PUT, GET, HEAD'],
    ['GET', '/v1/deletion-requests/6f1c1f57-3a39-4f0a-9a8e-0a4f2e2d7c11/acknowledge', 'POST'],
    ['OPTIONS', '/v1/blocks', 'GET, HEAD'],
  ])('%s %s → 405 with Allow: %s', async (method, path, allow) => {
    const res = await send(base, { method, path });
    expectProblem(res, 405, 'method_not_allowed');
    expect(res.headers.allow).toBe(allow);
    expectDefaultRateLimit(res);
  });

  test('404 and 405 with a token still answer when identity cannot be asked', async () => {
    const res = await send(base, { path: '/v1/nothing', headers: { Authorization: 'Bearer pst_abc.def' } });
    expectProblem(res, 404, 'not_found');
    expectDefaultRateLimit(res);
  });
});

describe('authentication: only the Authorization header', () => {
  test.each<[string, Record<string, string>]>([
    ['no header', {}],
    ['token in the query string', {}],
    ['token in a cookie', { Cookie: 'access_token=pst_abc.def; token=pst_abc.def' }],
    ['Basic scheme', { Authorization: 'Basic dXNlcjpwYXNz' }],
    ['Bearer without a token', { Authorization: 'Bearer ' }],
    ['token with spaces', { Authorization: 'Bearer a b' }],
  ])('%s → 401 unauthorized, full quota shown', async (name, headers) => {
    const path = name.includes('query') ? '/v1/blocks?access_token=pst_abc.def' : '/v1/blocks';
    const res = await send(base, { path, headers });
    expectProblem(res, 401, 'unauthorized');
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    expectDefaultRateLimit(res);
  });

  test('authentication comes before validation: an invalid body without a token is 401', async () => {
    const res = await send(base, { method: 'PUT', path: '/v1/properties/', headers: { 'Content-Type': 'text/plain' }, body: 'garbage' });
    expectProblem(res, 401, 'unauthorized');
  });

  test('HEAD is answered like GET, without a body', async () => {
    const res = await send(base, { method: 'HEAD', path: '/v1/blocks' });
    expect(res.status).toBe(401);
    expect(res.text).toBe('');
  });

  test('identity unreachable → 503 service_unavailable problem, default headers', async () => {
    const res = await send(base, jsonRequest('PUT', '/v1/properties/p1', validProperty(), { Authorization: 'Bearer pst_abc.def' }));
    expectProblem(res, 503, 'service_unavailable');
    expectDefaultRateLimit(res);
  });
});

describe('POST /v1/token on its own', () => {
  const refusal = (headers: Record<string, string>) => send(base, { method: 'POST', path: '/v1/token', headers, body: 'ignored body {' });

  test('missing or malformed Authorization → identical 401 {message}', async () => {
    const answers = await Promise.all([
      refusal({}),
      refusal({ Authorization: 'Basic a2V5' }),
      refusal({ Authorization: 'Bearer' }),
      refusal({ Authorization: 'psk_abc' }),
      refusal({ Cookie: 'api_key=psk_x_y' }),
    ]);
    for (const res of answers) {
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.text).toBe('{"message":"invalid API key"}');
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expectDefaultRateLimit(res, 60);
    }
  });

  test('an unexpected fault there is a problem document (identity unreachable → 503)', async () => {
    const res = await refusal({ Authorization: 'Bearer psk_aaaaaaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' });
    expectProblem(res, 503, 'service_unavailable');
    expectDefaultRateLimit(res, 60);
  });
});

describe('request ids and the access log', () => {
  test('each request gets a fresh id, in the header, the problem and its log line; never the token', async () => {
    const token = 'pst_SECRETTOKENVALUE.abcdef';
    const a = await send(base, { path: '/v1/blocks', headers: { Authorization: `Bearer ${token}` } });
    const b = await send(base, { path: '/v1/nothing?x=1' });
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
    for (const res of [a, b]) {
      const line = logEvents(logLines, 'http.request').find((l) => l.request_id === res.headers['x-request-id']);
      expect(line).toMatchObject({
        method: 'GET',
        status: res.status,
        instance: res.json.instance,
        duration_ms: expect.any(Number),
      });
    }
    expect(logEvents(logLines, 'http.request').find((l) => l.request_id === a.headers['x-request-id'])!.route).toBe('GET /v1/blocks');
    expect(logEvents(logLines, 'http.request').find((l) => l.request_id === b.headers['x-request-id'])!.route).toBeNull();
    expect(JSON.stringify(logLines)).not.toContain('SECRETTOKENVALUE');
  });
});
