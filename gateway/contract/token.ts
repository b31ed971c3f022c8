/** What POST /v1/token answers (routes/token.ts). */
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
