/**
 * PUT /v1/webhooks/endpoint → NotificationsService.PutEndpoint, 200 `{url, events,
 * status, signing_secret?}` (spec "PUT /webhooks/endpoint"). GET /v1/webhooks/endpoint →
 * NotificationsService.GetEndpoint, 200 `{url, events, status}`, never the secret; no
 * endpoint registered → 404 `webhook_endpoint_not_found` (docs/contract-gaps.md).
 *
 * The gateway checks what needs no look-up — the egress guard's own URL rules
 * (services/kit/egress/egress.ts `checkUrl` with WEBHOOK_URL_RULES: https, port 443 or 8443,
 * no credentials, a DNS name rather than an IP literal) — so a production workspace
 * gets the same 400 as a sandbox one; the notifications service adds the address
 * checks. Every refusal of the URL is the same `{field: "url", code: "invalid"}`: it
 * never says which check failed.
 */
import { checkUrl, WEBHOOK_URL_RULES } from '../../services/kit/egress';
import { contractRoute } from '../contract-route';
import { sameNames } from '../internal-fields';
import type { Route } from '../contract-router';
import type { Violation } from '../problems';
import { presentEndpoint, putEndpointRequest } from '../presenters/webhooks';
import { sendJson } from '../respond';
import { validator } from '../validate';
import type { RouteDeps } from './deps';
import { WebhookEndpointBody } from '../contract/webhooks';
import { noPath, noQuery } from './shared-parameters';

const webhookEndpointBody = validator(WebhookEndpointBody);

/** True when `url` passes the look-up-free rules of webhook URLs. */
export function acceptableWebhookUrl(url: string): boolean {
  try {
    checkUrl(url, WEBHOOK_URL_RULES);
    return true;
  } catch {
    return false;
  }
}

/** The URL rules, when the schema found nothing wrong with `url` itself (one violation per field). */
export function webhookUrlViolations(body: Record<string, unknown>, found: readonly Violation[] = []): Violation[] {
  if (typeof body.url !== 'string' || found.some((v) => v.field === 'url')) return [];
  return acceptableWebhookUrl(body.url) ? [] : [{ field: 'url', code: 'invalid' }];
}

export function webhookRoutes(deps: RouteDeps): Route[] {
  return [
    contractRoute(
      {
        method: 'PUT',
        path: '/v1/webhooks/endpoint',
        params: noPath,
        query: noQuery,
        body: { schema: webhookEndpointBody, empty: 'required' },
        rules: webhookUrlViolations,
        internalFields: sameNames('url', 'events'),
        async call(ctx, { body }, caller) {
          const res = await deps.upstreams.notifications.putEndpoint(putEndpointRequest(caller.workspaceId, body));
          sendJson(ctx, 200, presentEndpoint(res));
        },
      },
      deps.contract,
    ),
    contractRoute(
      {
        method: 'GET',
        path: '/v1/webhooks/endpoint',
        params: noPath,
        query: noQuery,
        internalFields: {},
        async call(ctx, _input, caller) {
          const res = await deps.upstreams.notifications.getEndpoint({ workspaceId: caller.workspaceId });
          if (!res.endpoint) throw new Error('GetEndpointResponse.endpoint is missing');
          sendJson(ctx, 200, presentEndpoint(res.endpoint));
        },
      },
      deps.contract,
    ),
  ];
}
