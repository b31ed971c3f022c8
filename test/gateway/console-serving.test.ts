/**
 * The sandbox console served by the gateway (gateway/console.ts, gateway/routes/console.ts;
 * docs/operations.md "Sandbox console"), through a running system whose gateway serves
 * the repository's console/dist (built by deploy/build-console.mjs before the tests):
 *
 * - GET /console → 308 to /console/; /console/ → index.html with the Content-Security-
 *   Policy and the other security headers, and no inline script in it;
 * - every hashed asset as Brotli, gzip or as is (decompressed and compared with the
 *   file on disk), immutable for a year; index.html `no-cache`; 304 on `If-None-Match`;
 * - 404 for an unknown asset or another path under /console, 405 for POST;
 * - no token read and nothing counted: a token's RateLimit-Remaining is the same before
 *   and after console fetches that present it.
 *
 * And, in process, a gateway whose console directory is empty (a build that skipped the
 * console): it starts, warns once, and the console's pages answer 503.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { CONSOLE_CSP, ConsoleFiles } from '../../gateway/console';
import { loadConfig } from '../../services/kit/runtime';
import { createLogger } from '../../services/kit/base';
import { ROOT } from '../support/process';
import { backends, logEvents, useSystem } from '../support/system';
import { send, type Received } from './http-client';
import { startInProcessGateway, type InProcessGateway } from './in-process-gateway';
import { Partners, type Partner } from './partners';

const DIST = join(ROOT, 'console', 'dist');
const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'x-frame-options': 'DENY',
};
const STRONG_ETAG = /^"[A-Za-z0-9_-]{43}"$/;

/** The hashed files under console/dist/assets (not their .br/.gz copies). */
const assetFiles = readdirSync(join(DIST, 'assets')).filter((f) => !f.endsWith('.br') && !f.endsWith('.gz'));

/** The body's bytes (send() always sets them). */
const bytesOf = (res: Received): Buffer => res.bytes ?? Buffer.alloc(0);

function expectSecurityHeaders(res: Received): void {
  expect(res.headers).toMatchObject(SECURITY_HEADERS);
}

function expectProblem(res: Received, status: number, code: string): void {
  expect([res.status, res.headers['content-type'], res.json?.code]).toEqual([status, expect.stringContaining('application/problem+json'), code]);
}

