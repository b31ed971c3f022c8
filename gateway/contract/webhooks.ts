/** What PUT /v1/webhooks/endpoint accepts (routes/webhooks.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { allowedNamesOf, maxItemsOf } from '../proto-rules';
import { endpointStatuses, webhookEvents } from '../public-enums';
import { oneOfNames, requestBody, type Validated } from '../contract-schema';
import { PutEndpointRequestSchema } from '../../gen/psync/notifications/v1/notifications_pb';

/** The longest webhook URL accepted. */
const MAX_URL_LENGTH = 2048;

/** The body of PUT /v1/webhooks/endpoint. */
export const WebhookEndpointBody = requestBody(
  'webhook-endpoint',
  'Webhook endpoint',
  'Body of PUT /v1/webhooks/endpoint. A refused URL (not https, not a URI, wrong port, IP literal; the notifications service adds the address checks) is one generic violation {field url, code invalid}. events: at most 16 entries; repeats are allowed and count once; an empty array pauses delivery.',
  {
    url: Type.String({ maxLength: MAX_URL_LENGTH, format: 'uri', pattern: '^https://', 'x-error-code': 'invalid' }),
    events: Type.Array(oneOfNames(allowedNamesOf(PutEndpointRequestSchema, 'events', webhookEvents, 'items')), {
      maxItems: maxItemsOf(PutEndpointRequestSchema, 'events'),
    }),
  },
);

export type WebhookEndpointInput = Validated<typeof WebhookEndpointBody>;

export const WebhookEndpointState = Type.Object({
  url: WebhookEndpointBody.properties.url,
  events: WebhookEndpointBody.properties.events,
  status: oneOfNames(endpointStatuses.names, {
    description:
      '`active` once the challenge was echoed; `pending_verification` when it was not (call again to retry); `suspended` after a run of abandoned deliveries, left by a registration whose challenge is echoed.',
  }),
  signing_secret: Type.Optional(
    Type.String({ description: 'Present only on the call that first issues it. The HMAC key of `X-Signature` is its UTF-8 bytes exactly as returned.' }),
  ),
});
export type WebhookEndpointStateJson = Static<typeof WebhookEndpointState>;
