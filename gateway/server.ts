/**
 * Starts the gateway's HTTP server and drains it on shutdown: stop accepting,
 * let in-flight requests finish within the grace period, then close idle sockets and
 * send the request log's last records (request-recorder.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { IdentityService } from '../gen/psync/identity/v1/identity_pb';
import { createGatewayApp, GatewayDeps } from './app';
import { RequestRecorder } from './request-recorder';

export async function startGateway(deps: GatewayDeps): Promise<{ url: string; close(graceMs: number): Promise<void> }> {
  let draining = false;
  const identity = deps.clients.client(IdentityService, deps.urls.identity);
  const recorder = new RequestRecorder({ send: (requests) => identity.recordRequests({ requests }), log: deps.log.child({ component: 'request-log' }) });
  const app = createGatewayApp(deps, () => draining, recorder);
  // eslint-disable-next-line @typescript-eslint/no-misused-promises -- Koa's handler settles every request itself (ctx.onerror); its promise never rejects.
  const server = http.createServer(app.callback());
  // Slow or stuck clients cannot hold a socket for ever.
  server.requestTimeout = 30000;
  server.headersTimeout = 20000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(deps.config.port, deps.config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = ['0.0.0.0', '::', ''].includes(deps.config.host) ? '127.0.0.1' : deps.config.host;
  return {
    url: `http://${host}:${port}`,
    async close(graceMs: number) {
      draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      await closed;
      clearTimeout(timer);
      // The requests answered last are recorded too, within the same grace period.
      await recorder.close(graceMs);
    },
  };
}
