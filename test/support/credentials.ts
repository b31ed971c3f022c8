/**
 * Internal API credentials of the systems tests start.
 *
 * Every system startSystem() starts accepts TEST_TOKENS (testCallerEnv(): the
 * operator's as OPERATOR_TOKEN, the others' hashes in INTERNAL_CALLERS), and a process
 * of role R sends TEST_TOKENS[R] as its INTERNAL_TOKEN. Test clients call with
 * credentialInterceptor(): each RPC with the token of a role allowed to call it
 * (services/kit/rpc/access-policy.ts), preferring the operator's, then the marketplace's —
 * the callers a test stands in for.
 */
import type { Interceptor } from '@connectrpc/connect';
import { ACCESS_POLICY, ROLES, UNAUTHENTICATED_SERVICES, type Role } from '../../services/kit/rpc';
import { tokenSha256 } from '../../services/kit/rpc';

/** One fixed credential per role (≥ 32 characters, as the configuration requires). */
export const TEST_TOKENS: Readonly<Record<Role, string>> = Object.fromEntries(ROLES.map((r) => [r, `psync-test-credential-${r}-0123456789abcdef0123456789abcdef`])) as Record<
  Role,
  string
>;

/** `role:sha256hex` of `token`, an INTERNAL_CALLERS entry. */
export function callerEntry(role: Role, token: string): string {
  return `${role}:${tokenSha256(token).toString('hex')}`;
}

/** The environment that makes a system accept every TEST_TOKENS credential. */
export function testCallerEnv(): Record<string, string> {
  return {
    OPERATOR_TOKEN: TEST_TOKENS.operator,
    INTERNAL_CALLERS: ROLES.filter((r) => r !== 'operator')
      .map((r) => callerEntry(r, TEST_TOKENS[r]))
      .join(','),
  };
}

/** Roles a test prefers to call as, first match wins. */
const PREFERENCE: readonly Role[] = ['operator', 'marketplace', 'gateway', 'calendar', 'catalog', 'notifications', 'identity'];

/** The role a test client calls `service`/`method` as: the first allowed one in PREFERENCE. */
export function testRoleFor(service: string, method: string): Role | undefined {
  const allowed = ACCESS_POLICY[service]?.[method];
  return allowed && PREFERENCE.find((r) => allowed.includes(r));
}

/**
 * Sends `authorization: Bearer` with `role`'s test token, or (no role given) with the
 * token of a role allowed to call each RPC. Health checks go without a credential.
 */
export function credentialInterceptor(role?: Role): Interceptor {
  return (next) => (req) => {
    if (!UNAUTHENTICATED_SERVICES.has(req.service.typeName)) {
      const r = role ?? testRoleFor(req.service.typeName, req.method.name);
      if (r) req.header.set('authorization', `Bearer ${TEST_TOKENS[r]}`);
    }
    return next(req);
  };
}
