/**
 * The internal API's authentication interceptor (internal-auth.ts) on a real internal
 * server, over h2c and in process: who gets through, who is refused with which code,
 * and that a refused call never reaches the handler.
 */
import { randomBytes } from 'node:crypto';
import { Code, ConnectError } from '@connectrpc/connect';
import { AdminService } from '../../../gen/psync/admin/v1/admin_pb';
import { Health, HealthCheckResponse_ServingStatus } from '../../../gen/grpc/health/v1/health_pb';
import { HealthState } from './health';
import { InProcessServices } from './in-process-transport';
import { authInterceptor, bearerToken, CLIENT_TOKEN_SHAPE, ClientVerifier, CredentialRegistry, tokenSha256, type ClientLookup } from './internal-auth';
import { InternalClients } from './internal-client';
import { serverTracingInterceptor, startInternalServer, type InternalServer } from './internal-server';
import { createLogger } from '../base';

const log = createLogger({ level: 'silent', name: 'internal-auth-test' });
const OPERATOR = 'operator-credential-0123456789abcdef0123456789abcdef';
const GATEWAY = 'gateway-credential-0123456789abcdef0123456789abcdef';
const CLIENT = 'psmc_aaaaaaaaaaaaaaaa_0123456789abcdef0123456789abcdef0123456789_';
const hex = (t: string) => tokenSha256(t).toString('hex');

let handlerCalls = 0;
let lookups = 0;
let server: InternalServer;
const inProcess = new InProcessServices();
const health = new HealthState();
const root = new InternalClients([], 5000);

const auth = authInterceptor({
  registry: new CredentialRegistry([
    { role: 'operator', sha256: hex(OPERATOR) },
    { role: 'gateway', sha256: hex(GATEWAY) },
  ]),
  clients: new ClientVerifier(async (sha) => {
    lookups++;
    return sha.equals(tokenSha256(CLIENT)) ? { authenticated: true, clientId: 'aaaaaaaaaaaaaaaa', role: 'marketplace' } : { authenticated: false, clientId: '', role: '' };
  }, 60_000),
  log,
});

beforeAll(async () => {
  health.declare(AdminService.typeName);
  health.setReady(AdminService.typeName);
  server = await startInternalServer({
    host: '127.0.0.1',
    port: 0,
    log,
    health,
    interceptors: [auth],
    routes(networkRouter) {
      inProcess.recording(networkRouter).service(AdminService, {
        async migrate() {
          handlerCalls++;
          return { migrated: true, schemas: [] };
        },
      });
    },
  });
  root.useInProcess(server.url, inProcess, [serverTracingInterceptor, auth]);
});

afterAll(async () => {
  root.close();
  await server?.close(100);
});

beforeEach(() => {
  handlerCalls = 0;
});

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return Code[ConnectError.from(err).code];
  }
}

/** Over h2c with `token` (none when undefined), through a network-only client. */
function network(token?: string) {
  const clients = new InternalClients([], 5000, { token });
  return { admin: clients.client(AdminService, server.url), health: clients.client(Health, server.url), close: () => clients.close() };
}

