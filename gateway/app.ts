/**
 * The public gateway's Koa application: the HTTP/JSON contract of
 * partner-sync-api-v1 under /v1, translated into internal Connect calls, plus the
 * operational endpoints /healthz (liveness) and /readyz (readiness) outside /v1.
 */
import Koa from 'koa';
import Router from '@koa/router';
import type { GatewayDeps } from '../services/kit/run-process';
import { checkReadiness } from './readiness';

export type { GatewayDeps };

/** Builds the Koa app; `draining()` turns /readyz to 503 during shutdown. */
export function createGatewayApp(deps: GatewayDeps, draining: () => boolean): Koa {
  const app = new Koa({ proxy: false });
  const ops = new Router();
  ops.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  ops.get('/readyz', async (ctx) => {
    const report = await checkReadiness(deps.clients, deps.urls);
    const ready = report.ready && !draining();
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'not_ready', services: report.services };
  });
  app.use(ops.routes());
  return app;
}
