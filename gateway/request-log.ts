/**
 * What the request log keeps of one answered contract request (docs/operations.md
 * "Request log"): time, method, route template (`/v1/blocks/{external_uid}`), the
 * route's own path identifiers that passed validation, status, problem `code`, the
 * `errors[]` field/code pairs, the request id (`instance`, `X-Request-Id`), duration,
 * the key id. Never a body, a query value, a header, a token, a key or an address.
 * What a partner chose (a path identifier, an unknown property's name) is made
 * storable, scrubbed of secrets and reduced to the contract's names first
 * (request-log-sanitiser.ts).
 *
 * Only requests with a workspace are recorded: those a contract route authorised
 * (auth.ts sets the workspace). A 401 has none and is not recorded; neither are the
 * token endpoint, 404/405 answers for paths no route has, /healthz, /readyz and the
 * OpenAPI document.
 */
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import type { GatewayContext } from './request-context';
import { sanitiseRecord } from './request-log-sanitiser';
import type { RequestRecordInit } from './request-recorder';

/** `PUT /v1/blocks/:external_uid` → `/v1/blocks/{external_uid}` (the OpenAPI form). */
export function routeTemplate(label: string): string {
  const path = label.slice(label.indexOf(' ') + 1);
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** The record of an answered request, or undefined when it is not recorded. */
export function requestRecord(ctx: GatewayContext, now = performance.now()): RequestRecordInit | undefined {
  const s = ctx.state;
  if (!s.workspaceId || !s.route || s.route.startsWith('* ')) return undefined;
  return sanitiseRecord({
    requestId: s.requestId,
    workspaceId: s.workspaceId,
    keyId: s.keyId ?? '',
    receivedAt: timestampFromMs(s.receivedAt ?? Date.now()),
    method: ctx.method,
    route: routeTemplate(s.route),
    pathParams: s.pathParams ?? {},
    status: ctx.status,
    code: s.problem?.code ?? '',
    errors: (s.problem?.errors ?? []).map((e) => ({ field: e.field, code: e.code })),
    durationMs: Math.max(0, Math.round(now - s.startedAt)),
  });
}