describe(`the built console through a running system (database: ${backends.database}, bus: ${backends.bus})`, () => {
  const inUse = useSystem();
  let partners: Partners;
  let partner: Partner;
  const get = (path: string, headers: Record<string, string> = {}, method = 'GET') => send(inUse.system.gatewayUrl, { method, path, headers });

  beforeAll(async () => {
    partners = new Partners(inUse.system);
    partner = await partners.partner('sandbox');
  }, 60_000);
  afterAll(() => partners?.close());

  test('GET and HEAD /console redirect (308) to /console/, keeping the query', async () => {
    for (const method of ['GET', 'HEAD']) {
      const res = await get('/console', {}, method);
      expect([res.status, res.headers.location]).toEqual([308, '/console/']);
      expectSecurityHeaders(res);
    }
    expect((await get('/console?lang=en')).headers.location).toBe('/console/?lang=en');
  });

  test('GET /console/: index.html as built, no-cache with a strong ETag, the CSP and security headers, no inline script', async () => {
    const res = await get('/console/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers.etag).toMatch(STRONG_ETAG);
    expect(res.headers.vary).toMatch(/Accept-Encoding/i);
    expect(res.headers['content-encoding']).toBeUndefined();
    expectSecurityHeaders(res);
    expect(bytesOf(res).equals(readFileSync(join(DIST, 'index.html')))).toBe(true);
    // Every script is a file of this origin: none without src, no event-handler attributes, no inline style.
    const scripts = [...res.text.matchAll(/<script\b[^>]*>/gi)].map((m) => m[0]);
    expect(scripts.length).toBeGreaterThan(0);
    for (const tag of scripts) expect(tag).toMatch(/\ssrc="\/console\/assets\/[^"]+"/);
    expect(res.text).not.toMatch(/\son[a-z]+\s*=/i);
    expect(res.text).not.toMatch(/<style\b|\sstyle\s*=/i);
    // What index.html links is exactly what the build put under assets/.
    const linked = [...res.text.matchAll(/\/console\/assets\/([^"]+)"/g)].map((m) => m[1]!).sort();
    expect(linked).toEqual([...assetFiles].sort());
  });

  test('HEAD /console/ is GET without the body', async () => {
    const full = await get('/console/');
    const head = await get('/console/', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(bytesOf(head).length).toBe(0);
    expect(head.headers['content-length']).toBe(String(bytesOf(full).length));
    expect(head.headers.etag).toBe(full.headers.etag);
  });

  test('every asset as Brotli, gzip or as is, each decoding to the file on disk, immutable, its own ETag per coding', async () => {
    expect(assetFiles.length).toBeGreaterThanOrEqual(2);
    for (const name of assetFiles) {
      const onDisk = readFileSync(join(DIST, 'assets', name));
      const type = name.endsWith('.js') ? 'text/javascript; charset=utf-8' : name.endsWith('.css') ? 'text/css; charset=utf-8' : expect.any(String);
      const path = `/console/assets/${name}`;
      const br = await get(path, { 'Accept-Encoding': 'gzip, deflate, br' });
      const gzip = await get(path, { 'Accept-Encoding': 'gzip, br;q=0' });
      const plain = await get(path);
      expect([br.status, gzip.status, plain.status]).toEqual([200, 200, 200]);
      expect([br.headers['content-encoding'], gzip.headers['content-encoding'], plain.headers['content-encoding']]).toEqual(['br', 'gzip', undefined]);
      expect(brotliDecompressSync(bytesOf(br)).equals(onDisk)).toBe(true);
      expect(gunzipSync(bytesOf(gzip)).equals(onDisk)).toBe(true);
      expect(bytesOf(plain).equals(onDisk)).toBe(true);
      expect(bytesOf(br).length).toBeLessThan(onDisk.length);
      for (const res of [br, gzip, plain]) {
        expect({ name, type: res.headers['content-type'] }).toEqual({ name, type });
        expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
        expect(res.headers.vary).toMatch(/Accept-Encoding/i);
        expect(res.headers.etag).toMatch(STRONG_ETAG);
        expect(res.headers['content-length']).toBe(String(bytesOf(res).length));
        expectSecurityHeaders(res);
      }
      expect(new Set([br.headers.etag, gzip.headers.etag, plain.headers.etag]).size).toBe(3);
    }
  });

  test('Accept-Encoding: q=0 excludes a coding, `*` admits both, nothing acceptable sends the file as is', async () => {
    const path = `/console/assets/${assetFiles[0]}`;
    const coding = async (ae: string) => (await get(path, { 'Accept-Encoding': ae })).headers['content-encoding'] ?? 'identity';
    expect(await coding('*')).toBe('br');
    expect(await coding('br;q=0.1, gzip')).toBe('br');
    expect(await coding('BR;Q=0, GZIP;q=0.5')).toBe('gzip');
    expect(await coding('*;q=0, identity')).toBe('identity');
    expect(await coding('br;q=0, gzip;q=0')).toBe('identity');
    expect(await coding('identity')).toBe('identity');
  });

  test('If-None-Match with the coding’s ETag → 304 without a body; another coding’s ETag → 200', async () => {
    for (const path of ['/console/', `/console/assets/${assetFiles[0]}`]) {
      const first = await get(path, { 'Accept-Encoding': 'br' });
      const etag = String(first.headers.etag);
      const again = await get(path, { 'Accept-Encoding': 'br', 'If-None-Match': `"other", ${etag}` });
      expect([again.status, bytesOf(again).length, again.headers.etag]).toEqual([304, 0, etag]);
      expect(again.headers['cache-control']).toBe(first.headers['cache-control']);
      expectSecurityHeaders(again);
      const weak = await get(path, { 'Accept-Encoding': 'br', 'If-None-Match': `W/${etag}` });
      expect(weak.status).toBe(304);
      const otherCoding = await get(path, { 'Accept-Encoding': 'gzip', 'If-None-Match': etag });
      expect([otherCoding.status, otherCoding.headers['content-encoding']]).toEqual([200, 'gzip']);
    }
  });

  test('an unknown asset or another path under /console is 404 not_found; POST is 405 with Allow: GET, HEAD', async () => {
    expectProblem(await get('/console/assets/index-00000000.js'), 404, 'not_found');
    expectProblem(await get(`/console/assets/${assetFiles[0]}.br`), 404, 'not_found');
    for (const path of ['/console/index.html', '/console/calendar', '/console/assets', '/console/assets/x/y.js', '/console//']) {
      expectProblem(await get(path), 404, 'not_found');
    }
    for (const path of ['/console', '/console/', `/console/assets/${assetFiles[0]}`]) {
      const res = await get(path, {}, 'POST');
      expectProblem(res, 405, 'method_not_allowed');
      expect(res.headers.allow).toBe('GET, HEAD');
    }
  });

  test("nothing counted: a token's RateLimit-Remaining is unchanged by console fetches that present it", async () => {
    // The window resets at the end of each epoch-aligned hour: stay clear of it.
    const left = 3600 - ((Date.now() / 1000) % 3600);
    // timing under test: the rate window's edge on the database's clock: the requests counted must fall in one window.
    if (left < 20) await new Promise((r) => setTimeout(r, (left + 1) * 1000));
    const before = await get('/v1/requests?limit=1', partner.auth);
    expect(before.status).toBe(200);
    for (const path of ['/console', '/console/', `/console/assets/${assetFiles[0]}`, `/console/assets/${assetFiles[0]}`]) {
      const res = await get(path, partner.auth);
      expect(res.status).toBeLessThan(400);
      // The error mapper's defaults: the full quota, as for a request with no key.
      expect(res.headers['ratelimit-remaining']).toBe(res.headers['ratelimit-limit']);
    }
    const after = await get('/v1/requests?limit=1', partner.auth);
    expect(Number(after.headers['ratelimit-remaining'])).toBe(Number(before.headers['ratelimit-remaining']) - 1);
  });

  test('the gateway found the built console: no start-up warning', () => {
    expect(logEvents(inUse.system.logs(), 'console.not_built')).toEqual([]);
  });
});

describe('a gateway without a built console (an empty console directory)', () => {
  let gateway: InProcessGateway;
  let base: string;
  let dir: string;
  const logLines: Record<string, any>[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'psync-console-'));
    const config = loadConfig({ RATE_LIMIT_PER_HOUR: '600', TOKEN_RATE_LIMIT_PER_HOUR: '60' });
    const log = createLogger({ level: 'debug', name: 'console-test' }, { write: (s: string) => void logLines.push(JSON.parse(s)) });
    gateway = await startInProcessGateway(config, log, new ConsoleFiles(dir, log));
    base = gateway.base;
  });

  afterAll(async () => {
    await gateway?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('starts; /console/ and the assets answer 503 service_unavailable naming npm run build:console, with the security headers', async () => {
    for (const path of ['/console/', '/console/assets/index-00000000.js']) {
      const res = await send(base, { path });
      expectProblem(res, 503, 'service_unavailable');
      expect(res.json.detail).toContain('npm run build:console');
      expectSecurityHeaders(res);
      expect(res.headers['ratelimit-remaining']).toBe('600');
    }
    expect((await send(base, { path: '/console' })).status).toBe(308);
    expect((await send(base, { path: '/healthz' })).status).toBe(200);
  });

  test('warned once, at start, naming the directory', async () => {
    await send(base, { path: '/console/' });
    const warnings = logEvents(logLines, 'console.not_built');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 'warn', dir });
  });
});
