/**
 * Request bodies (gateway/body.ts; docs/decisions.md "Maximum request body"): read by
 * the gateway itself behind the real error mapper, over real sockets. Over-size,
 * wrongly typed, non-UTF-8 and malformed bodies are `400 validation_failed` with
 * field `body` — always an answer, never a reset connection.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { createLogger } from '../../services/kit/base';
import { BODY_LIMIT_BYTES, isJsonContentType, readJsonBody } from '../../gateway/body';
import { errorMapper } from '../../gateway/error-mapper';
import { validationFailed } from '../../gateway/problems';
import type { GatewayState } from '../../gateway/request-context';
import { send } from './http-client';

let server: http.Server;
let base: string;

beforeAll(async () => {
  const app = new Koa<GatewayState>();
  app.on('error', () => undefined); // a client gone mid-body: nothing to answer
  const log = createLogger({ level: 'silent', name: 'test' });
  app.use(errorMapper({ log, docsUrl: 'https://docs.example/v1', contractQuota: 600, tokenQuota: 60 }));
  app.use(async (ctx) => {
    const read = await readJsonBody(ctx, { empty: ctx.path === '/optional' ? 'empty-object' : 'required' });
    if (!read.ok) throw validationFailed([read.violation]);
    ctx.type = 'application/json';
    ctx.body = JSON.stringify({ received: read.value });
  });
  server = http.createServer(app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const put = (body: string | Buffer | (string | Buffer)[], headers: Record<string, string | number> = { 'Content-Type': 'application/json' }, path = '/required') =>
  send(base, { method: 'PUT', path, headers, body });

function expectBodyViolation(res: { status: number; headers: http.IncomingHttpHeaders; json: any }, code: string) {
  expect(res.status).toBe(400);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json).toMatchObject({ code: 'validation_failed', status: 400, errors: [{ field: 'body', code }] });
}

/** A JSON document of exactly `bytes` bytes. */
function jsonOfSize(bytes: number): string {
  const skeleton = '{"pad":""}';
  return `{"pad":"${'x'.repeat(bytes - skeleton.length)}"}`;
}

describe('size limit: 256 KiB', () => {
  test('exactly the limit is read and parsed', async () => {
    const body = jsonOfSize(BODY_LIMIT_BYTES);
    expect(Buffer.byteLength(body)).toBe(BODY_LIMIT_BYTES);
    const res = await put(body);
    expect(res.status).toBe(200);
    expect(res.json.received.pad).toHaveLength(BODY_LIMIT_BYTES - 10);
  });

  test('one byte more is 400 body/max_length, and the connection stays usable', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const res = await send(base, { method: 'PUT', path: '/required', agent, headers: { 'Content-Type': 'application/json' }, body: jsonOfSize(BODY_LIMIT_BYTES + 1) });
      expectBodyViolation(res, 'max_length');
      expect(res.headers.connection).not.toBe('close');
      const next = await send(base, { method: 'PUT', path: '/required', agent, headers: { 'Content-Type': 'application/json' }, body: '{"a":1}' });
      expect(next.status).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  test('a chunked over-size body (no Content-Length) is refused the same way', async () => {
    const chunk = 'x'.repeat(64 * 1024);
    const res = await put(['{"pad":"', ...Array.from({ length: 8 }, () => chunk), '"}']);
    expectBodyViolation(res, 'max_length');
  });

  test('a 20 MiB body still gets its answer (read up to 16 MiB, then the connection closes)', async () => {
    const mib = Buffer.alloc(1024 * 1024, 0x78);
    const res = await put(
      Array.from({ length: 20 }, () => mib),
      { 'Content-Type': 'application/json', 'Content-Length': 20 * 1024 * 1024 },
    );
    expectBodyViolation(res, 'max_length');
    expect(res.headers.connection).toBe('close');
  });
});

describe('content type, coding, encoding and syntax', () => {
  test.each([
    ['application/json', 200],
    ['application/json; charset=utf-8', 200],
    ['Application/JSON; Charset="UTF-8"', 200],
    ['application/json;charset=utf8', 200],
    ['text/plain', 400],
    ['application/x-www-form-urlencoded', 400],
    ['application/merge-patch+json', 400],
    ['application/json; charset=iso-8859-1', 400],
  ])('Content-Type %s → %i', async (type, status) => {
    const res = await put('{"a":1}', { 'Content-Type': type });
    expect(res.status).toBe(status);
    if (status === 400) expectBodyViolation(res, 'invalid');
  });

  test('a body without Content-Type is refused', async () => {
    expectBodyViolation(await put('{"a":1}', {}), 'invalid');
  });

  test('malformed JSON, trailing garbage, invalid UTF-8 and a content coding are refused', async () => {
    expectBodyViolation(await put('{"a":'), 'invalid');
    expectBodyViolation(await put('{"a":1} x'), 'invalid');
    expectBodyViolation(await put('NaN'), 'invalid');
    expectBodyViolation(await put(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])), 'invalid');
    expectBodyViolation(await put('{"a":1}', { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }), 'invalid');
  });

  test('a UTF-8 byte order mark is tolerated', async () => {
    const res = await put(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":"é"}')]));
    expect(res.status).toBe(200);
    expect(res.json.received).toEqual({ a: 'é' });
  });

  test('a malformed body is never echoed', async () => {
    const res = await put('{"secret": "ZQXJ-MARKER" ,,, }');
    expectBodyViolation(res, 'invalid');
    expect(res.text).not.toContain('ZQXJ');
  });
});

describe('empty bodies', () => {
  test('required where a body is needed', async () => {
    expectBodyViolation(await put(''), 'required');
    expectBodyViolation(await put('  \n'), 'required');
  });

  test('{} where the body is optional, whatever the content type', async () => {
    for (const headers of [{}, { 'Content-Type': 'application/json' }, { 'Content-Type': 'text/plain' }] as Record<string, string>[]) {
      const res = await put('', headers, '/optional');
      expect(res.status).toBe(200);
      expect(res.json.received).toEqual({});
    }
  });
});

describe('the problem response around a body failure', () => {
  test('carries X-Request-Id = instance and rate-limit headers', async () => {
    const res = await put('nope');
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.json.instance).toBe(`urn:psync:request:${res.headers['x-request-id']}`);
    expect(res.headers['ratelimit-policy']).toBe('600;w=3600');
  });

  test('a client that disconnects mid-body does not break the server', async () => {
    await new Promise<void>((resolve) => {
      const r = http.request(`${base}/required`, { method: 'PUT', headers: { 'Content-Type': 'application/json', 'Content-Length': 1000 } });
      r.on('error', () => resolve());
      r.write('{"a":');
      setTimeout(() => {
        r.destroy();
        resolve();
      }, 50);
    });
    const res = await put('{"ok":true}');
    expect(res.status).toBe(200);
  });
});

test('isJsonContentType', () => {
  expect(isJsonContentType(undefined)).toBe(false);
  expect(isJsonContentType('application/json')).toBe(true);
  expect(isJsonContentType('application/json; boundary=x')).toBe(true);
  expect(isJsonContentType('application/jsonx')).toBe(false);
  expect(isJsonContentType('application/json; charset=utf-16')).toBe(false);
});
