/**
 * The internal API's trust boundary, RPC by RPC (services/kit/rpc/access-policy.ts,
 * docs/security/internal-access.md): every RPC of every service × every caller role ×
 * no credential × a credential nobody issued, against a running system — the
 * all-in-one on whatever backend the environment gives, and (with DATABASE_URL and
 * NATS_URL) one process per service as Kubernetes runs it.
 *
 * - no or an unknown credential → UNAUTHENTICATED; a role not allowed → PERMISSION_DENIED;
 *   an allowed role gets past the boundary (the RPC's own answer, whatever it is);
 * - refused calls write nothing: with write-shaped, valid requests, every table of every
 *   service's schema has the same rows before and after (real PostgreSQL only: the
 *   embedded database lives inside the system's process).
 */
import { create, type DescMethod, type DescService } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { ServerReflection as ReflectionV1 } from '../../gen/grpc/reflection/v1/reflection_pb';
import { ServerReflection as ReflectionV1Alpha } from '../../gen/grpc/reflection/v1alpha/reflection_pb';
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { NotificationsService } from '../../gen/psync/notifications/v1/notifications_pb';
import { isAllowed, ROLES, type Role } from '../../services/kit/rpc';
import { createSql } from '../../services/kit/db';
import { credentialInterceptor, TEST_TOKENS, testRoleFor } from '../support/credentials';
import { canSplit, startSplitSystem, type SplitSystem } from '../support/split-system';
import { healthClient } from './grpc-health';
import { backends, startSystem, stopAllSystems, type RunningSystem } from '../support/system';

const SERVICES: DescService[] = [ReflectionV1, ReflectionV1Alpha, AdminService, IdentityService, CatalogService, CalendarService, NotificationsService];
/** Which process hosts a service in split mode (AdminService, reflection: every one; the identity, calendar process is used). */
const HOST: Record<string, 'identity' | 'catalog' | 'calendar' | 'notifications'> = {
  [ReflectionV1.typeName]: 'calendar',
  [ReflectionV1Alpha.typeName]: 'calendar',
  [AdminService.typeName]: 'identity',
  [IdentityService.typeName]: 'identity',
  [CatalogService.typeName]: 'catalog',
  [CalendarService.typeName]: 'calendar',
  [NotificationsService.typeName]: 'notifications',
};

type Caller = Role | 'none' | 'unknown';
const CALLERS: Caller[] = [...ROLES, 'none', 'unknown'];
const UNKNOWN_TOKEN = 'psync-test-credential-nobody-issued-0123456789abcdef';

interface Outcome {
  rpc: string;
  caller: Caller;
  /** 'passed' (got past the boundary), 'unauthenticated', 'permission_denied'. */
  result: string;
}

function bearer(caller: Caller): Interceptor {
  return (next) => (req) => {
    if (caller === 'unknown') req.header.set('authorization', `Bearer ${UNKNOWN_TOKEN}`);
    else if (caller !== 'none') req.header.set('authorization', `Bearer ${TEST_TOKENS[caller]}`);
    return next(req);
  };
}

/** What the boundary did with one call: refused it (how), or let it through. */
function classify(err: unknown): string {
  if (!(err instanceof ConnectError)) return 'passed';
  if (err.code === Code.Unauthenticated && err.rawMessage.includes('internal API credential')) return 'unauthenticated';
  if (err.code === Code.PermissionDenied && err.rawMessage.includes('may not call')) return 'permission_denied';
  return 'passed';
}

function expected(caller: Caller, service: string, method: string): string {
  if (caller === 'none' || caller === 'unknown') return 'unauthenticated';
  return isAllowed(caller, service, method) ? 'passed' : 'permission_denied';
}

/**
 * One call of `method` as `caller`; a server stream counts as passed once it opened
 * without an error for 300 ms, a bidirectional one (reflection) once it answered its
 * one request.
 */
