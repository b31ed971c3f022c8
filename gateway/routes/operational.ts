/**
 * The operational endpoints outside /v1: GET /healthz (liveness: the process answers)
 * and GET /readyz (readiness: every internal service the gateway calls answers
 * SERVING, and the process is not draining). Routes of the one router
 * (contract-router.ts) like the contract's, so HEAD is answered as GET and another
 * method is 405 with `Allow`; no token is read and nothing is counted.
 */
import type { Route } from '../contract-router';
import type { InternalClients } from '../../services/kit/rpc';
import type { ServiceUrls } from '../../services/kit/runtime';
import { checkReadiness } from '../readiness';

export function operationalRoutes(clients: InternalClients, urls: ServiceUrls, draining: () => boolean): Route[] {
  return [
    {
      method: 'GET',
      path: '/healthz',
      async handle(ctx) {
        ctx.state.operational = true;
        ctx.body = { status: 'ok' };
      },
    },
    {
      method: 'GET',
      path: '/readyz',
      async handle(ctx) {
        ctx.state.operational = true;
        const report = await checkReadiness(clients, urls);
        const ready = report.ready && !draining();
        ctx.status = ready ? 200 : 503;
        ctx.body = { status: ready ? 'ready' : 'not_ready', services: report.services };
      },
    },
  ];
}
