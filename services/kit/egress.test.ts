/**
 * The egress guard against real local servers: IP literals, non-public resolutions,
 * the allow-list, pinning at every connection (DNS rebinding), redirects not
 * followed, oversize bodies, slow servers and time-outs, and HTTPS with Node's trust
 * store.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import {
  CidrList,
  EgressError,
  PHOTO_URL_RULES,
  WEBHOOK_URL_RULES,
  checkUrl,
  checkUrlAndResolve,
  guardedRequest,
  isAllowedAddress,
  isPublicAddress,
  mappedIPv4,
  type Resolver,
} from './egress';

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
    '0.0.0.0', '0.1.2.3', '10.1.2.3', '100.64.0.1', '100.127.255.254', '127.0.0.1', '127.255.0.9', '169.254.169.254',
    '172.16.0.1', '172.31.255.255', '192.0.0.8', '192.0.2.10', '192.88.99.1', '192.168.1.1', '198.18.0.1', '198.19.255.255',
    '198.51.100.7', '203.0.113.9', '224.0.0.1', '239.255.255.250', '240.0.0.1', '255.255.255.255',
  ])('IPv4 %s is not public', (a) => expect(isPublicAddress(a)).toBe(false));

  it.each(['1.1.1.1', '8.8.8.8', '93.184.216.34', '100.63.255.255', '100.128.0.1', '172.15.255.255', '172.32.0.1', '198.17.255.255', '198.20.0.1', '223.255.255.254'])(
    'IPv4 %s is public',
    (a) => expect(isPublicAddress(a)).toBe(true),
  );

  it.each([
    '::', '::1', '::127.0.0.1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '64:ff9b::a00:1',
    '100::1', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'febf::1', 'fec0::1', 'ff02::1', '2001:db8::1', '2001::1', '2002:7f00:1::1', '3fff::1',
  ])('IPv6 %s is not public', (a) => expect(isPublicAddress(a)).toBe(false));

  it.each(['2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', '::ffff:808:808'])('IPv6 %s is public', (a) =>
    expect(isPublicAddress(a)).toBe(true),
  );

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
    'http://127.0.0.1/a.jpg', 'http://[::1]/a.jpg', 'http://2130706433/a.jpg', 'http://0x7f000001/a.jpg', 'http://0177.0.0.1/a.jpg',
    'https://8.8.8.8/a.jpg', 'http://[::ffff:127.0.0.1]/a.jpg',
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

describe('requests against local servers', () => {
  let server: http.Server;
  let port: number;
  const hits: string[] = [];
  const sockets = new Set<net.Socket>();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      const u = new URL(req.url ?? '/', 'http://x');
      switch (u.pathname) {
        case '/ok':
          res.writeHead(200, { 'content-type': 'text/plain', 'x-host': req.headers.host ?? '' });
          return res.end('hello');
        case '/redirect':
          res.writeHead(302, { location: `http://localhost:${port}/target` });
          return res.end();
        case '/target':
          res.writeHead(200);
          return res.end('you followed a redirect');
        case '/big-declared':
          res.writeHead(200, { 'content-length': String(10_000_000) });
          return res.write(Buffer.alloc(1000));
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
        case '/silent':
          return; // never answers
        case '/trickle': {
          res.writeHead(200, { 'content-length': '1000' });
          const t = setInterval(() => res.write('x'), 50);
          res.on('close', () => clearInterval(t));
          return;
        }
        case '/cut':
          res.writeHead(200, { 'content-length': '1000' });
          res.write('partial');
          return setTimeout(() => res.socket?.destroy(), 20);
        case '/post':
          let body = '';
          req.on('data', (c) => (body += c));
          req.on('end', () => {
            res.writeHead(201);
            res.end(`${req.method} ${body}`);
          });
          return;
        default:
          res.writeHead(404);
          res.end();
      }
    });
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });

  const base = () => `http://localhost:${port}`;
  const opts = { rules: PHOTO_URL_RULES, allowCidrs: LOOPBACK };

  it('fetches through an allow-listed loopback address with the name as Host', async () => {
    const res = await guardedRequest(`${base()}/ok`, opts);
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('hello');
    expect(res.headers['x-host']).toBe(`localhost:${port}`);
    expect(res.remoteAddress).toBe('127.0.0.1');
  });

  it('refuses loopback without the allow-list, and never connects', async () => {
    const before = hits.length;
    await expectEgress(guardedRequest(`${base()}/ok`, { rules: PHOTO_URL_RULES }), 'forbidden_url', 'no_allowed_address');
    expect(hits.length).toBe(before);
  });

  it('connects only to an address that passed, dropping the non-public ones', async () => {
    const dns = fakeDns(() => ['10.1.2.3', '169.254.169.254', '127.0.0.1']);
    const res = await guardedRequest(`http://photos.partner.example:${port}/ok`, { ...opts, resolver: dns });
    expect(res.status).toBe(200);
    expect(res.remoteAddress).toBe('127.0.0.1');
  });

  it('vets again at every connection, so DNS rebinding is refused', async () => {
    // First answer allowed (127.0.0.1 is in the allow-list); then the name rebinds to 127.0.0.2, which is not.
    const dns = fakeDns((call) => (call === 1 ? ['127.0.0.1'] : ['127.0.0.2']));
    const allow = ['127.0.0.1/32'];
    const first = await guardedRequest(`http://rebind.partner.example:${port}/ok`, { rules: PHOTO_URL_RULES, allowCidrs: allow, resolver: dns });
    expect(first.status).toBe(200);
    const before = hits.length;
    await expectEgress(
      guardedRequest(`http://rebind.partner.example:${port}/ok`, { rules: PHOTO_URL_RULES, allowCidrs: allow, resolver: dns }),
      'forbidden_url',
      'no_allowed_address',
    );
    expect(dns.calls).toBe(2);
    expect(hits.length).toBe(before);
  });

  it('does not follow redirects: the 3xx is returned and the target never requested', async () => {
    const before = hits.filter((h) => h === '/target').length;
    const res = await guardedRequest(`${base()}/redirect`, opts);
    expect(res.status).toBe(302);
    expect(hits.filter((h) => h === '/target').length).toBe(before);
  });

  it('refuses a declared oversize body before reading it', async () => {
    await expectEgress(guardedRequest(`${base()}/big-declared`, { ...opts, maxBytes: 1_000_000 }), 'too_large', 'content_length');
  });

  it('enforces the byte limit while streaming a body without a length', async () => {
    await expectEgress(guardedRequest(`${base()}/big-chunked`, { ...opts, maxBytes: 1_000_000 }), 'too_large', 'body');
    const ok = await guardedRequest(`${base()}/big-chunked`, { ...opts, maxBytes: 4_000_000 });
    expect(ok.body.length).toBe(50 * 64 * 1024);
  });

  it('times out a server that never answers', async () => {
    const t0 = Date.now();
    await expectEgress(guardedRequest(`${base()}/silent`, { ...opts, readTimeoutMs: 300 }), 'unreachable', 'read_timeout');
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('ends a trickling server at the overall deadline', async () => {
    const t0 = Date.now();
    await expectEgress(guardedRequest(`${base()}/trickle`, { ...opts, readTimeoutMs: 1000, totalTimeoutMs: 400 }), 'unreachable', 'deadline');
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('reports a connection cut mid-body as unreachable', async () => {
    await expectEgress(guardedRequest(`${base()}/cut`, opts), 'unreachable');
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

  it('can be aborted', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    await expectEgress(guardedRequest(`${base()}/silent`, { ...opts, signal: ac.signal }), 'unreachable', 'aborted');
  });

  it('sends a method and body (webhook-style POST)', async () => {
    const res = await guardedRequest(`${base()}/post`, { ...opts, method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(201);
    expect(res.body.toString()).toBe('POST {"a":1}');
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
