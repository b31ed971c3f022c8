/**
 * What the chart's per-component certificates (helm/psync README "Internal TLS") rely
 * on: the extended key usages are enforced by the internal listener and its clients
 * as they are configured (services/kit/rpc/internal-server.ts, internal-client.ts). A
 * certificate with only "client auth" (the gateway's) cannot serve the internal API:
 * clients refuse it even though the CA signed it. Under mutual TLS a certificate with
 * only "server auth" (identity's) is refused as a client certificate, while a
 * "client auth" one is accepted.
 */
import { Health, HealthCheckResponse_ServingStatus } from '../../gen/grpc/health/v1/health_pb';
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import { HealthState } from '../../services/kit/rpc';
import { InternalClients, type InternalTls } from '../../services/kit/rpc';
import { startInternalServer, type InternalServer } from '../../services/kit/rpc';
import { createLogger } from '../../services/kit/base';
import { createInternalCa, type InternalCa } from '../support/tls';

const log = createLogger({ level: 'silent', name: 'tls-usages-test' });
const health = new HealthState();
const SERVER_ONLY = { serverAuth: true, clientAuth: false };
const CLIENT_ONLY = { serverAuth: false, clientAuth: true };

let ca: InternalCa;
let serverOnly: { cert: Buffer; key: Buffer };
let clientOnly: { cert: Buffer; key: Buffer };
const servers: InternalServer[] = [];

const pair = (p: { cert: string; key: string }) => ({ cert: Buffer.from(p.cert), key: Buffer.from(p.key) });

beforeAll(async () => {
  health.declare(AdminService.typeName);
  health.setReady(AdminService.typeName);
  ca = await createInternalCa();
  serverOnly = pair(await ca.issue('identity', SERVER_ONLY));
  clientOnly = pair(await ca.issue('gateway', CLIENT_ONLY));
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close(100)));
});

async function serve(certificate: { cert: Buffer; key: Buffer }, requireClientCert: boolean): Promise<string> {
  const server = await startInternalServer({
    host: '127.0.0.1',
    port: 0,
    log,
    health,
    tls: { ...certificate, ca: Buffer.from(ca.caPem), requireClientCert },
    routes: () => undefined,
  });
  servers.push(server);
  return server.url;
}

/** A health check over TLS with the client's `tls`: 'SERVING' or the error message. */
async function check(url: string, tls: InternalTls): Promise<string> {
  const clients = new InternalClients([], 5000, { tls });
  try {
    const res = await clients.client(Health, url).check({ service: AdminService.typeName });
    return HealthCheckResponse_ServingStatus[res.status];
  } catch (err) {
    return String((err as Error).message);
  } finally {
    clients.close();
  }
}

test('a "server auth" certificate serves; a "client auth" one signed by the same CA is refused by the client', async () => {
  const trusting = { ca: Buffer.from(ca.caPem) };
  expect(await check(await serve(serverOnly, false), trusting)).toBe('SERVING');
  expect(await check(await serve(clientOnly, false), trusting)).toMatch(/unsuitable certificate purpose/i);
});

test('under mutual TLS a "client auth" certificate is accepted as a client; a "server auth" one and none are refused', async () => {
  const url = await serve(serverOnly, true);
  const caPem = Buffer.from(ca.caPem);
  expect(await check(url, { ca: caPem, ...clientOnly })).toBe('SERVING');
  expect(await check(url, { ca: caPem, ...serverOnly })).not.toBe('SERVING');
  expect(await check(url, { ca: caPem })).not.toBe('SERVING');
});
