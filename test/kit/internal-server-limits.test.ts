/**
 * The internal listener's resource limits (services/kit/rpc/internal-server.ts
 * InternalServerLimits), with small values: an over-size request message is refused
 * with RESOURCE_EXHAUSTED, the stream cap and header-size limit are advertised in the
 * HTTP/2 settings, a request that never finishes arriving is cancelled, an idle
 * connection is closed; and the health-only listener serves nothing but health.
 */
import http2 from 'node:http2';
import { Code, ConnectError } from '@connectrpc/connect';
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import { Health, HealthCheckResponse_ServingStatus } from '../../gen/grpc/health/v1/health_pb';
import { HealthState } from '../../services/kit/rpc';
import { InternalClients } from '../../services/kit/rpc';
import { DEFAULT_INTERNAL_SERVER_LIMITS, startInternalServer, type InternalServer } from '../../services/kit/rpc';
import { createLogger } from '../../services/kit/base';

const log = createLogger({ level: 'silent', name: 'limits-test' });
const health = new HealthState();
let server: InternalServer;
let healthOnly: InternalServer;

beforeAll(async () => {
  health.declare(AdminService.typeName);
  health.setReady(AdminService.typeName);
  server = await startInternalServer({
    host: '127.0.0.1',
    port: 0,
    log,
    health,
    limits: { readMaxBytes: 1024, maxConcurrentStreams: 3, maxHeaderListSize: 4096, requestReadTimeoutMs: 300, sessionIdleTimeoutMs: 500 },
    routes(router) {
      router.service(AdminService, { migrate: async () => ({ migrated: true, schemas: [] }) });
    },
  });
  healthOnly = await startInternalServer({ host: '127.0.0.1', port: 0, log, health, routes: () => undefined, purpose: 'health' });
});

afterAll(async () => {
  await server?.close(100);
  await healthOnly?.close(100);
});

test('the defaults are sized from the largest legitimate message, far below Connect’s 4 GiB', () => {
  expect(DEFAULT_INTERNAL_SERVER_LIMITS.readMaxBytes).toBe(1024 * 1024);
  expect(DEFAULT_INTERNAL_SERVER_LIMITS.maxConcurrentStreams).toBeLessThanOrEqual(1000);
});

test('a request message over readMaxBytes: RESOURCE_EXHAUSTED; under it: served', async () => {
  const clients = new InternalClients([], 5000);
  try {
    const check = clients.client(Health, server.url);
    await expect(check.check({ service: 'x'.repeat(2000) })).rejects.toMatchObject({ code: Code.ResourceExhausted });
    expect((await check.check({ service: AdminService.typeName })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  } finally {
    clients.close();
  }
});

test('the stream cap and header limit are advertised to clients', async () => {
  const session = http2.connect(server.url);
  try {
    await new Promise<void>((resolve) => session.once('remoteSettings', () => resolve()));
    expect(session.remoteSettings.maxConcurrentStreams).toBe(3);
    expect(session.remoteSettings.maxHeaderListSize).toBe(4096);
  } finally {
    session.destroy();
  }
});

test('a request that never finishes arriving is cancelled after requestReadTimeoutMs', async () => {
  const session = http2.connect(server.url);
  try {
    const stream = session.request({ ':method': 'POST', ':path': '/psync.admin.v1.AdminService/Migrate', 'content-type': 'application/grpc' }, { endStream: false });
    stream.write(Buffer.from([0, 0, 0, 0, 10])); // a frame header promising 10 bytes that never come
    stream.on('error', () => undefined);
    stream.resume();
    const started = Date.now();
    const code = await new Promise<number>((resolve) => stream.once('close', () => resolve(stream.rstCode ?? -1)));
    expect(code).toBe(http2.constants.NGHTTP2_CANCEL);
    expect(Date.now() - started).toBeLessThan(5000);
  } finally {
    session.destroy();
  }
});

test('an idle connection is closed after sessionIdleTimeoutMs', async () => {
  const session = http2.connect(server.url);
  session.on('error', () => undefined);
  await new Promise<void>((resolve) => session.once('connect', () => resolve()));
  const closed = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 5000);
    session.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
  expect(closed).toBe(true);
});

test('the health-only listener answers health without a credential and nothing else', async () => {
  const clients = new InternalClients([], 5000);
  try {
    expect((await clients.client(Health, healthOnly.url).check({ service: '' })).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    const err = await clients
      .client(AdminService, healthOnly.url)
      .migrate({})
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(err?.code).toBe(Code.Unimplemented);
  } finally {
    clients.close();
  }
});
