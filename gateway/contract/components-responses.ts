/** The responses several operations share (`#/components/responses/<name>`); a problem's is named by its code in PascalCase (operation.ts `problemRef`). */
import { type Part, answer, exampled, headerRef, headers, problem, schemaRef } from './operation';
import { RESPONSE_EXAMPLES } from './components-examples';
import { BODY_LIMIT_KIB, TOKEN_QUOTA } from './document-values';

/** The `400` of most operations: body, path and query checked together, the body's own failures (not JSON, its media type, its size) included. */
export const VALIDATION_FAILED_REQUEST = `\`validation_failed\`: the request does not match the schema — body, path and query parameters checked together, unknown fields and parameters included; also a body that is not JSON, has another content type than \`application/json\` or exceeds ${BODY_LIMIT_KIB} KiB (field \`body\`). \`errors\` names every violation, never a submitted value.`;

/** The `501` of every contract operation. */
export const NOT_ENABLED_DESCRIPTION =
  '`not_enabled`: the request was valid, but this contract is not enabled for the workspace (every production workspace; blocks addressed by `provider_id` in every environment). Nothing was written.';

/** The `400` of an operation that takes only path and query parameters. */
export const VALIDATION_FAILED_PARAMETERS =
  '`validation_failed`: the request does not match the schema — path and query parameters checked together, unknown query parameters included. `errors` names every violation, never a submitted value.';

export const RESPONSES: Record<string, Part> = {
  Unauthorized: exampled(
    problem('unauthorized', '`unauthorized`: a missing, malformed or expired access token, or a revoked key. Not counted.', { 'WWW-Authenticate': headerRef('WWW-Authenticate') }),
    RESPONSE_EXAMPLES.Unauthorized,
  ),
  WorkspaceScopeMismatch: exampled(
    problem('workspace_scope_mismatch', "`workspace_scope_mismatch`: the token's environment does not match the addressed workspace, or the workspace does not resolve."),
    RESPONSE_EXAMPLES.WorkspaceScopeMismatch,
  ),
  PropertyNotFound: exampled(
    problem('property_not_found', '`property_not_found`: the listing does not exist or belongs to another tenant (indistinguishable).'),
    RESPONSE_EXAMPLES.PropertyNotFound,
  ),
  DeletionRequestNotFound: exampled(
    problem(
      'deletion_request_not_found',
      "`deletion_request_not_found`: no deletion request with this `event_id` for this partner (unknown or another partner's: indistinguishable).",
    ),
    RESPONSE_EXAMPLES.DeletionRequestNotFound,
  ),
  Conflict: exampled(
    problem(
      'conflict',
      '`conflict`: nights collide with a marketplace booking or live hold; nothing was written, the whole range is refused. `conflicts` lists every colliding night.',
    ),
    RESPONSE_EXAMPLES.Conflict,
  ),
  RateLimited: exampled(
    problem(
      'rate_limited',
      "`rate_limited`: the key's quota for the current window is used up (see the `RateLimit-*` headers). This request was not counted. Wait `Retry-After` seconds.",
      { 'Retry-After': headerRef('Retry-After') },
    ),
    RESPONSE_EXAMPLES.RateLimited,
  ),
  InternalError: exampled(problem('internal_error', "`internal_error`: a fault on the service's side; idempotent requests may be retried."), RESPONSE_EXAMPLES.InternalError),
  NotEnabled: exampled(problem('not_enabled', NOT_ENABLED_DESCRIPTION), RESPONSE_EXAMPLES.NotEnabled),
  ServiceUnavailable: exampled(
    problem('service_unavailable', '`service_unavailable`: a capability this request needs is not available; nothing was written. Retry later.'),
    RESPONSE_EXAMPLES.ServiceUnavailable,
  ),
  TokenRefused: exampled(
    {
      description: 'An unknown, revoked, wrong or missing API key: one identical refusal.',
      headers: headers({ 'WWW-Authenticate': headerRef('WWW-Authenticate') }),
      content: { 'application/json': { schema: schemaRef('Message') } },
    },
    RESPONSE_EXAMPLES.TokenRefused,
  ),
  TokenRateLimited: exampled(
    {
      description: `Too many token exchanges for this API key in the current window (the token endpoint's own ceiling, by default ${TOKEN_QUOTA} per hour), or too many failed exchanges from this client address or for this key. Wait \`Retry-After\` seconds.`,
      headers: headers({ 'Retry-After': headerRef('Retry-After') }),
      content: { 'application/json': { schema: schemaRef('Message') } },
    },
    RESPONSE_EXAMPLES.TokenRateLimited,
  ),
  TokenNotConfigured: exampled(answer('The token endpoint is not available in this deployment. Nothing was issued.', 'Message'), RESPONSE_EXAMPLES.TokenNotConfigured),
  DeliveryNotFound: exampled(
    problem('delivery_not_found', "`delivery_not_found`: no delivery with this `event_id` in the workspace (unknown or another partner's: indistinguishable)."),
    RESPONSE_EXAMPLES.DeliveryNotFound,
  ),
  WebhookEndpointNotFound: exampled(
    problem('webhook_endpoint_not_found', '`webhook_endpoint_not_found`: this workspace has no webhook endpoint registered (register one with `PUT /webhooks/endpoint`).'),
    RESPONSE_EXAMPLES.WebhookEndpointNotFound,
  ),
  WebhookEndpointNotActive: exampled(
    problem(
      'webhook_endpoint_not_active',
      '`webhook_endpoint_not_active`: the workspace has no endpoint that is `active` and subscribed to this kind (none registered, its challenge not echoed, paused, suspended, or the kind not in `events`). Nothing was queued.',
    ),
    RESPONSE_EXAMPLES.WebhookEndpointNotActive,
  ),
  NotFound: exampled(
    problem(
      'not_found',
      "`not_found`: no endpoint of this API has this path, whatever the method (a path outside the document: `x-unknown-path`). Nothing was done. The rate-limit headers are those of the presented token's key, looked at and not counted (without a token, the full default quota).",
    ),
    RESPONSE_EXAMPLES.NotFound,
  ),
  MethodNotAllowed: exampled(
    problem(
      'method_not_allowed',
      "`method_not_allowed`: the path is one of this document's, the method is not one of its operations (any other method, `PATCH`, `OPTIONS` and `TRACE` included; `HEAD` is answered as `GET` where there is one). `Allow` lists the path's methods: its `x-other-methods.allow`. Nothing was done. The rate-limit headers are those of the presented token's key, looked at and not counted.",
      { Allow: headerRef('Allow') },
    ),
    RESPONSE_EXAMPLES.MethodNotAllowed,
  ),
  EndpointCheckNotFound: exampled(
    problem('endpoint_check_not_found', "`endpoint_check_not_found`: no receiver check run with this id in the workspace (unknown or another partner's: indistinguishable)."),
    RESPONSE_EXAMPLES.EndpointCheckNotFound,
  ),
};
