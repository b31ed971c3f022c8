/**
 * The token endpoint's 200 body (spec "POST /token").
 */
import type { ExchangeTokenResponse } from '../../gen/psync/identity/v1/identity_pb';

export interface TokenJson {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  workspace_id: string;
  sandbox: boolean;
}

export function presentToken(res: ExchangeTokenResponse): TokenJson {
  if (!res.accessToken) throw new Error('ExchangeTokenResponse without an access token');
  return {
    access_token: res.accessToken,
    token_type: 'Bearer',
    expires_in: res.expiresIn,
    workspace_id: res.workspaceId,
    sandbox: res.sandbox,
  };
}
