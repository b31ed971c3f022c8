/**
 * The egress client against real local servers: IP literals, non-public resolutions,
 * the allow-list, vetting and pinning at every connection (DNS rebinding, IPv4-mapped
 * IPv6 answers), redirects not followed, oversize bodies cut, slow servers and
 * time-outs, kept-alive pools (reuse per key, bounds, a new connection vetted again,
 * a dropped kept-alive connection retried once), and HTTPS with Node's trust store.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import {
  CidrList,
  EgressError,
  EgressPool,
  PHOTO_URL_RULES,
  WEBHOOK_URL_RULES,
  checkUrl,
  checkUrlAndResolve,
  guardedRequest,
  isAllowedAddress,
  type GuardedRequestOptions,
  type GuardedResponse,
  isPublicAddress,
  mappedIPv4,
  type Resolver,
} from './egress';
import { sleep } from '../../../test/support/eventually';
import { fakeClock } from '../../../test/support/fake-clock';

const LOOPBACK = ['127.0.0.0/8'];

/** Resolves to what the test says, counting calls (a DNS server we control). */
function fakeDns(answers: (call: number) => string[]): Resolver & { calls: number } {
  const r = (async () => {
    r.calls++;
    return answers(r.calls).map((address) => ({ address, family: net.isIP(address) === 6 ? (6 as const) : (4 as const) }));
  }) as unknown as Resolver & { calls: number };
  r.calls = 0;
  return r;
}

