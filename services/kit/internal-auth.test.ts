/**
 * The internal API's authentication interceptor (internal-auth.ts) on a real internal
 * server, over h2c and in process: who gets through, who is refused with which code,
 * and that a refused call never reaches the handler.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import { Health, HealthCheckResponse_ServingStatus } from '../../gen/grpc/health/v1/health_pb';
import { HealthState } from './health';
import { InProcessServices } from './in-process-transport';
import { authInterceptor, bearerToken, ClientVerifier, CredentialRegistry, tokenSha256, type ClientLookup } from './internal-auth';
import { InternalClients } from './internal-client';
import { serverTracingInterceptor, startInternalServer, type InternalServer } from './internal-server';
import { createLogger } from './logger';

const log = createLogger({ level: 'silent', name: 'internal-auth-test' });
const OPERATOR = 'operator-credential-0123456789abcdef0123456789abcdef';
const GATEWAY = 'gateway-credential-0123456789abcdef0123456789abcdef';
const CLIENT = 'psmc_aaaaaaaaaaaaaaaa_0123456789abcdef0123456789abcdef0123456';
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

  test('grpc.health.v1.Health needs no credential', async () => {
    const none = network();
    try {
      expect((await none.health.check({ service: AdminService.typeName })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    } finally {
      none.close();
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

  test('an unknown role from identity is not a caller', async () => {
    const v = new ClientVerifier(async () => ({ authenticated: true, clientId: 'c', role: 'root' }), 1000);
    const h = tokenSha256('x');
    expect(await v.verify(h, h.toString('hex'))).toBeUndefined();
  });
});