async function call(baseUrl: string, sessions: Http2SessionManager, service: DescService, method: DescMethod, caller: Caller, input: unknown): Promise<string> {
  const client = createClient(service, createGrpcTransport({ baseUrl, sessionManager: sessions, interceptors: [bearer(caller)], defaultTimeoutMs: 15000 })) as unknown as Record<
    string,
    (req: unknown, opts?: { signal?: AbortSignal }) => unknown
  >;
  const request = create(method.input, input as never);
  try {
    if (method.methodKind === 'bidi_streaming') {
      const one = async function* () {
        yield request;
      };
      for await (const _ of client[method.localName]!(one()) as AsyncIterable<unknown>) break;
      return 'passed';
    }
    if (method.methodKind === 'server_streaming') {
      const signal = AbortSignal.timeout(300);
      try {
        for await (const _ of client[method.localName]!(request, { signal }) as AsyncIterable<unknown>) break;
      } catch (err) {
        if (signal.aborted && !(err instanceof ConnectError && err.code !== Code.Canceled && err.code !== Code.DeadlineExceeded)) return 'passed';
        throw err;
      }
      return 'passed';
    }
    await client[method.localName]!(request);
    return 'passed';
  } catch (err) {
    return classify(err);
  }
}

/** Valid, write-shaped requests: what a refused caller would have written. */
function writeRequests(ws: string, listing: string): Record<string, unknown> {
  const day = (n: number) => new Date(Date.UTC(2031, 0, 1 + n)).toISOString().slice(0, 10);
  return {
    CreateWorkspace: { name: 'matrix intruder', environment: Environment.SANDBOX },
    IssueKey: { workspaceId: ws },
    IssueClient: { name: 'matrix intruder' },
    CreateListing: { workspaceId: ws },
    PlaceHold: { listingId: listing, checkIn: day(0), checkOut: day(2) },
    ConfirmBooking: {
      listingId: listing,
      checkIn: day(3),
      checkOut: day(5),
      guestId: 'g-matrix',
      guestName: 'Ann Intruder',
      partySize: 2,
      amountPaid: { value: '120.00', currency: 'EUR' },
    },
    PutBlock: { workspaceId: ws, externalUid: 'matrix-block', target: { case: 'listingId', value: listing }, checkIn: day(6), checkOut: day(8) },
    EraseGuest: { guestId: 'g-matrix' },
    RotateSecret: { workspaceId: ws },
  };
}

