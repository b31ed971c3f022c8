/**
 * The gateway's first middleware: every request gets an id, every failure below
 * becomes a problem document, every response under /v1 gets its rate-limit headers,
 * and every request gets one access log line (docs/decisions.md "Errors have one path").
 * Every answer that does not state its own caching gets `Cache-Control: no-store`
 * (docs/decisions.md "No answer is cached"): the only ones that do are the OpenAPI
 * document and the console's files; a problem document always gets `no-store`.
 * It also opens the request's SERVER span (a new trace: a partner's `traceparent` is
 * not trusted) — every internal call below joins it — and records
 * `http.server.request.duration` (services/kit/telemetry/metrics.ts recordHttpRequest, with the
 * old psync_http_* names while they are kept) and, on a 429,
 * psync_rate_limit_refusals_total. Span and metric follow the HTTP semantic
 * conventions. /healthz and /readyz are neither traced nor counted.
 *
 * - A ProblemError (thrown on purpose) keeps its message and extras.
 * - A ConnectError from an internal service is mapped by its ErrorDetail reason and
 *   Code (connect-errors.ts); a backend that cannot be reached is `503`.
 * - Anything else is `500 internal_error` with a generic detail; the cause goes to
 *   the log only, tagged with the `instance` id the partner sees.
 * Never a dropped connection: whatever was thrown, a response is written (unless the
 * client is already gone or the headers already left).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Middleware, Next } from 'koa';
import { ConnectError } from '@connectrpc/connect';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { recordHttpRequest, recordRateLimitRefusal } from '../services/kit/telemetry';
import { inSpan } from '../services/kit/telemetry';
import { withRequestId } from '../services/kit/base';
import { logEvent, type Logger } from '../services/kit/base';
import { isNetworkError, problemFromConnectError } from './connect-errors';
import { logAccess } from './access-log';
import { instanceUrn, PROBLEM_CONTENT_TYPE, problemDocument, ProblemError } from './problems';
import { defaultView, rateLimitHeaders } from './rate-limit';
import type { GatewayContext, GatewayState } from './request-context';

export interface ErrorMapperOptions {
  log: Logger;
  /** Base of problem `type` URIs (DOCS_URL). */
  docsUrl: string;
  /** RATE_LIMIT_PER_HOUR: the contract quota shown when no key is known. */
  contractQuota: number;
  /** TOKEN_RATE_LIMIT_PER_HOUR: the token endpoint's ceiling. */
  tokenQuota: number;
  /** Called once per answered request, after the response is settled (the request log). */
  onAnswered?: (ctx: GatewayContext) => void;
}

/** Headers a problem response keeps from what was set before the failure. */
const KEPT_HEADERS = new Set(['x-request-id', 'connection']);

/** Turns any thrown value into the ProblemError to answer, logging what needs logging. */
export function toProblem(err: unknown, log: Logger, state: GatewayState): ProblemError {
  const instance = instanceUrn(state.requestId);
  let problem: ProblemError | undefined;
  if (err instanceof ProblemError) problem = err;
  else if (err instanceof ConnectError) problem = problemFromConnectError(err);
  else if (isNetworkError(err)) problem = new ProblemError('service_unavailable', { cause: err });

  if (!problem) {
    log.error({ event: logEvent('http.request.failed'), err, instance, route: state.route }, 'internal error');
    return new ProblemError('internal_error');
  }
  if (problem.status >= 500 && problem.cause !== undefined) {
    const level = problem.code === 'not_enabled' ? 'info' : 'warn';
    log[level]({ err: problem.cause, instance, route: state.route, code: problem.code }, `answered ${problem.code}`);
  }
  return problem;
}

/** Writes `problem` as the response of `ctx`. */
export function sendProblem(ctx: GatewayContext, problem: ProblemError, docsUrl: string): void {
  for (const name of Object.keys(ctx.response.headers)) if (!KEPT_HEADERS.has(name)) ctx.remove(name);
  for (const [name, value] of Object.entries(problem.headers)) ctx.set(name, value);
  ctx.status = problem.status;
  ctx.state.problem = { code: problem.code, errors: problem.errors ?? [] };
  ctx.type = PROBLEM_CONTENT_TYPE;
  ctx.body = JSON.stringify(problemDocument(problem, docsUrl, ctx.state.requestId));
}

