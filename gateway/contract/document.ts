/** The OpenAPI document's top (openapi, info, servers, security, tags in document order) and its security schemes. */
import { API_VERSION, BODY_LIMIT_KIB, CONTRACT_QUOTA, DOCS_URL, SPEC_DATE, TOKEN_QUOTA, TOKEN_TTL_MINUTES } from './document-values';
import { RATE_WINDOW_SECONDS } from '../../services/kit/base';
import { problemRef } from './operation';

export const DOCUMENT = {
  openapi: '3.1.0',
  info: {
    title: 'Partner Synchronisation API',
    version: `${API_VERSION} (${SPEC_DATE})`,
    summary: `partner-sync-api-${API_VERSION}, specification dated ${SPEC_DATE}`,
    description: [
      "A two-way synchronisation between a channel partner's platform and the booking marketplace: partners push properties and calendar blocks, register one webhook endpoint and receive signed deliveries.",
      '',
      `Specification \`partner-sync-api-${API_VERSION}\`, dated ${SPEC_DATE}; every path is relative to \`{base_url}\`, which ends with \`/${API_VERSION}\`. Published schemas are frozen; later changes are additive, so clients must tolerate new optional fields and new error codes.`,
      '',
      '**Authentication.** Exchange the API key at `POST /token` (`Authorization: Bearer <API_KEY>`), then send `Authorization: Bearer <ACCESS_TOKEN>` on every other call; the header is the only place read.',
      '',
      '**Order of checks.** Authentication (`401`), rate limit (`429`, not counted), authorisation (`403`), validation (`400`), then `501 not_enabled` (production workspaces, blocks addressed by `provider_id`): a `501` means the request was valid.',
      '',
      `**Limits.** The limits are those of the deployment, stated on every response by the \`RateLimit-*\` headers: by default ${CONTRACT_QUOTA} contract requests per API key per window of ${RATE_WINDOW_SECONDS} s, and ${TOKEN_QUOTA} token exchanges per key per window at \`POST /token\` (not counted toward the contract quota). An access token lives \`expires_in\` seconds (${TOKEN_TTL_MINUTES} minutes by default, never more than one hour). Request bodies up to ${BODY_LIMIT_KIB} KiB.`,
      '',
      "**Examples.** Every operation has request and response examples. A request example and the response example of the same name belong together; an error example whose request cannot be a valid request example carries it in `x-request` (`path`, `query`, `body`). Identifiers in the examples (`listing_id`, `event_id`, URLs) are placeholders for the partner's own.",
      '',
      "**Errors.** Every error except a token endpoint refusal is an `application/problem+json` document. A path no endpoint has is `404 not_found`; a known path with another method is `405 method_not_allowed` with `Allow` (the path's `x-other-methods.allow`).",
      '',
      '**Sandbox tools.** `POST /sandbox/events` sends a signed test event (`"test": true`) to the webhook endpoint; `GET /webhooks/deliveries` is the delivery log with every attempt, and `POST /webhooks/deliveries/{event_id}/resend` sends a delivery again. They are additive, counted toward the quota like every call, and answer `501` for production workspaces.',
    ].join('\n'),
    license: { name: 'Proprietary', url: `${DOCS_URL}/terms` },
    contact: { name: 'Partner Sync integration support', url: DOCS_URL },
    'x-spec-date': SPEC_DATE,
  },
  servers: [{ url: `/${API_VERSION}`, description: 'The gateway serving this document (`{base_url}` ends with `/v1`).' }],
  security: [{ accessToken: [] }],
  tags: [
    { name: 'Authentication', description: 'Exchanging an API key for an access token.' },
    { name: 'Properties', description: 'Properties the partner manages, pushed as a whole.' },
    { name: 'Blocks', description: "Calendar blocks: nights already taken on the partner's platform; and a listing's nights read back (free, blocked, booked, held)." },
    { name: 'Webhooks', description: 'The one webhook endpoint of a workspace and the signed deliveries sent to it.' },
    { name: 'Deletion requests', description: 'Confirming that a `user.erased` request was carried out.' },
    { name: 'Events', description: 'The events feed: every event of the workspace, delivered or not, to recover what the webhook endpoint missed.' },
    {
      name: 'Sandbox tools',
      description:
        'For building and checking a webhook receiver: signed test events, the delivery log with each attempt, and a resend. Sandbox workspaces only; production workspaces get `501` after validation, as everywhere.',
    },
    {
      name: 'Request log',
      description:
        "Finding a request by the `instance` of its answer: the metadata of the workspace's recent contract requests, never their content. Sandbox workspaces only; production workspaces get `501` after validation, as everywhere.",
    },
    { name: 'Meta', description: 'This document.' },
  ],
  'x-unknown-path': {
    description:
      "A request to a path that is not in `paths` (under the server URL or anywhere else, except the gateway's own pages outside the contract: `/healthz`, `/readyz` and the sandbox console under `/console/`) is answered `404 not_found`, whatever its method.",
    response: problemRef('not_found'),
  },
};

export const SECURITY_SCHEMES = {
  accessToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'pst_<payload>.<mac>',
    description: `An access token from \`POST /token\`, valid \`expires_in\` seconds (${TOKEN_TTL_MINUTES} minutes by default, never more than one hour).`,
  },
  apiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'psk_<key_id>_<secret>', description: 'The long-lived API key of one workspace. It opens only `POST /token`.' },
};
