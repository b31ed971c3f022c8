/** The operations of the Webhooks tag of the OpenAPI document (openapi.ts), with their examples (webhooks-examples.ts). */
import { type OperationExamples, type Part, type TagOperations, answer, curl, otherMethods, problem, problems, schemaRef, withExamples } from './operation';
import { VALIDATION_FAILED_PARAMETERS, VALIDATION_FAILED_REQUEST } from './components-responses';
import {
  getWebhookEndpointExamples,
  putWebhookEndpointExamples,
  bookingCancelledWebhookExamples,
  bookingConfirmedWebhookExamples,
  challengeWebhookExamples,
  userErasedWebhookExamples,
} from './webhooks-examples';

const NOT_VERIFIED = 'Not verified: the endpoint stays `pending_verification`.';

/** The signature headers of every delivery, the challenge's included. */
const SIGNATURE_HEADERS = [
  {
    name: 'X-Signature',
    in: 'header',
    required: true,
    description:
      'Lowercase hex HMAC-SHA256 keyed with the UTF-8 bytes of the signing secret over `v1:` + `X-Signature-Timestamp` + `:` + the raw body. Verify over the raw body before parsing, in constant time.',
    schema: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    example: '9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c0b2d4f6e8a1c3e5b7d9f0a2c4e6b8d1f',
  },
  {
    name: 'X-Signature-Timestamp',
    in: 'header',
    required: true,
    description: 'Unix seconds, covered by the signature. Reject a timestamp more than five minutes old before comparing.',
    schema: { type: 'integer', minimum: 0 },
    example: 1789372803,
  },
  {
    name: 'X-Signature-Previous',
    in: 'header',
    required: false,
    description: 'The same body signed with the previous secret, only while a rotation overlap is open (its absence is normal). During a rotation accept either signature.',
    schema: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    example: '3a5c7e9b1d2f4a6c8e0b2d4f6a8c1e3b5d7f9a0c2e4b6d8f1a3c5e7b9d0f2a4c',
  },
];

/** The webhook of one event kind: a signed delivery of body `schema`, acknowledged by any 2xx. */
function delivery(operationId: string, summary: string, schema: string, examples: OperationExamples): Part {
  return {
    post: withExamples(
      {
        operationId,
        summary,
        description:
          "A signed HTTPS POST to the registered endpoint (port 443 or 8443), only once it is `active`, and only for subscribed kinds. Anything but a 2xx is retried with exponential backoff (about a day in all); after the last attempt the delivery is abandoned and surfaced to the service's operators, who can replay it with the same `event_id`, and `POST /webhooks/deliveries/{event_id}/resend` sends it again. Redirects are never followed.",
        tags: ['Webhooks'],
        security: [],
        parameters: SIGNATURE_HEADERS,
        requestBody: { required: true, content: { 'application/json': { schema: schemaRef(schema) } } },
        responses: {
          '2XX': { description: 'Any 2xx acknowledges the delivery (also for a duplicate `event_id`).' },
          '4XX': { description: 'Not acknowledged: retried later.' },
          '5XX': { description: 'Not acknowledged: retried later.' },
        },
      },
      examples,
    ),
  };
}

export const WEBHOOKS_OPERATIONS: TagOperations = {
  paths: {
    '/webhooks/endpoint': {
      'x-other-methods': otherMethods('PUT, GET, HEAD'),
      get: withExamples(
        {
          operationId: 'getWebhookEndpoint',
          summary: 'Read the webhook endpoint back',
          description: [
            "The workspace's one endpoint as last registered: `url`, `events` (empty: delivery paused) and `status`. The signing secret is never shown again: it is returned only by the `PUT` that first issues it.",
            '',
            'No endpoint registered yet: `404 webhook_endpoint_not_found`.',
          ].join('\n'),
          tags: ['Webhooks'],
          'x-codeSamples': curl('GET', '/webhooks/endpoint'),
          responses: {
            '200': answer('The registered endpoint: `url`, `events` and `status`; never the signing secret.', 'WebhookEndpointState'),
            ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_PARAMETERS), '404': 'webhook_endpoint_not_found' }),
          },
        },
        getWebhookEndpointExamples,
      ),
      put: withExamples(
        {
          operationId: 'putWebhookEndpoint',
          summary: 'Register the webhook endpoint',
          description:
            'One endpoint per workspace. Every call POSTs a signed `endpoint.challenge` to the URL during the call: echoed within five seconds → `active`, else `pending_verification`. Re-registration replaces the URL and event list and keeps the secret; `events: []` pauses delivery. A refused URL is one generic violation `{url, invalid}` that does not say which check failed.',
          tags: ['Webhooks'],
          'x-codeSamples': curl('PUT', '/webhooks/endpoint'),
          requestBody: { required: true, description: 'The endpoint and the subscribed kinds.', content: { 'application/json': { schema: schemaRef('WebhookEndpoint') } } },
          responses: {
            '200': answer('Registered; `signing_secret` on the first registration only.', 'WebhookEndpointState'),
            ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_REQUEST) }),
          },
        },
        putWebhookEndpointExamples,
      ),
    },
  },
  webhooks: {
    'endpoint.challenge': {
      post: withExamples(
        {
          operationId: 'webhook_endpoint_challenge',
          summary: 'Endpoint verification challenge',
          description: 'A signed HTTPS POST to the registered endpoint (port 443 or 8443), only once it is `active`.',
          tags: ['Webhooks'],
          security: [],
          parameters: SIGNATURE_HEADERS,
          requestBody: { required: true, content: { 'application/json': { schema: schemaRef('ChallengeEvent') } } },
          responses: {
            '2XX': {
              description: 'Verified: a 2xx answer with the JSON `{"challenge": "<same string>"}` within five seconds. Anything else leaves the endpoint `pending_verification`.',
              content: { 'application/json': { schema: schemaRef('ChallengeAnswer') } },
            },
            '4XX': { description: NOT_VERIFIED },
            '5XX': { description: NOT_VERIFIED },
          },
        },
        challengeWebhookExamples,
      ),
    },
    'booking.confirmed': delivery('webhook_booking_confirmed', 'A booking was confirmed', 'BookingConfirmedEvent', bookingConfirmedWebhookExamples),
    'booking.cancelled': delivery('webhook_booking_cancelled', 'A booking was cancelled', 'BookingCancelledEvent', bookingCancelledWebhookExamples),
    'user.erased': delivery('webhook_user_erased', 'A guest erased their account', 'UserErasedEvent', userErasedWebhookExamples),
  },
};
