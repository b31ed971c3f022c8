/** The examples of the shared responses (components-responses.ts), by response name. */
import type { NamedExamples } from './operation';
import { INVALID_API_KEY, TOKEN_CEILING_REACHED, TOKEN_NOT_CONFIGURED, TOO_MANY_FAILURES } from './token';

export const RESPONSE_EXAMPLES = {
  Unauthorized: { missing_token: { summary: 'No, a malformed or an expired access token, or a revoked key' } },
  WorkspaceScopeMismatch: { scope_mismatch: { summary: 'The token does not grant access to the workspace' } },
  PropertyNotFound: { unknown_listing: { summary: "A listing that does not exist or is another partner's" } },
  DeletionRequestNotFound: {
    unknown_event: { summary: "An `event_id` that is unknown or another partner's", 'x-request': { path: { event_id: '6f1c1f57-3a39-4f0a-9a8e-0a4f2e2d7c11' }, body: {} } },
  },
  Conflict: { colliding: { summary: 'Two nights of the range are held by a marketplace guest', conflicts: ['2030-08-02', '2030-08-03'] } },
  RateLimited: { quota_used_up: { summary: "The key's quota is used up for this window" } },
  InternalError: { internal_error: { summary: "A fault on the service's side" } },
  NotEnabled: { production: { summary: "Any valid request with a production workspace's token" } },
  ServiceUnavailable: { unavailable: { summary: 'A needed capability is not available' } },
  TokenRefused: { invalid_key: { summary: 'Unknown, revoked, wrong or missing key', value: INVALID_API_KEY } },
  TokenRateLimited: {
    too_many_exchanges: { summary: "The key's ceiling of exchanges is used up", value: TOKEN_CEILING_REACHED },
    too_many_failures: { summary: 'Too many failed exchanges', value: TOO_MANY_FAILURES },
  },
  TokenNotConfigured: { not_configured: { summary: 'No tokens are issued', value: TOKEN_NOT_CONFIGURED } },
  DeliveryNotFound: {
    unknown_delivery: { summary: "An `event_id` that is unknown or another partner's", 'x-request': { path: { event_id: '6f1c1f57-3a39-4f0a-9a8e-0a4f2e2d7c11' } } },
  },
  WebhookEndpointNotFound: { none_registered: { summary: 'No endpoint registered in this workspace' } },
  WebhookEndpointNotActive: {
    endpoint_not_active: {
      summary: 'The endpoint is paused (`events: []`)',
      'x-request': { body: { event_type: 'booking.confirmed', listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j' } },
    },
  },
  NotFound: { unknown_path: { summary: 'A path no endpoint has (`GET /v1/bookings`)' } },
  MethodNotAllowed: { other_method: { summary: '`GET /v1/blocks/{external_uid}`: the path answers `PUT` and `DELETE` only' } },
  EndpointCheckNotFound: { unknown: { summary: "Unknown, or another workspace's" } },
} satisfies Record<string, NamedExamples>;
