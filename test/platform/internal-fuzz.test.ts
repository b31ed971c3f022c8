/**
 * Fuzzing the internal API with valid credentials: every RPC of every service, called
 * by a role allowed to call it, with seeded random messages (hostile strings, extreme
 * numbers, unknown enum values, out-of-range timestamps, nested and repeated fields).
 *
 * Every answer is a deliberate one — success or a ConnectError the RPC documents —
 * never INTERNAL, UNKNOWN or DATA_LOSS, never UNAVAILABLE while the database is up, and
 * no refusal echoes a submitted value; the system is healthy afterwards. FUZZ_SEED
 * reruns a run exactly.
 */
import { create, type DescMethod, type DescService } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { NotificationsService } from '../../gen/psync/notifications/v1/notifications_pb';
import { credentialInterceptor, testRoleFor } from '../support/credentials';
import { canary, fuzzSeed, randomMessage, Rng } from '../support/fuzz';
import { backends, jsonLogs, startSystem, stopAllSystems, type RunningSystem } from '../support/system';
import { healthClient } from './grpc-health';

const SERVICES: DescService[] = [AdminService, IdentityService, CatalogService, CalendarService, NotificationsService];
const PER_RPC = Number(process.env.FUZZ_PER_RPC ?? 25);
/** Faults, not answers. (UNAUTHENTICATED is ExchangeToken's documented answer to a bad key; the boundary's own refusals are told apart by message.) */
const FORBIDDEN = new Set([Code.Internal, Code.Unknown, Code.DataLoss, Code.Unavailable]);
const boundaryRefusal = (e: ConnectError) => /internal API credential|may not call/.test(e.rawMessage);
const { seed, chosen } = fuzzSeed();

afterAll(() => stopAllSystems());

describe(`internal API fuzz (seed ${seed}${chosen ? ', random: rerun with FUZZ_SEED' : ''}; database: ${backends.database}, bus: ${backends.bus})`, () => {
  let system: RunningSystem;
  let sessions: Http2SessionManager;

  beforeAll(async () => {
    if (chosen) process.stdout.write(`internal API fuzz: FUZZ_SEED=${seed}\n`);
    system = await startSystem();
    sessions = new Http2SessionManager(system.internalUrl);
  });
  afterAll(() => sessions?.abort());

  async function call(service: DescService, method: DescMethod, input: Record<string, unknown>): Promise<ConnectError | undefined> {
    const role = testRoleFor(service.typeName, method.name)!;
    const client = createClient(
      service,
      createGrpcTransport({ baseUrl: system.internalUrl, sessionManager: sessions, interceptors: [credentialInterceptor(role)], defaultTimeoutMs: 15000 }),
    ) as unknown as Record<string, (req: unknown, opts?: { signal?: AbortSignal }) => unknown>;
    let request: unknown;
    try {
      request = create(method.input, input as never);
    } catch {
      return undefined; // not representable as a message: nothing to send
    }
    try {
      if (method.methodKind === 'server_streaming') {
        const signal = AbortSignal.timeout(200);
        try {
          for await (const _ of client[method.localName]!(request, { signal }) as AsyncIterable<unknown>) break;
        } catch (err) {
          if (signal.aborted) return undefined;
          throw err;
        }
        return undefined;
      }
      await client[method.localName]!(request);
      return undefined;
    } catch (err) {
      return ConnectError.from(err);
    }
  }

  test(`${PER_RPC} random messages per RPC, each from an allowed role: only deliberate answers, nothing echoed`, async () => {
    const rng = new Rng(seed);
    const failures: string[] = [];
    let calls = 0;
    let n = 0;
    for (const service of SERVICES) {
      for (const method of service.methods) {
        for (let i = 0; i < PER_RPC; i++, n++) {
          const mark = canary(n);
          const err = await call(service, method, randomMessage(rng, method.input, mark));
          calls++;
          if (!err) continue;
          const rpc = `${service.typeName}/${method.name}`;
          if (FORBIDDEN.has(err.code) || boundaryRefusal(err)) failures.push(`#${n} ${rpc}: ${Code[err.code]} ${err.rawMessage.slice(0, 160)}`);
          else if (err.rawMessage.includes(mark)) failures.push(`#${n} ${rpc}: echoed the submitted value in "${err.rawMessage.slice(0, 160)}"`);
        }
      }
    }
    const faults = failures.length
      ? jsonLogs(system.logs())
          .filter((l) => Number(l.level) >= 50)
          .slice(0, 5)
          .map((l) => JSON.stringify(l).slice(0, 600))
      : [];
    expect({ seed, failures: failures.slice(0, 20), failed: failures.length, faults }).toEqual({ seed, failures: [], failed: 0, faults: [] });
    expect(calls).toBeGreaterThanOrEqual(SERVICES.reduce((k, s) => k + s.methods.length, 0) * PER_RPC);
  }, 300_000);

  test('the system is healthy afterwards', async () => {
    const health = healthClient(system.internalUrl);
    try {
      for (const s of [IdentityService, CatalogService, CalendarService, NotificationsService]) await expect(health.check(s.typeName)).resolves.toBe('SERVING');
    } finally {
      health.close();
    }
    expect((await fetch(`${system.gatewayUrl}/readyz`)).status).toBe(200);
  });
});