describe('over the network', () => {
  test('no credential, a malformed header or an unknown token: UNAUTHENTICATED, handler never runs', async () => {
    const none = network();
    const unknown = network('nobody-issued-this-0123456789abcdef0123456789');
    try {
      expect(await codeOf(none.admin.migrate({}))).toBe('Unauthenticated');
      expect(await codeOf(unknown.admin.migrate({}))).toBe('Unauthenticated');
      expect(await codeOf(none.admin.migrate({}, { headers: { authorization: OPERATOR } }))).toBe('Unauthenticated'); // not "Bearer …"
      expect(handlerCalls).toBe(0);
    } finally {
      none.close();
      unknown.close();
    }
  });

  test('a known role not allowed the RPC: PERMISSION_DENIED, handler never runs; an allowed one passes', async () => {
    const gateway = network(GATEWAY);
    const operator = network(OPERATOR);
    try {
      expect(await codeOf(gateway.admin.migrate({}))).toBe('PermissionDenied');
      expect(handlerCalls).toBe(0);
      expect(await codeOf(operator.admin.migrate({}))).toBe('ok');
      expect(handlerCalls).toBe(1);
    } finally {
      gateway.close();
      operator.close();
    }
  });

  test('a marketplace client token is checked with identity once, then remembered', async () => {
    const client = network(CLIENT);
    try {
      lookups = 0;
      // Valid client, but AdminService/Migrate is the operator's: PERMISSION_DENIED (so it was authenticated).
      expect(await codeOf(client.admin.migrate({}))).toBe('PermissionDenied');
      expect(await codeOf(client.admin.migrate({}))).toBe('PermissionDenied');
      expect(lookups).toBe(1);
    } finally {
      client.close();
    }
  });

  test('a psmc_ token not of the issued shape is refused without asking identity', async () => {
    lookups = 0;
    for (const token of [`${CLIENT}x`, CLIENT.slice(0, -1), CLIENT.replace('aaaa', 'AAAA'), `psmc_${'a'.repeat(60)}`]) {
      const c = network(token);
      try {
        expect(await codeOf(c.admin.migrate({}))).toBe('Unauthenticated');
      } finally {
        c.close();
      }
    }
    expect(lookups).toBe(0);
  });

  test('grpc.health.v1.Health needs no credential', async () => {
    const none = network();
    try {
      expect((await none.health.check({ service: AdminService.typeName })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    } finally {
      none.close();
    }
  });

  test('an anonymous Health/Check is answered about the whole process whatever the name: it never tells which services the port hosts', async () => {
    const none = network();
    const stranger = network('nobody-issued-this-0123456789abcdef0123456789');
    const client = network(CLIENT);
    const operator = network(OPERATOR);
    const names = ['', AdminService.typeName, 'psync.identity.v1.IdentityService', 'psync.nope.v1.NopeService'];
    const statusOf = async (c: ReturnType<typeof network>, service: string) => {
      try {
        return HealthCheckResponse_ServingStatus[(await c.health.check({ service })).status];
      } catch (err) {
        return Code[ConnectError.from(err).code];
      }
    };
    try {
      lookups = 0;
      for (const ready of [true, false]) {
        health.setReady(AdminService.typeName, ready);
        const expected = ready ? 'SERVING' : 'NOT_SERVING';
        for (const c of [none, stranger, client]) {
          expect(await Promise.all(names.map((n) => statusOf(c, n)))).toEqual(names.map(() => expected));
        }
        // A configured role asks about one service, and learns what is not hosted.
        expect(await Promise.all(names.map((n) => statusOf(operator, n)))).toEqual([expected, expected, 'NotFound', 'NotFound']);
      }
      // Health is open, so presenting a marketplace token there makes no identity look-up.
      expect(lookups).toBe(0);
    } finally {
      health.setReady(AdminService.typeName, true);
      for (const c of [none, stranger, client, operator]) c.close();
    }
  });
});

describe('in process', () => {
  test("each component's view carries its role: the allow-list applies without a credential", async () => {
    expect(await codeOf(root.as('gateway').client(AdminService, server.url).migrate({}))).toBe('PermissionDenied');
    expect(await codeOf(root.as('catalog').client(AdminService, server.url).migrate({}))).toBe('PermissionDenied');
    expect(handlerCalls).toBe(0);
    expect(await codeOf(root.as('operator').client(AdminService, server.url).migrate({}))).toBe('ok');
    expect(handlerCalls).toBe(1);
  });

  test('a view without a role (and no credential) is refused: in-process is no back door', async () => {
    expect(await codeOf(root.client(AdminService, server.url).migrate({}))).toBe('Unauthenticated');
    expect(handlerCalls).toBe(0);
  });

  test('a role in a request header is not a credential', async () => {
    expect(await codeOf(root.client(AdminService, server.url).migrate({}, { headers: { 'x-psync-role': 'operator', authorization: 'Bearer operator' } }))).toBe('Unauthenticated');
  });
});

describe('bearerToken', () => {
  test.each([
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['  Bearer abc  ', 'abc'],
    ['Basic abc', undefined],
    ['Bearer', undefined],
    ['Bearer a b', undefined],
    ['', undefined],
  ])('%j → %j', (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });
  test('absent header', () => expect(bearerToken(null)).toBeUndefined());
});

describe('ClientVerifier', () => {
  const answer = (ok: boolean): ClientLookup => ({ authenticated: ok, clientId: ok ? 'c1' : '', role: ok ? 'marketplace' : '' });

  test('remembers answers for the TTL, asks again after it (a revocation takes effect)', async () => {
    let live = true;
    let calls = 0;
    const v = new ClientVerifier(async () => {
      calls++;
      return answer(live);
    }, 50);
    const h = tokenSha256('t');
    expect(await v.verify(h, h.toString('hex'))).toEqual({ role: 'marketplace', id: 'client:c1' });
    live = false;
    expect(await v.verify(h, h.toString('hex'))).toEqual({ role: 'marketplace', id: 'client:c1' });
    expect(calls).toBe(1);
    await new Promise((r) => setTimeout(r, 60));
    expect(await v.verify(h, h.toString('hex'))).toBeUndefined();
    expect(calls).toBe(2);
  });

  test('concurrent checks of one token share one lookup', async () => {
    let calls = 0;
    const v = new ClientVerifier(async () => {
      calls++;
      await new Promise((r) => setTimeout(r, 10));
      return answer(true);
    }, 1000);
    const h = tokenSha256('u');
    await Promise.all(Array.from({ length: 20 }, () => v.verify(h, h.toString('hex'))));
    expect(calls).toBe(1);
  });

  test('identity unreachable: UNAVAILABLE, and the failure is not remembered', async () => {
    let fail = true;
    const v = new ClientVerifier(async () => {
      if (fail) throw new Error('connect ECONNREFUSED');
      return answer(true);
    }, 1000);
    const h = tokenSha256('w');
    await expect(v.verify(h, h.toString('hex'))).rejects.toMatchObject({ code: Code.Unavailable });
    fail = false;
    expect(await v.verify(h, h.toString('hex'))).toEqual({ role: 'marketplace', id: 'client:c1' });
  });

  /** The hashes of `n` random tokens of the issued shape (CLIENT_TOKEN_SHAPE), as an attacker would try them. */
  const randomHashes = (n: number) =>
    Array.from({ length: n }, () => {
      const id = [...randomBytes(16)].map((b) => 'abcdefghijklmnopqrstuvwxyz234567'[b % 32]).join('');
      const token = `psmc_${id}_${randomBytes(32).toString('base64url')}`;
      expect(token).toMatch(CLIENT_TOKEN_SHAPE);
      return tokenSha256(token);
    });

  test('a live client stays cached (no identity call) while 20,000 random tokens are tried: misses never displace it', async () => {
    const liveHash = tokenSha256('live client');
    let liveLookups = 0;
    let otherLookups = 0;
    // A budget large enough that every random token reaches identity: only the cache policy protects the live client.
    const v = new ClientVerifier(
      async (sha) => {
        if (sha.equals(liveHash)) {
          liveLookups++;
          return answer(true);
        }
        otherLookups++;
        return answer(false);
      },
      60_000,
      { perSecond: 1e9, burst: 1e9 },
    );
    expect(await v.verify(liveHash, liveHash.toString('hex'))).toEqual({ role: 'marketplace', id: 'client:c1' });
    for (const h of randomHashes(20_000)) {
      expect(await v.verify(h, h.toString('hex'))).toBeUndefined();
      // Interleaved: the live client keeps calling throughout.
      if (otherLookups % 1000 === 0) expect(await v.verify(liveHash, liveHash.toString('hex'))).toEqual({ role: 'marketplace', id: 'client:c1' });
    }
    expect(await v.verify(liveHash, liveHash.toString('hex'))).toEqual({ role: 'marketplace', id: 'client:c1' });
    expect(otherLookups).toBe(20_000);
    expect(liveLookups).toBe(1);
  });

  test('never-seen tokens reach identity at a bounded rate (UNAVAILABLE beyond it); a known live client is never held back', async () => {
    const liveHash = tokenSha256('live client');
    let calls = 0;
    const v = new ClientVerifier(
      async (sha) => {
        calls++;
        return answer(sha.equals(liveHash));
      },
      1, // expires at once: every call of the live client is a re-check
      { perSecond: 5, burst: 10 },
    );
    expect(await v.verify(liveHash, liveHash.toString('hex'))).toEqual({ role: 'marketplace', id: 'client:c1' });
    let refused = 0;
    let unavailable = 0;
    const started = Date.now();
    for (const h of randomHashes(20_000)) {
      try {
        if ((await v.verify(h, h.toString('hex'))) === undefined) refused++;
      } catch (err) {
        expect(err).toMatchObject({ code: Code.Unavailable });
        unavailable++;
      }
    }
    const elapsedSeconds = (Date.now() - started) / 1000;
    // The burst, plus what the rate refilled meanwhile.
    expect(refused).toBeLessThanOrEqual(10 + Math.ceil(elapsedSeconds * 5) + 1);
    expect(refused + unavailable).toBe(20_000);
    // The bucket is empty, yet the known client's re-check still goes through.
    await new Promise((r) => setTimeout(r, 2));
    const before = calls;
    expect(await v.verify(liveHash, liveHash.toString('hex'))).toEqual({ role: 'marketplace', id: 'client:c1' });
    expect(calls).toBe(before + 1);
  });

  test('an unknown role from identity is not a caller', async () => {
    const v = new ClientVerifier(async () => ({ authenticated: true, clientId: 'c', role: 'root' }), 1000);
    const h = tokenSha256('x');
    expect(await v.verify(h, h.toString('hex'))).toBeUndefined();
  });
});
