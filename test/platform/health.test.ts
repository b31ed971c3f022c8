/**
 * The internal port of the all-in-one process speaks standard gRPC: a stock
 * @grpc/grpc-js client gets SERVING from grpc.health.v1.Health for the process and for
 * each of the four services, the whole process's status for any name asked anonymously
 * and NOT_FOUND for a name it does not host asked by a configured role, and Watch streams;
 * a Connect client calls psync.admin.v1.AdminService/Migrate.
 */
import { credentialInterceptor, TEST_TOKENS } from '../support/credentials';
import * as grpc from '@grpc/grpc-js';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import { backends, logEvents, RunningSystem, startSystem, stopAllSystems } from '../support/system';
import { healthClient, HealthClient } from './grpc-health';
import { waitFor } from '../support/eventually';

const SERVICES = ['psync.identity.v1.IdentityService', 'psync.catalog.v1.CatalogService', 'psync.calendar.v1.CalendarService', 'psync.notifications.v1.NotificationsService'];

describe(`internal gRPC health and admin (database: ${backends.database}, bus: ${backends.bus})`, () => {
  let system: RunningSystem;
  let health: HealthClient | undefined;
  let sessions: Http2SessionManager | undefined;

  beforeAll(async () => {
    system = await startSystem();
    health = healthClient(system.internalUrl);
  });

  afterAll(async () => {
    health?.close();
    sessions?.abort();
    await stopAllSystems();
  });

  test('the internal URL is on INTERNAL_PORT', () => {
    expect(system.internalUrl).toBe(`http://127.0.0.1:${system.env.INTERNAL_PORT}`);
  });

  test('Check("") — the whole process — is SERVING', async () => {
    await expect(health!.check('')).resolves.toBe('SERVING');
  });

  test.each(SERVICES)('Check(%s) is SERVING', async (service) => {
    await expect(health!.check(service)).resolves.toBe('SERVING');
  });

  test('anonymous: any name is answered about the whole process, so the port never says which services it hosts', async () => {
    await expect(health!.check('psync.nope.v1.NopeService')).resolves.toBe('SERVING');
    await expect(health!.check('grpc.health.v1.Health.Unknown')).resolves.toBe('SERVING');
    await expect(health!.watch('psync.nope.v1.NopeService')).resolves.toEqual(['SERVING']);
  });

  test('authenticated (a configured role): Check of a service the process does not host is NOT_FOUND', async () => {
    const operator = healthClient(system.internalUrl, TEST_TOKENS.operator);
    try {
      await expect(operator.check(SERVICES[0]!)).resolves.toBe('SERVING');
      await expect(operator.check('psync.nope.v1.NopeService')).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
      await expect(operator.check('grpc.health.v1.Health.Unknown')).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
      await expect(operator.watch('psync.nope.v1.NopeService')).resolves.toEqual(['SERVICE_UNKNOWN']);
    } finally {
      operator.close();
    }
  });

  test('Watch streams SERVING at once', async () => {
    await expect(health!.watch('')).resolves.toEqual(['SERVING']);
    await expect(health!.watch(SERVICES[1]!)).resolves.toEqual(['SERVING']);
  });

  test('a Connect client calls AdminService/Migrate: migrated, nothing left to apply', async () => {
    sessions = new Http2SessionManager(system.internalUrl);
    const admin = createClient(AdminService, createGrpcTransport({ baseUrl: system.internalUrl, sessionManager: sessions, interceptors: [credentialInterceptor()] }));
    const before = system.logs().length;
    const res = await admin.migrate({}, { timeoutMs: 30000 });
    expect(res.migrated).toBe(true);
    expect([...res.schemas].sort()).toEqual(['calendar', 'catalog', 'identity', 'notifications']);
    // Idempotent: the system migrated at start-up, so this run applies nothing.
    expect(logEvents(system.logs().slice(before), 'migration.applied')).toEqual([]);
    // And the system is still serving.
    await expect(health!.check('')).resolves.toBe('SERVING');
  });

  test('on SIGTERM, Watch streams NOT_SERVING before the process goes, and it exits 0', async () => {
    let first = false;
    const statuses = health!.watch('', 2, 15000, () => (first = true));
    await waitFor('the first message, before the signal', () => first, 10_000);
    system.child.kill('SIGTERM');
    await expect(statuses).resolves.toEqual(['SERVING', 'NOT_SERVING']);
    await expect(system.stop()).resolves.toBe(0);
  });
});
