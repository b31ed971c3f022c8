/**
 * `psync client issue|revoke|list`: credentials of marketplace callers of the internal
 * API (role `marketplace`). A client's token `psmc_<client_id>_<secret>` is printed
 * once, by `client issue`; identity keeps only its SHA-256. Services refuse a revoked
 * client within their verification cache's lifetime (INTERNAL_AUTH_CACHE_SECONDS, 30 s).
 */
import { IdentityService, type InternalClient } from '../../gen/psync/identity/v1/identity_pb';
import { command, type Command } from './registry';
import { credentialIdCheck } from './credential-id';
import { isoOrNull } from './present';

/** A client as the operator sees it (never its token). */
function clientItem(c: InternalClient): Record<string, unknown> {
  return { client_id: c.clientId, name: c.name, role: c.role, created_at: isoOrNull(c.createdAt), revoked_at: isoOrNull(c.revokedAt) };
}

export const clientCommands: Record<string, Command> = {
  'client issue': command({
    summary: 'issues a credential for a marketplace caller of the internal API; the token is printed here and never again',
    notes: ['The caller sends it as `authorization: Bearer <token>` on every call to the internal API.'],
    flags: {
      name: {
        value: 'NAME',
        required: true,
        check: (v) => (v.trim() === '' || [...v].length > 200 ? '--name must be 1 to 200 characters' : undefined),
        doc: 'who will hold the credential, e.g. search-indexer; 1 to 200 characters',
      },
    },
    async run(f, { clients, baseUrl }) {
      const res = await clients.client(IdentityService, baseUrl).issueClient({ name: f.name });
      const c = res.client!;
      return { client_id: c.clientId, name: c.name, role: c.role, token: res.token };
    },
  }),

  'client revoke': command({
    summary: "revokes a marketplace caller's credential; services refuse it within 30 s (idempotent)",
    flags: {
      client: {
        value: 'CLIENT_ID',
        required: true,
        check: credentialIdCheck({ flag: 'client', id: 'client id', prefix: 'psmc_', whole: 'token' }),
        doc: 'the client id (16 characters a-z, 2-7), as printed by `psync client issue`; not the token',
      },
    },
    async run(f, { clients, baseUrl }) {
      const res = await clients.client(IdentityService, baseUrl).revokeClient({ clientId: f.client });
      const c = res.client!;
      return { client_id: c.clientId, revoked: true, revoked_at: isoOrNull(c.revokedAt) };
    },
  }),

  'client list': command({
    summary: 'the marketplace callers of the internal API, newest first (never their tokens)',
    columns: ['client_id', 'name', 'role', 'created_at', 'revoked_at'],
    flags: { all: { doc: 'include revoked clients' } },
    async run(f, { clients, baseUrl }) {
      const res = await clients.client(IdentityService, baseUrl).listClients({ includeRevoked: f.all !== undefined });
      return { items: res.clients.map(clientItem) };
    },
  }),
};
