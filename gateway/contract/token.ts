/** What POST /v1/token answers (routes/token.ts): the token, or a refusal `{message}` (not a problem document). */
import { Type, type Static } from '@sinclair/typebox';
import { MAX_TOKEN_TTL_SECONDS } from '../../services/kit/base';
import { TOKEN_TTL_MINUTES, TOKEN_TTL_SECONDS } from './document-values';

export const Token = Type.Object({
  access_token: Type.String({ description: 'Send it as `Authorization: Bearer <ACCESS_TOKEN>` on every other call.' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({
    minimum: 1,
    maximum: MAX_TOKEN_TTL_SECONDS,
    description: `Seconds the token is valid: the deployment's token lifetime, ${TOKEN_TTL_SECONDS} (${TOKEN_TTL_MINUTES} minutes) by default and never more than ${MAX_TOKEN_TTL_SECONDS}. Use this value rather than a constant.`,
  }),
  workspace_id: Type.String({ format: 'uuid', description: 'The workspace of the key.' }),
  sandbox: Type.Boolean({ description: 'Whether the workspace is a sandbox (otherwise production).' }),
});
export type TokenJson = Static<typeof Token>;

/** The one body of every refusal (spec "Authentication" 7). */
export const INVALID_API_KEY = { message: 'invalid API key' } as const;

/** The body of a refusal past the key's ceiling of exchanges. */
export const TOKEN_CEILING_REACHED = { message: 'too many token requests for this API key; retry later' } as const;

/** The body of the answer of a deployment that issues no tokens. */
export const TOKEN_NOT_CONFIGURED = { message: 'the token endpoint is not configured' } as const;

/** The body of a refusal for too many failed exchanges. */
export const TOO_MANY_FAILURES = { message: 'too many failed token requests; retry later' } as const;
