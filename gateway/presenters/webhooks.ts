/**
 * The webhook endpoint: public JSON of PUT /v1/webhooks/endpoint ↔ notifications
 * protobuf (spec "Webhook endpoint").
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { PutEndpointRequestSchema, PutEndpointResponse } from '../../gen/psync/notifications/v1/notifications_pb';
import type { WebhookEndpointInput as WebhookEndpointBody } from '../contract/webhooks';
import { endpointStatuses, webhookEvents } from '../public-enums';
import type { WebhookEndpointStateJson as EndpointJson } from '../contract/webhooks';

export { endpointStatuses, webhookEvents } from '../public-enums';

/** The validated body as a PutEndpoint request; a repeated kind counts once (first-seen order). */
export function putEndpointRequest(workspaceId: string, body: WebhookEndpointBody): MessageInitShape<typeof PutEndpointRequestSchema> {
  return {
    workspaceId,
    url: body.url,
    events: [...new Set(body.events)].map((e) => webhookEvents.value(e)),
  };
}

/**
 * PutEndpointResponse, or the Endpoint of GetEndpointResponse (GET /v1/webhooks/endpoint,
 * which has no secret to show: the secret is shown only by the PUT that first issues it).
 */
export function presentEndpoint(res: Pick<PutEndpointResponse, 'url' | 'events' | 'status'> & { signingSecret?: string }): EndpointJson {
  const out: EndpointJson = {
    url: res.url,
    events: res.events.map((e) => webhookEvents.name(e)),
    status: endpointStatuses.name(res.status),
  };
  if (res.signingSecret !== undefined && res.signingSecret !== '') out.signing_secret = res.signingSecret;
  return out;
}
