/** The response headers (`#/components/headers/<name>`); every answer carries those of operation.ts `headers()`. */
import type { Part } from './operation';
import { RATE_WINDOW_SECONDS } from '../../services/kit/base';
import { CONTRACT_QUOTA, CONTRACT_QUOTA_LESS_ONE, RATE_WINDOW_HALF, TOKEN_QUOTA } from './document-values';
import { WWW_AUTHENTICATE } from '../connect-errors';

export const HEADERS: Record<string, Part> = {
  'RateLimit-Policy': {
    description: `The quota and its window, \`<quota>;w=${RATE_WINDOW_SECONDS}\`. The quota is the deployment's: by default \`${CONTRACT_QUOTA};w=${RATE_WINDOW_SECONDS}\` on the contract endpoints; on \`POST /token\` it describes the token endpoint's own ceiling (by default \`${TOKEN_QUOTA};w=${RATE_WINDOW_SECONDS}\`). Read it rather than assuming a number.`,
    schema: { type: 'string', pattern: '^[0-9]+;w=[0-9]+$', examples: [`${CONTRACT_QUOTA};w=${RATE_WINDOW_SECONDS}`] },
  },
  'RateLimit-Limit': {
    description: `The quota: requests per API key per window of ${RATE_WINDOW_SECONDS} s (by default ${CONTRACT_QUOTA}; ${TOKEN_QUOTA} on \`POST /token\`).`,
    schema: { type: 'integer', minimum: 0, examples: [CONTRACT_QUOTA] },
  },
  'RateLimit-Remaining': {
    description: `What is left in the current window, already counting this request (quota − 1 after a fresh key's first call, e.g. ${CONTRACT_QUOTA_LESS_ONE}; 0 on a \`429\`). Without a known key (a \`401\`), the full quota.`,
    schema: { type: 'integer', minimum: 0, examples: [CONTRACT_QUOTA_LESS_ONE] },
  },
  'RateLimit-Reset': {
    description: 'Seconds until the current window ends (windows are aligned to the Unix epoch hour).',
    schema: { type: 'integer', minimum: 1, maximum: RATE_WINDOW_SECONDS, examples: [RATE_WINDOW_HALF] },
  },
  RateLimit: {
    description: 'The same state in the current IETF draft\'s field, `"default";r=<remaining>;t=<reset>` (additive).',
    schema: { type: 'string', examples: [`"default";r=${CONTRACT_QUOTA_LESS_ONE};t=1800`] },
  },
  'X-Request-Id': {
    description: "The request's id; a problem document's `instance` is `urn:psync:request:<this id>`. Quote it to support.",
    schema: { type: 'string', format: 'uuid' },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying (RFC 9110): the seconds left in the current rate-limit window.',
    required: true,
    schema: { type: 'integer', minimum: 1, examples: [1800] },
  },
  'WWW-Authenticate': { description: 'The Bearer challenge (RFC 6750): `Bearer realm="partner-sync"`.', required: true, schema: { type: 'string', examples: [WWW_AUTHENTICATE] } },
  'Cache-Control': {
    description:
      "`no-store` (RFC 9111 §5.2.2.5): no answer of the API is kept by a browser or a shared cache. Answers carry access tokens (RFC 6749 §5.1), signing secrets and guests' names; problem documents carry it too.",
    required: true,
    schema: { type: 'string', const: 'no-store' },
  },
  'Cache-Control-Document': {
    description: '`public, max-age=300`: this document is the same for everyone and holds no secret, so it may be cached for five minutes. The only API answer that may be cached.',
    required: true,
    schema: { type: 'string', const: 'public, max-age=300' },
  },
  Allow: {
    description: "The methods the path answers (RFC 9110): its operations in this document, with `HEAD` wherever there is a `GET` — the path's `x-other-methods.allow`.",
    required: true,
    schema: { type: 'string', examples: ['PUT, DELETE', 'GET, HEAD'] },
  },
};
