/**
 * Partners of a running system for gateway tests: workspaces and API keys made
 * through the internal IdentityService (as `psync workspace create` / `key issue` do),
 * tokens through the public POST /v1/token.
 */
import { credentialInterceptor } from '../support/credentials';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { InternalClients } from '../../services/kit/rpc';
import type { RunningSystem } from '../support/system';
import { send } from './http-client';

export interface Partner {
  workspaceId: string;
  keyId: string;
  apiKey: string;
  token: string;
  /** `Authorization` header with the access token. */
  auth: { Authorization: string };
}

export class Partners {
  readonly clients = new InternalClients([credentialInterceptor()], 15000);

  constructor(private readonly system: RunningSystem) {}

  get identity() {
    return this.clients.client(IdentityService, this.system.internalUrl);
  }

  async workspace(env: 'sandbox' | 'production'): Promise<string> {
    const res = await this.identity.createWorkspace({
      name: `gateway-test-${env}`,
      environment: env === 'sandbox' ? Environment.SANDBOX : Environment.PRODUCTION,
    });
    return res.workspace!.workspaceId;
  }

  /** A new workspace with a new key and a fresh token (one exchange of the key's ceiling). */
  async partner(env: 'sandbox' | 'production' = 'sandbox'): Promise<Partner> {
    const workspaceId = await this.workspace(env);
    const key = await this.identity.issueKey({ workspaceId });
    const token = await this.exchange(key.apiKey);
    return { workspaceId, keyId: key.keyId, apiKey: key.apiKey, token, auth: { Authorization: `Bearer ${token}` } };
  }

  async exchange(apiKey: string): Promise<string> {
    const res = await send(this.system.gatewayUrl, { method: 'POST', path: '/v1/token', headers: { Authorization: `Bearer ${apiKey}` } });
    if (res.status !== 200) throw new Error(`token exchange answered ${res.status}: ${res.text}`);
    return res.json.access_token as string;
  }

  close(): void {
    this.clients.close();
  }
}
