/**
 * The token endpoint's 200 body (spec "POST /token").
 */
import type { ExchangeTokenResponse } from '../../gen/psync/identity/v1/identity_pb';
import type { TokenJson } from '../contract/token';

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
