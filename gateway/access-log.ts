/**
 * One structured log line per request: method, route template (never the raw URL,
 * whose query string could carry anything a client put there), status, duration, the
 * `instance` id the partner sees, the key id once known, and the trace id. Never a token or a body.
 */
import { performance } from 'node:perf_hooks';
import { logEvent, type Logger } from '../services/kit/base';
import { activeTraceId } from '../services/kit/telemetry';
import { instanceUrn } from './problems';
import type { GatewayContext } from './request-context';

export function logAccess(log: Logger, ctx: GatewayContext): void {
  const s = ctx.state;
  const line = {
    event: logEvent('http.request'),
    method: ctx.method,
    route: s.route ?? null,
    status: ctx.status,
    duration_ms: Math.round((performance.now() - s.startedAt) * 100) / 100,
    instance: instanceUrn(s.requestId),
    request_id: s.requestId,
    key_id: s.keyId ?? null,
    trace_id: activeTraceId() ?? null,
  };
  if (s.operational) log.debug(line, 'request');
  else log.info(line, 'request');
}