/** Row counts of every table in the four services' schemas. */
async function rowCounts(databaseUrl: string): Promise<Record<string, number>> {
  const sql = createSql(databaseUrl, { max: 1 });
  try {
    const tables = await sql<{ t: string }[]>`
      select format('%I.%I', schemaname, tablename) as t from pg_tables
      where schemaname in ('identity', 'catalog', 'calendar', 'notifications') order by 1`;
    const out: Record<string, number> = {};
    for (const { t } of tables) out[t] = Number((await sql.unsafe(`select count(*)::int as n from ${t}`))[0]!.n);
    return out;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Runs the whole matrix; `urlOf` says where each service is served. */
async function runMatrix(urlOf: (service: DescService) => string, databaseUrl: string | undefined): Promise<void> {
  const sessions = new Map<string, Http2SessionManager>();
  const sessionFor = (url: string) => sessions.get(url) ?? sessions.set(url, new Http2SessionManager(url)).get(url)!;
  try {
    // Fixtures, made by their rightful callers.
    const operator = <T extends DescService>(s: T) =>
      createClient(s, createGrpcTransport({ baseUrl: urlOf(s), sessionManager: sessionFor(urlOf(s)), interceptors: [credentialInterceptor('operator')] }));
    const ws = (await operator(IdentityService).createWorkspace({ name: 'matrix', environment: Environment.SANDBOX })).workspace!.workspaceId;
    const listing = (await operator(CatalogService).createListing({ workspaceId: ws })).listing!.listingId;
    const writes = writeRequests(ws, listing);

    // Refused calls first, with valid write-shaped requests: nothing may change.
    const before = databaseUrl ? await rowCounts(databaseUrl) : undefined;
    const refused: Outcome[] = [];
    const refusedWant: Outcome[] = [];
    for (const service of SERVICES) {
      for (const method of service.methods) {
        for (const caller of CALLERS) {
          const want = expected(caller, service.typeName, method.name);
          if (want === 'passed') continue;
          const rpc = `${service.typeName}/${method.name}`;
          refusedWant.push({ rpc, caller, result: want });
          const url = urlOf(service);
          refused.push({ rpc, caller, result: await call(url, sessionFor(url), service, method, caller, writes[method.name] ?? {}) });
        }
      }
    }
    expect(refused).toEqual(refusedWant);
    if (databaseUrl) expect(await rowCounts(databaseUrl)).toEqual(before);

    // Control: the same requests from an allowed caller do write (so the refusals above were the boundary's).
    const accepted: Record<string, string> = {};
    for (const service of SERVICES) {
      for (const method of service.methods) {
        if (!(method.name in writes)) continue;
        const role = testRoleFor(service.typeName, method.name)!;
        const client = createClient(
          service,
          createGrpcTransport({ baseUrl: urlOf(service), sessionManager: sessionFor(urlOf(service)), interceptors: [credentialInterceptor(role)] }),
        );
        try {
          await (client as unknown as Record<string, (r: unknown) => Promise<unknown>>)[method.localName]!(create(method.input, writes[method.name] as never));
          accepted[method.name] = 'ok';
        } catch (err) {
          accepted[method.name] = Code[ConnectError.from(err).code];
        }
      }
    }
    // RotateSecret needs a registered endpoint, which the fixture workspace has not.
    expect(accepted).toEqual({ ...Object.fromEntries(Object.keys(writes).map((k) => [k, 'ok'])), RotateSecret: 'NotFound' });
    if (databaseUrl) expect(await rowCounts(databaseUrl)).not.toEqual(before);

    // Allowed calls get past the boundary (empty requests: their own validation answers).
    const allowed: Outcome[] = [];
    const allowedWant: Outcome[] = [];
    for (const service of SERVICES) {
      for (const method of service.methods) {
        for (const caller of ROLES) {
          if (!isAllowed(caller, service.typeName, method.name)) continue;
          const rpc = `${service.typeName}/${method.name}`;
          allowedWant.push({ rpc, caller, result: 'passed' });
          const url = urlOf(service);
          allowed.push({ rpc, caller, result: await call(url, sessionFor(url), service, method, caller, {}) });
        }
      }
    }
    expect(allowed).toEqual(allowedWant);
    expect(allowed.length + refused.length).toBe(SERVICES.reduce((n, s) => n + s.methods.length, 0) * CALLERS.length);
  } finally {
    for (const s of sessions.values()) s.abort();
  }
}

describe(`internal API role × RPC matrix, all-in-one (database: ${backends.database}, bus: ${backends.bus})`, () => {
  let system: RunningSystem;
  beforeAll(async () => {
    system = await startSystem();
  });
  afterAll(() => stopAllSystems());

  test('every RPC × every role × no credential × an unknown credential', async () => {
    await runMatrix(() => system.internalUrl, system.env.DATABASE_URL);
  });

  test('grpc.health.v1.Health needs no credential (a stock grpc-js client, as Kubernetes probes call it)', async () => {
    const client = healthClient(system.internalUrl);
    try {
      await expect(client.check('psync.calendar.v1.CalendarService')).resolves.toBe('SERVING');
    } finally {
      client.close();
    }
  });
});

(canSplit ? describe : describe.skip)('internal API role × RPC matrix, one process per service (needs DATABASE_URL and NATS_URL; skipped otherwise)', () => {
  let split: SplitSystem;
  beforeAll(async () => {
    split = await startSplitSystem();
  }, 120000);
  afterAll(() => split?.stop());

  test('every RPC × every role × no credential × an unknown credential, over the network between processes', async () => {
    await runMatrix((s) => split.urls[HOST[s.typeName]!], split.shared.DATABASE_URL);
  });

  test('the gateway, with its own credential, serves the public contract through the services', async () => {
    const res = await fetch(`${split.gateway.gatewayUrl}/readyz`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { services: unknown }).services).toEqual({ identity: 'serving', catalog: 'serving', calendar: 'serving', notifications: 'serving' });
  });
});