async function expectEgress(p: Promise<unknown>, kind: string, reason?: string): Promise<EgressError> {
  const err = await p.then(
    () => {
      throw new Error(`expected EgressError ${kind}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EgressError);
  expect((err as EgressError).kind).toBe(kind);
  if (reason) expect((err as EgressError).reason).toBe(reason);
  return err as EgressError;
}

describe('address rules', () => {
  it.each([
    '0.0.0.0',
    '0.1.2.3',
    '10.1.2.3',
    '100.64.0.1',
    '100.127.255.254',
    '127.0.0.1',
    '127.255.0.9',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.255.255',
    '192.0.0.8',
    '192.0.2.10',
    '192.88.99.1',
    '192.168.1.1',
    '198.18.0.1',
    '198.19.255.255',
    '198.51.100.7',
    '203.0.113.9',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
  ])('IPv4 %s is not public', (a) => expect(isPublicAddress(a)).toBe(false));

  it.each(['1.1.1.1', '8.8.8.8', '93.184.216.34', '100.63.255.255', '100.128.0.1', '172.15.255.255', '172.32.0.1', '198.17.255.255', '198.20.0.1', '223.255.255.254'])(
    'IPv4 %s is public',
    (a) => expect(isPublicAddress(a)).toBe(true),
  );

  it.each([
    '::',
    '::1',
    '::127.0.0.1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254',
    '64:ff9b::a00:1',
    '100::1',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'febf::1',
    'fec0::1',
    'ff02::1',
    '2001:db8::1',
    '2001::1',
    '2002:7f00:1::1',
    '3fff::1',
  ])('IPv6 %s is not public', (a) => expect(isPublicAddress(a)).toBe(false));

  it.each(['2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', '::ffff:808:808'])('IPv6 %s is public', (a) => expect(isPublicAddress(a)).toBe(true));

  it('reads IPv4-mapped IPv6 addresses in both notations', () => {
    expect(mappedIPv4('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(mappedIPv4('::ffff:7f00:1')).toBe('127.0.0.1');
    expect(mappedIPv4('0:0:0:0:0:ffff:c0a8:101')).toBe('192.168.1.1');
    expect(mappedIPv4('2001:db8::1')).toBeNull();
  });

  it('the allow-list exempts only its own ranges, including mapped forms', () => {
    expect(isAllowedAddress('127.0.0.1', LOOPBACK)).toBe(true);
    expect(isAllowedAddress('::ffff:127.0.0.1', LOOPBACK)).toBe(true);
    expect(isAllowedAddress('::1', LOOPBACK)).toBe(false);
    expect(isAllowedAddress('10.0.0.1', LOOPBACK)).toBe(false);
    expect(isAllowedAddress('fe80::1%lo', ['fe80::/10'])).toBe(false);
    expect(isAllowedAddress('8.8.8.8', [])).toBe(true);
    expect(new CidrList(['10.0.0.0/8', 'fd00::/8']).contains('fd00::5')).toBe(true);
  });
});

describe('URL rules', () => {
  it.each([
    'http://127.0.0.1/a.jpg',
    'http://[::1]/a.jpg',
    'http://2130706433/a.jpg',
    'http://0x7f000001/a.jpg',
    'http://0177.0.0.1/a.jpg',
    'https://8.8.8.8/a.jpg',
    'http://[::ffff:127.0.0.1]/a.jpg',
  ])('refuses the IP literal %s even when allow-listed', async (u) => {
    await expectEgress(guardedRequest(u, { rules: PHOTO_URL_RULES, allowCidrs: ['0.0.0.0/0', '::/0'] }), 'forbidden_url', 'ip_literal');
  });

  it('applies the caller scheme and port rules', () => {
    expect(() => checkUrl('ftp://example.com/a.jpg', PHOTO_URL_RULES)).toThrow(EgressError);
    expect(() => checkUrl('http://example.com/hook', WEBHOOK_URL_RULES)).toThrow(/scheme/);
    expect(() => checkUrl('https://example.com:8080/hook', WEBHOOK_URL_RULES)).toThrow(/port 8080/);
    expect(checkUrl('https://example.com/hook', WEBHOOK_URL_RULES).hostname).toBe('example.com');
    expect(checkUrl('https://example.com:8443/hook', WEBHOOK_URL_RULES).port).toBe('8443');
    expect(checkUrl('http://example.com:8080/a.jpg', PHOTO_URL_RULES).port).toBe('8080');
    expect(() => checkUrl('https://user:pw@example.com/a.jpg', PHOTO_URL_RULES)).toThrow(/credentials/);
    expect(() => checkUrl('not a url', PHOTO_URL_RULES)).toThrow(EgressError);
  });

  it('refuses a name that resolves only to non-public addresses, unless allow-listed', async () => {
    await expectEgress(checkUrlAndResolve('http://localhost/a.jpg', PHOTO_URL_RULES), 'forbidden_url', 'no_allowed_address');
    const ok = await checkUrlAndResolve('http://localhost/a.jpg', PHOTO_URL_RULES, { allowCidrs: LOOPBACK });
    expect(ok.addresses.map((a) => a.address)).toContain('127.0.0.1');
    const rebind = fakeDns(() => ['10.0.0.7', '192.168.0.1', '169.254.169.254', 'fd00::1']);
    await expectEgress(checkUrlAndResolve('https://partner.example/hook', WEBHOOK_URL_RULES, { resolver: rebind }), 'forbidden_url');
  });

  it('reports a name that does not resolve as unreachable', async () => {
    await expectEgress(guardedRequest('http://does-not-exist.invalid/a.jpg', { rules: PHOTO_URL_RULES }), 'unreachable', 'dns');
  });
});

/** A local HTTP server that records requests and the connections they came on. */
class TestServer {
  readonly hits: { path: string; connection: number; local: string }[] = [];
  connections = 0;
  /** Bytes a streaming answer had written when its connection closed. */
  lastStreamed = 0;
  readonly sockets = new Set<net.Socket>();
  readonly server: http.Server;
  private ids = new WeakMap<net.Socket, number>();
  /** Requests per connection id (to drop the second request of a kept-alive connection). */
  private perConnection = new Map<number, number>();

  constructor() {
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.keepAliveTimeout = 30_000;
    this.server.on('connection', (s: net.Socket) => {
      this.ids.set(s, ++this.connections);
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async listen(host: string, port = 0): Promise<number> {
    await new Promise<void>((r) => this.server.listen(port, host, r));
    return (this.server.address() as AddressInfo).port;
  }

  /** Closes the connections no request is using (as a partner's keep-alive time-out would). */
  dropIdle(): void {
    this.server.closeIdleConnections();
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const connection = this.ids.get(req.socket) ?? 0;
    const nth = (this.perConnection.get(connection) ?? 0) + 1;
    this.perConnection.set(connection, nth);
    this.hits.push({ path: req.url ?? '', connection, local: req.socket.localAddress ?? '' });
    const u = new URL(req.url ?? '/', 'http://x');
    switch (u.pathname) {
      case '/ok':
        res.writeHead(200, { 'content-type': 'text/plain', 'x-host': req.headers.host ?? '' });
        return void res.end('hello');
      case '/headers':
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify(req.rawHeaders));
      case '/redirect':
        res.writeHead(Number(u.searchParams.get('status') ?? 302), { location: `http://${req.headers.host}/target` });
        return void res.end();
      case '/target':
        res.writeHead(200);
        return void res.end('you followed a redirect');
      case '/big-declared':
        res.writeHead(200, { 'content-length': String(10_000_000) });
        return void res.write(Buffer.alloc(1000));
      case '/big-chunked': {
        res.writeHead(200); // no Content-Length: the limit must hold while streaming
        const chunk = Buffer.alloc(64 * 1024, 1);
        let sent = 0;
        const pump = () => {
          while (sent < 50) {
            sent++;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        return pump();
      }
      case '/endless': {
        // Streams up to 1 GiB for as long as the client reads; records how far it got.
        res.writeHead(200);
        const chunk = Buffer.alloc(64 * 1024, 2);
        let sent = 0;
        const pump = () => {
          while (sent < 1024 ** 3) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.on('close', () => (this.lastStreamed = sent));
        return pump();
      }
      case '/silent':
        return; // never answers
      case '/stall-body':
        res.writeHead(200, { 'content-length': '1000' });
        return void res.write('first bytes, then nothing');
      case '/trickle': {
        res.writeHead(200, { 'content-length': '1000' });
        const t = setInterval(() => res.write('x'), 50);
        res.on('close', () => clearInterval(t));
        return;
      }
      case '/cut':
        res.writeHead(200, { 'content-length': '1000' });
        res.write('partial');
        return void setTimeout(() => res.socket?.destroy(), 20);
      case '/drop-second':
        // The second request on a kept-alive connection: closed without an answer.
        if (nth === 2) return void req.socket.destroy();
        res.writeHead(200);
        return void res.end('ok');
      case '/slow':
        return void setTimeout(() => {
          res.writeHead(200);
          res.end('slow');
        }, 100);
      case '/post': {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', () => {
          res.writeHead(201);
          res.end(`${req.method} ${body}`);
        });
        return;
      }
      default:
        res.writeHead(404);
        res.end();
    }
  }
}

describe('requests against local servers', () => {
  const srv = new TestServer();
  /** A second server on the same port of 127.0.0.2: where a connection must NOT go. */
  const other = new TestServer();
  let port: number;

  beforeAll(async () => {
    port = await srv.listen('127.0.0.1');
    await other.listen('127.0.0.2', port);
  });

  afterAll(async () => {
    await srv.close();
    await other.close();
  });

  const base = () => `http://localhost:${port}`;
  const opts = { rules: PHOTO_URL_RULES, allowCidrs: LOOPBACK };
  const hitsOf = (path: string, s = srv) => s.hits.filter((h) => h.path === path).length;

  it('fetches through an allow-listed loopback address with the name as Host', async () => {
    const res = await guardedRequest(`${base()}/ok`, opts);
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('hello');
    expect(res.headers['x-host']).toBe(`localhost:${port}`);
  });

  it("sends the caller's headers over the defaults, whatever their case, each once", async () => {
    const res = await guardedRequest(`${base()}/headers`, { ...opts, headers: { 'User-Agent': 'PartnerSync-Webhooks/1', 'X-Signature': 'abc' } });
    const raw = JSON.parse(res.body.toString()) as string[];
    const named = (name: string) => {
      const values: string[] = [];
      for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) values.push(raw[i + 1]!);
      return values;
    };
    expect(named('user-agent')).toEqual(['PartnerSync-Webhooks/1']);
    expect(named('x-signature')).toEqual(['abc']);
    expect(named('accept')).toEqual(['*/*']);
    expect(named('host')).toEqual([`localhost:${port}`]);
  });

  it('refuses loopback without the allow-list, and never connects', async () => {
    const before = srv.connections;
    await expectEgress(guardedRequest(`${base()}/ok`, { rules: PHOTO_URL_RULES }), 'forbidden_url', 'no_allowed_address');
    expect(srv.connections).toBe(before);
  });

  it('connects only to an address that passed, dropping the others, resolving once (pinned)', async () => {
    // 127.0.0.2 (listening too) comes first in the answer but is outside the allow-list.
    const dns = fakeDns(() => ['127.0.0.2', '10.1.2.3', '169.254.169.254', '127.0.0.1']);
    const before = hitsOf('/ok', other);
    const res = await guardedRequest(`http://photos.partner.example:${port}/ok`, { rules: PHOTO_URL_RULES, allowCidrs: ['127.0.0.1/32'], resolver: dns });
    expect(res.status).toBe(200);
    expect(srv.hits.at(-1)).toMatchObject({ path: '/ok', local: '127.0.0.1' });
    expect(hitsOf('/ok', other)).toBe(before);
    // The name exists only in the fake resolver: the connection used its answer, and only it.
    expect(dns.calls).toBe(1);
  });

  it('DNS rebinding: a name vetted as public at registration, private at connection, is refused without connecting', async () => {
    const dns = fakeDns((call) => (call === 1 ? ['93.184.216.34'] : ['127.0.0.1']));
    const vetted = await checkUrlAndResolve(`http://rebind.partner.example:${port}/ok`, PHOTO_URL_RULES, { resolver: dns });
    expect(vetted.addresses).toEqual([{ address: '93.184.216.34', family: 4 }]);
    const before = srv.connections;
    await expectEgress(guardedRequest(`http://rebind.partner.example:${port}/ok`, { rules: PHOTO_URL_RULES, resolver: dns }), 'forbidden_url', 'no_allowed_address');
    expect(dns.calls).toBe(2);
    expect(srv.connections).toBe(before);
  });

  it('vets again at every connection: a name that moves outside the allow-list is refused', async () => {
    const dns = fakeDns((call) => (call === 1 ? ['127.0.0.1'] : ['127.0.0.2']));
    const allow = ['127.0.0.1/32'];
    const first = await guardedRequest(`http://rebind2.partner.example:${port}/ok`, { rules: PHOTO_URL_RULES, allowCidrs: allow, resolver: dns });
    expect(first.status).toBe(200);
    const before = [srv.connections, other.connections];
    await expectEgress(
      guardedRequest(`http://rebind2.partner.example:${port}/ok`, { rules: PHOTO_URL_RULES, allowCidrs: allow, resolver: dns }),
      'forbidden_url',
      'no_allowed_address',
    );
    expect(dns.calls).toBe(2);
    expect([srv.connections, other.connections]).toEqual(before);
  });

  it('judges IPv4-mapped IPv6 answers by the IPv4 rules, at connection time', async () => {
    const before = srv.connections;
    for (const mapped of ['::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:a9fe:a9fe', '::ffff:10.0.0.1']) {
      await expectEgress(
        guardedRequest(`http://mapped.partner.example:${port}/ok`, { rules: PHOTO_URL_RULES, resolver: fakeDns(() => [mapped]) }),
        'forbidden_url',
        'no_allowed_address',
      );
    }
    expect(srv.connections).toBe(before);
    // Allow-listed as IPv4, the mapped form passes and is connected to as it is.
    const res = await guardedRequest(`http://mapped.partner.example:${port}/ok`, {
      rules: PHOTO_URL_RULES,
      allowCidrs: ['127.0.0.1/32'],
      resolver: fakeDns(() => ['::ffff:127.0.0.1']),
    });
    expect(res.status).toBe(200);
    expect(srv.hits.at(-1)!.path).toBe('/ok');
  });

  it.each([301, 302, 303, 307, 308])('does not follow a %i redirect: it is the answer, the target is never requested', async (status) => {
    const before = hitsOf('/target');
    const res = await guardedRequest(`${base()}/redirect?status=${status}`, opts);
    expect(res.status).toBe(status);
    expect(res.headers.location).toBe(`http://localhost:${port}/target`);
    expect(hitsOf('/target')).toBe(before);
  });

  it('refuses a declared oversize body before reading it', async () => {
    await expectEgress(guardedRequest(`${base()}/big-declared`, { ...opts, maxBytes: 1_000_000 }), 'too_large', 'content_length');
  });

  it('enforces the byte limit while streaming a body without a length', async () => {
    await expectEgress(guardedRequest(`${base()}/big-chunked`, { ...opts, maxBytes: 1_000_000 }), 'too_large', 'body');
    const ok = await guardedRequest(`${base()}/big-chunked`, { ...opts, maxBytes: 4_000_000 });
    expect(ok.body.length).toBe(50 * 64 * 1024);
  });

  it('stops reading at the byte limit: the connection is closed, the rest never transferred', async () => {
    await expectEgress(guardedRequest(`${base()}/endless`, { ...opts, maxBytes: 1_000_000 }), 'too_large', 'body');
    for (let i = 0; i < 100 && srv.lastStreamed === 0; i++) await sleep(20);
    // What the server got written before the close: the limit plus socket buffers, far below 1 GiB.
    expect(srv.lastStreamed).toBeGreaterThan(0);
    expect(srv.lastStreamed).toBeLessThan(64 * 1024 * 1024);
  });

  it('times out a server that never sends the headers', async () => {
    const t0 = Date.now();
    await expectEgress(guardedRequest(`${base()}/silent`, { ...opts, headersTimeoutMs: 300 }), 'unreachable', 'headers_timeout');
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('times out a body that stalls', async () => {
    const t0 = Date.now();
    await expectEgress(guardedRequest(`${base()}/stall-body`, { ...opts, bodyTimeoutMs: 300 }), 'unreachable', 'body_timeout');
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('ends a trickling server at the overall deadline', async () => {
    const t0 = Date.now();
    await expectEgress(guardedRequest(`${base()}/trickle`, { ...opts, bodyTimeoutMs: 1000, totalTimeoutMs: 400 }), 'unreachable', 'deadline');
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('reports a connection cut mid-body as unreachable', async () => {
    await expectEgress(guardedRequest(`${base()}/cut`, opts), 'unreachable', 'reset');
  });

  it('reports a refused connection as unreachable', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const p = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    await expectEgress(guardedRequest(`http://localhost:${p}/x`, opts), 'unreachable', 'connect');
  });

  it('times out a TLS handshake that never completes (connect time-out)', async () => {
    const mute = net.createServer(() => {}); // accepts TCP, never speaks TLS
    const held: net.Socket[] = [];
    mute.on('connection', (s) => held.push(s));
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', r));
    const p = (mute.address() as AddressInfo).port;
    try {
      await expectEgress(guardedRequest(`https://localhost:${p}/x`, { ...opts, connectTimeoutMs: 300 }), 'unreachable', 'connect_timeout');
    } finally {
      for (const s of held) s.destroy();
      await new Promise((r) => mute.close(r));
    }
  });

  it('can be aborted, also while the connection is still being made', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    await expectEgress(guardedRequest(`${base()}/silent`, { ...opts, signal: ac.signal }), 'unreachable', 'aborted');

    const mute = net.createServer(() => {});
    const held: net.Socket[] = [];
    mute.on('connection', (s) => held.push(s));
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', r));
    try {
      const during = new AbortController();
      setTimeout(() => during.abort(), 100);
      const t0 = Date.now();
      const url = `https://localhost:${(mute.address() as AddressInfo).port}/x`;
      await expectEgress(guardedRequest(url, { ...opts, connectTimeoutMs: 5000, signal: during.signal }), 'unreachable', 'aborted');
      expect(Date.now() - t0).toBeLessThan(2000);
    } finally {
      for (const s of held) s.destroy();
      await new Promise((r) => mute.close(r));
    }
  });

  it('sends a method and body (webhook-style POST)', async () => {
    const res = await guardedRequest(`${base()}/post`, { ...opts, method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(201);
    expect(res.body.toString()).toBe('POST {"a":1}');
  });

  it('ignoreBody without a pool: the status at once, the connection closed without reading on', async () => {
    const small = await guardedRequest(`${base()}/ok`, { ...opts, ignoreBody: true });
    expect(small.status).toBe(200);
    expect(small.body.length).toBe(0);
    srv.lastStreamed = 0;
    const res = await guardedRequest(`${base()}/endless`, { ...opts, ignoreBody: true });
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(0);
    // Meanwhile the abandoned body's abort would surface, were it unhandled.
    for (let i = 0; i < 100 && srv.lastStreamed === 0; i++) await sleep(20);
    expect(srv.lastStreamed).toBeGreaterThan(0);
    expect(srv.lastStreamed).toBeLessThan(64 * 1024 * 1024);
  });

  it('without a pool, every request has a connection of its own', async () => {
    const before = srv.connections;
    await guardedRequest(`${base()}/ok`, opts);
    await guardedRequest(`${base()}/ok`, opts);
    expect(srv.connections - before).toBe(2);
  });
});

describe('kept-alive pools', () => {
  const srv = new TestServer();
  let port: number;
  let pool: EgressPool | undefined;

  beforeAll(async () => {
    port = await srv.listen('127.0.0.1');
  });

  afterEach(() => {
    pool?.close();
    pool = undefined;
  });

  afterAll(async () => {
    await srv.close();
  });

  const url = (path: string) => `http://hooks.partner.example:${port}${path}`;
  const connectionOf = () => srv.hits.at(-1)!.connection;
  /**
   * One request through the pool, then one turn of the event loop: undici hands a
   * kept-alive connection back to its pool on the turn after the response ended, so
   * a request sent at once would open another connection (within the bound).
   */
  async function send(path: string, poolKey: string, extra: Partial<GuardedRequestOptions> = {}): Promise<GuardedResponse> {
    const res = await guardedRequest(url(path), { rules: PHOTO_URL_RULES, pool, poolKey, ...extra });
    await new Promise((r) => setImmediate(r));
    return res;
  }
  /** Resolves once the server has no open connection left. */
  async function allClosed(): Promise<void> {
    for (let i = 0; i < 150 && srv.sockets.size > 0; i++) await sleep(20);
    expect(srv.sockets.size).toBe(0);
  }

  it('reuses a connection per key, vetted once when opened; another key gets its own', async () => {
    const dns = fakeDns(() => ['127.0.0.1']);
    pool = new EgressPool({ allowCidrs: ['127.0.0.1/32'], resolver: dns, maxSocketsPerKey: 4 });
    const req = (key: string) => send('/ok', key);
    expect((await req('a')).status).toBe(200);
    const first = connectionOf();
    expect((await req('a')).status).toBe(200);
    expect(connectionOf()).toBe(first);
    expect(dns.calls).toBe(1);
    expect((await req('b')).status).toBe(200);
    expect(connectionOf()).not.toBe(first);
    expect(dns.calls).toBe(2);
  });

  it('a new connection is vetted again: after the name moves outside the allow-list the open one serves, a new one is refused', async () => {
    let answer = '127.0.0.1';
    const dns = fakeDns(() => [answer]);
    pool = new EgressPool({ allowCidrs: ['127.0.0.1/32'], resolver: dns, maxSocketsPerKey: 4 });
    const req = () => send('/ok', 'k');
    await req();
    const opened = connectionOf();
    answer = '127.0.0.2';
    expect((await req()).status).toBe(200);
    expect(connectionOf()).toBe(opened);
    srv.dropIdle();
    await allClosed();
    await sleep(50); // let the pool see the close
    const before = srv.connections;
    await expectEgress(req(), 'forbidden_url', 'no_allowed_address');
    expect(srv.connections).toBe(before);
  });

  it('bounds the connections per key: requests beyond it wait for one', async () => {
    pool = new EgressPool({ allowCidrs: ['127.0.0.1/32'], resolver: fakeDns(() => ['127.0.0.1']), maxSocketsPerKey: 3 });
    const before = srv.connections;
    const all = await Promise.all(Array.from({ length: 12 }, () => guardedRequest(url('/slow'), { rules: PHOTO_URL_RULES, pool, poolKey: 'k' })));
    expect(all.every((r) => r.status === 200)).toBe(true);
    expect(srv.connections - before).toBe(3);
  });

  it('a kept-alive connection closed under a request before any answer: sent once more, on a new connection', async () => {
    pool = new EgressPool({ allowCidrs: ['127.0.0.1/32'], resolver: fakeDns(() => ['127.0.0.1']), maxSocketsPerKey: 1 });
    const req = () => send('/drop-second', 'k', { method: 'POST', body: '{}' });
    expect((await req()).status).toBe(200);
    const hits0 = srv.hits.length;
    expect((await req()).status).toBe(200);
    const [dropped, retried] = srv.hits.slice(hits0);
    expect(dropped!.connection).toBe(srv.hits[hits0 - 1]!.connection); // reused, then dropped without an answer
    expect(retried!.connection).not.toBe(dropped!.connection);
    expect(srv.hits.length - hits0).toBe(2);
  });

  it('a fresh connection closed before any answer is not retried', async () => {
    pool = new EgressPool({ allowCidrs: ['127.0.0.1/32'], resolver: fakeDns(() => ['127.0.0.1']), maxSocketsPerKey: 1 });
    const hits0 = srv.hits.length;
    await expectEgress(guardedRequest(url('/cut'), { rules: PHOTO_URL_RULES, pool, poolKey: 'k' }), 'unreachable', 'reset');
    expect(srv.hits.length - hits0).toBe(1);
  });

  it('ignoreBody: the status at once, the rest discarded so the connection carries the next request', async () => {
    pool = new EgressPool({ allowCidrs: ['127.0.0.1/32'], resolver: fakeDns(() => ['127.0.0.1']), maxSocketsPerKey: 1 });
    const res = await send('/big-chunked', 'k', { ignoreBody: true, maxBytes: 4_000_000 });
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(0);
    const first = connectionOf();
    await send('/ok', 'k'); // one connection per key: it waits for the rest to be discarded
    expect(connectionOf()).toBe(first);
    // Over the limit the connection is closed instead of drained.
    await send('/big-chunked', 'k', { ignoreBody: true, maxBytes: 100_000 });
    const over = connectionOf();
    await send('/ok', 'k');
    expect(connectionOf()).not.toBe(over);
  });

  it('keeps the connections of at most maxKeys keys, closing the least recently used', async () => {
    pool = new EgressPool({ allowCidrs: ['127.0.0.1/32'], resolver: fakeDns(() => ['127.0.0.1']), maxSocketsPerKey: 2, maxKeys: 2 });
    const req = (key: string) => send('/ok', key);
    await req('a');
    const a = connectionOf();
    await req('b');
    await req('a'); // a is now the most recently used
    expect(connectionOf()).toBe(a);
    await req('c'); // evicts b
    for (let i = 0; i < 100 && srv.sockets.size > 2; i++) await sleep(20);
    expect(srv.sockets.size).toBe(2);
    await req('a');
    expect(connectionOf()).toBe(a);
  });

  it('does not reuse a connection older than maxSocketAgeMs', async () => {
    const clock = fakeClock();
    pool = new EgressPool({ allowCidrs: ['127.0.0.1/32'], resolver: fakeDns(() => ['127.0.0.1']), maxSocketsPerKey: 1, maxSocketAgeMs: 200, clock });
    const req = () => send('/ok', 'k');
    await req();
    const first = connectionOf();
    await clock.tick(199);
    await req();
    expect(connectionOf()).toBe(first);
    await clock.tick(1);
    await req();
    expect(connectionOf()).not.toBe(first);
  });

  it('close() closes every connection and says how many; requests then use connections of their own', async () => {
    pool = new EgressPool({ allowCidrs: ['127.0.0.1/32'], resolver: fakeDns(() => ['127.0.0.1']), maxSocketsPerKey: 2 });
    await send('/ok', 'a');
    await send('/ok', 'b');
    expect(pool.close()).toBe(2);
    expect(pool.closed).toBe(true);
    await allClosed();
    const res = await guardedRequest(url('/ok'), { rules: PHOTO_URL_RULES, allowCidrs: ['127.0.0.1/32'], resolver: fakeDns(() => ['127.0.0.1']), pool, poolKey: 'a' });
    expect(res.status).toBe(200);
    await allClosed();
  });
});

describe('HTTPS', () => {
  let server: https.Server;
  let port: number;
  let ca: string;

  beforeAll(async () => {
    const selfsigned = await import('selfsigned');
    const pems = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
      algorithm: 'sha256',
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] }],
    });
    ca = pems.cert;
    server = https.createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
      res.writeHead(200);
      res.end(`tls ok ${req.headers.host}`);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  it('refuses a certificate Node does not trust', async () => {
    // This Jest process has no NODE_EXTRA_CA_CERTS for the throwaway CA.
    await expectEgress(guardedRequest(`https://localhost:${port}/x`, { rules: PHOTO_URL_RULES, allowCidrs: LOOPBACK }), 'unreachable', 'tls');
    expect(ca).toContain('BEGIN CERTIFICATE');
  });
});
