/**
 * The public gateway's Koa application: the HTTP/JSON contract of
 * partner-sync-api-v1 under /v1, translated into internal Connect calls, plus the
 * operational endpoints /healthz (liveness) and /readyz (readiness) outside /v1.
 *
 * Middleware, outermost first:
 *   1. error-mapper.ts — request id, problem documents for every failure,
 *      rate-limit headers, the access log line;
 *   2. contract-router.ts, the one router — the contract's routes (routes/*.ts), each
 *      running in the contract frame of contract-route.ts, the OpenAPI document, the
 *      operational endpoints (routes/operational.ts) and the sandbox console's files
 *      (routes/console.ts); 404/405 for everything else.
 */
import Koa from 'koa';
import { TokenFailureThrottle } from './token-failures';
import type { GatewayDeps } from '../services/kit/runtime';
import { peekRateLimit } from './auth';
import type { ContractDeps } from './contract-route';
import { ConsoleFiles } from './console';
import { contractRouter } from './contract-router';
import { errorMapper } from './error-mapper';
import type { GatewayContext, GatewayState } from './request-context';
import { requestRecord } from './request-log';
import type { RequestRecorder } from './request-recorder';
import { contractRoutes } from './routes';
import { consoleRoutes } from './routes/console';
import { openApiRoutes } from './routes/openapi';
import { operationalRoutes } from './routes/operational';
import { upstreams } from './upstream';

export type { GatewayDeps };

/**
 * Builds the Koa app; `draining()` turns /readyz to 503 during shutdown. With a
 * `recorder`, every contract request with a workspace is recorded (request-log.ts).
 * `consoleFiles` are the sandbox console's files to serve; by default those built into
 * console/dist, read now (console.ts).
 */
export function createGatewayApp(deps: GatewayDeps, draining: () => boolean, recorder?: RequestRecorder, consoleFiles?: ConsoleFiles): Koa<GatewayState> {
  // Behind TRUST_PROXY_HOPS reverse proxies, ctx.ip is the client they saw (the last
  // X-Forwarded-For entries, which those proxies append); otherwise the socket's peer.
  const hops = deps.config.trustProxyHops;
  const app = new Koa<GatewayState>({ proxy: hops > 0, maxIpsCount: hops });
  const log = deps.log;
  const contractQuota = deps.config.rateLimitPerHour;
  const tokenQuota = deps.config.tokenRateLimitPerHour;
  const services = upstreams(deps.clients, deps.urls);
  const consoleServed = consoleFiles ?? new ConsoleFiles(undefined, log);
  const contract: ContractDeps = { identity: services.identity, contractQuota, log };
  const tokenFailures = new TokenFailureThrottle({
    perAddress: deps.config.tokenFailuresPerAddress,
    perKey: deps.config.tokenFailuresPerKey,
    windowSeconds: deps.config.tokenFailureWindowSeconds,
  });

  // Failures are answered by the error mapper; what reaches Koa is a socket-level problem.
  app.on('error', (err: unknown) => log.debug({ err }, 'response stream error'));

  const onAnswered = recorder
    ? (ctx: GatewayContext) => {
        const rec = requestRecord(ctx);
        if (rec) recorder.record(rec);
      }
    : undefined;
  app.use(errorMapper({ log, docsUrl: deps.config.docsUrl, contractQuota, tokenQuota, onAnswered }));

  app.use(
    contractRouter(
      [
        ...operationalRoutes(deps.clients, deps.urls, draining),
        ...contractRoutes({ upstreams: services, contract, tokenQuota, tokenFailures }),
        ...openApiRoutes(),
        ...consoleRoutes(consoleServed),
      ],
      { peek: (ctx) => peekRateLimit(ctx, contract) },
    ),
  );
  return app;
}
