/**
 * What the gateway remembers about one request while it travels through the
 * middleware: its id, the matched route, the caller once known, and the rate-limit
 * state to report. Kept on `ctx.state` so the error mapper (outermost) can render
 * headers and the access log line whatever happened further in.
 */
import type { ParameterizedContext } from 'koa';
import type { Environment } from '../gen/psync/common/v1/environment_pb';
import type { RateLimitView } from './rate-limit';

/** The caller of a contract request, from IdentityService.Authorize. */
export interface Principal {
  keyId: string;
  workspaceId: string;
  environment: Environment;
}

export interface GatewayState {
  /** UUID of this request: `X-Request-Id` and the problem `instance`. */
  requestId: string;
  /** When the request arrived (performance.now()). */
  startedAt: number;
  /** Route template for logs, e.g. "PUT /v1/blocks/:external_uid"; undefined when none matched. */
  route?: string;
  /** The matched route's path template, e.g. "/v1/blocks/:external_uid" (the `http.route` of telemetry); set with `route`. */
  routePath?: string;
  /** The API key behind the request, once known (safe to log; never the token). */
  keyId?: string;
  /** The token's workspace, once a contract route authorised it: the request is then recorded (request-log.ts). */
  workspaceId?: string;
  /** When the request arrived (Date.now()), for the request log. */
  receivedAt?: number;
  /** The route's path identifiers that passed validation, decoded (request-log.ts). */
  pathParams?: Record<string, string>;
  /** The problem answered, once sent (request-log.ts): its code and `errors[]` pairs. */
  problem?: { code: string; errors: readonly { field: string; code: string }[] };
  /** Rate-limit state to send; when undefined the defaults of `quota` are sent. */
  rateLimit?: RateLimitView;
  /** Which quota the defaults describe: the contract quota or the token endpoint's ceiling. */
  quota?: 'contract' | 'token';
  /** Operational endpoints (/healthz, /readyz) carry no rate-limit headers and log at debug. */
  operational?: boolean;
}

export type GatewayContext = ParameterizedContext<GatewayState>;