const OPERATIONAL_PATHS = new Set(['/healthz', '/readyz']);

/**
 * The caching of an answer whose route did not choose its own (RFC 9111 §5.2.2.5):
 * API answers carry access tokens, signing secrets and guests' names, which must stay
 * out of a browser's disk cache and any shared cache (RFC 6749 §5.1 asks it of the
 * token response).
 */
export const DEFAULT_CACHE_CONTROL = 'no-store';

/** The HTTP methods the semantic conventions know; any other is `_OTHER` (bounded cardinality). */
const KNOWN_METHODS = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE', 'QUERY']);

function httpMethod(method: string): string {
  return KNOWN_METHODS.has(method) ? method : '_OTHER';
}

/** The matched route's label and path template (contract-router.ts), for the metrics. */
function routeOf(state: GatewayState): { label: string; template: string } | undefined {
  return state.route !== undefined && state.routePath !== undefined ? { label: state.route, template: state.routePath } : undefined;
}

export function errorMapper(opts: ErrorMapperOptions): Middleware<GatewayState> {
  const handle = answer(opts);
  return async function errorMapperMiddleware(ctx: GatewayContext, next: Next) {
    if (OPERATIONAL_PATHS.has(ctx.path)) return handle(ctx, next);
    const method = httpMethod(ctx.method);
    const attributes = { 'http.request.method': method, 'url.scheme': ctx.protocol, 'url.path': ctx.path };
    await inSpan(method === '_OTHER' ? 'HTTP' : method, { kind: SpanKind.SERVER, parent: ROOT_CONTEXT, attributes }, async (span) => {
      await handle(ctx, next);
      // The conventions' span name: `{method} {route template}`, the method alone when no route matched.
      const { route, routePath } = ctx.state;
      if (route !== undefined && routePath !== undefined) {
        span.updateName(route);
        span.setAttribute('http.route', routePath);
      }
      span.setAttribute('http.response.status_code', ctx.status);
      span.setAttribute('psync.request_id', ctx.state.requestId);
      if (ctx.status >= 500) {
        span.setAttribute('error.type', String(ctx.status));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
    });
  };
}

function answer(opts: ErrorMapperOptions): (ctx: GatewayContext, next: Next) => Promise<void> {
  return async (ctx: GatewayContext, next: Next) => {
    ctx.state.requestId = randomUUID();
    ctx.state.startedAt = performance.now();
    ctx.state.receivedAt = Date.now();
    ctx.set('X-Request-Id', ctx.state.requestId);
    try {
      // Internal calls below carry the id as `x-request-id`: services log it (services/kit/rpc/errors.ts).
      await withRequestId(ctx.state.requestId, next);
      // Nothing answered (cannot happen with the contract router last, but never Koa's text 404).
      if (ctx.body == null && ctx.status === 404 && !ctx.state.operational) {
        sendProblem(ctx, new ProblemError('not_found'), opts.docsUrl);
      }
    } catch (err) {
      if (ctx.headerSent || !ctx.writable) {
        opts.log.warn({ err, instance: instanceUrn(ctx.state.requestId) }, 'failure after the response started');
      } else {
        sendProblem(ctx, toProblem(err, opts.log, ctx.state), opts.docsUrl);
      }
    } finally {
      if (!ctx.headerSent && !ctx.response.get('Cache-Control')) ctx.set('Cache-Control', DEFAULT_CACHE_CONTROL);
      if (!ctx.state.operational && !ctx.headerSent) {
        const view = ctx.state.rateLimit ?? defaultView(ctx.state.quota === 'token' ? opts.tokenQuota : opts.contractQuota);
        ctx.set(rateLimitHeaders(view));
      }
      logAccess(opts.log, ctx);
      if (!ctx.state.operational) {
        recordHttpRequest(httpMethod(ctx.method), routeOf(ctx.state), ctx.status, ctx.protocol, (performance.now() - ctx.state.startedAt) / 1000);
        if (ctx.status === 429) recordRateLimitRefusal();
        opts.onAnswered?.(ctx);
      }
    }
  };
}
