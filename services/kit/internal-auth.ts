/**
 * Authentication and authorisation of internal API callers.
 *
 * Every call to the internal Connect/gRPC port except `grpc.health.v1.Health` must
 * prove a caller role (access-policy.ts):
 *
 * - Over the network: `authorization: Bearer <token>`. The token is hashed (SHA-256)
 *   and the hash looked up among the accepted credentials: INTERNAL_CALLERS
 *   (`role:sha256` entries — servers hold hashes only, so a compromised pod cannot
 *   replay another role's credential from its configuration) and OPERATOR_TOKEN /
 *   OPERATOR_TOKEN_PREVIOUS. Comparing by hash keeps the secret out of any
 *   data-dependent comparison. Marketplace clients' tokens (`psmc_…`, issued by
 *   `psync client issue`, stored hashed by identity) are checked with
 *   IdentityService.AuthenticateClient, cached for INTERNAL_AUTH_CACHE_SECONDS.
 * - In process (the all-in-one): the in-process transport binds the calling
 *   component's role to the request's context values, which a network request can
 *   never set; no credential is needed, and the allow-list applies all the same.
 *
 * No credential, or one that is not accepted: UNAUTHENTICATED. A valid caller calling
 * an RPC its role is not allowed: PERMISSION_DENIED. Both are refused before the
 * handler runs, so nothing is read or written.
 */
import { createHash } from 'node:crypto';
import { Code, ConnectError, createContextKey, type Interceptor } from '@connectrpc/connect';
import { isAllowed, isRole, UNAUTHENTICATED_SERVICES, type Role } from './access-policy';
import type { AcceptedCaller } from './config';
import type { Logger } from './logger';
import { LogSampler } from './log-sampler';
import { recordInternalAuthRefusal } from './metrics';

/** Who made a call: its role and, for issued clients, the client id. */
export interface Caller {
  role: Role;
  /** `operator`, a service role, or `client:<client_id>` for an issued marketplace client. */
  id: string;
}

/**
 * The role of an in-process caller, set only by the in-process transport
 * (in-process-transport.ts). Context values never travel over the wire: a network
 * request starts with none.
 */
export const IN_PROCESS_CALLER = createContextKey<Role | undefined>(undefined, { description: 'psync in-process caller role' });

/** The authenticated caller, for handlers that want to log or audit it. */
export const CALLER = createContextKey<Caller | undefined>(undefined, { description: 'psync authenticated caller' });

/** Prefix of issued marketplace client tokens (`psmc_<client_id>_<secret>`). */
export const CLIENT_TOKEN_PREFIX = 'psmc_';

/** Lower-case hex SHA-256 of a token's UTF-8 bytes: the form in which credentials are configured and stored. */
export function tokenSha256(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** The `Bearer` token of an authorization header; undefined when absent or malformed. */
export function bearerToken(header: string | null): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer ([\x21-\x7e]{1,512})$/i.exec(header.trim());
  return m?.[1];
}

/** The statically configured credentials, by hash. */
export class CredentialRegistry {
  private readonly roles = new Map<string, Role>();

  constructor(entries: readonly AcceptedCaller[]) {
    for (const e of entries) this.roles.set(e.sha256, e.role);
  }

  /** The role of a configured credential, or undefined. */
  roleOf(hashHex: string): Role | undefined {
    return this.roles.get(hashHex);
  }

  /** True when at least one credential of `role` is configured. */
  has(role: Role): boolean {
    for (const r of this.roles.values()) if (r === role) return true;
    return false;
  }
}

/** What identity answers about a client token's hash. */
export interface ClientLookup {
  authenticated: boolean;
  clientId: string;
  role: string;
}

/** At most this many verified client tokens are remembered (oldest dropped first). */
const CLIENT_CACHE_MAX = 10_000;

/**
 * Checks issued client tokens with identity and remembers the answer for `ttlMs`
 * (positive and negative alike: a new token is a new hash, so a negative answer never
 * hides a fresh issue; a revocation takes effect within `ttlMs`). Concurrent checks of
 * one token share one call. A failed call (identity unreachable) is not remembered and
 * fails the request with UNAVAILABLE.
 */
export class ClientVerifier {
  private readonly cache = new Map<string, { caller: Caller | undefined; until: number }>();
  private readonly inFlight = new Map<string, Promise<Caller | undefined>>();

  constructor(
    private readonly lookup: (sha256: Buffer) => Promise<ClientLookup>,
    private readonly ttlMs: number,
  ) {}

  async verify(hash: Buffer, hashHex: string): Promise<Caller | undefined> {
    const now = Date.now();
    const hit = this.cache.get(hashHex);
    if (hit && hit.until > now) return hit.caller;
    let pending = this.inFlight.get(hashHex);
    if (!pending) {
      pending = this.lookup(hash).then(
        (res) => {
          const caller = res.authenticated && isRole(res.role) ? { role: res.role, id: `client:${res.clientId}` } : undefined;
          if (this.cache.size >= CLIENT_CACHE_MAX) this.cache.delete(this.cache.keys().next().value!);
          this.cache.set(hashHex, { caller, until: Date.now() + this.ttlMs });
          return caller;
        },
        (err: unknown) => {
          throw new ConnectError('cannot verify the internal API credential right now', Code.Unavailable, undefined, undefined, err);
        },
      );
      pending.finally(() => this.inFlight.delete(hashHex)).catch(() => undefined);
      this.inFlight.set(hashHex, pending);
    }
    return pending;
  }
}

export interface AuthInterceptorOptions {
  registry: CredentialRegistry;
  /** Checks `psmc_` tokens; absent: such tokens are refused (no identity reachable). */
  clients?: ClientVerifier;
  log: Logger;
}

/** The server interceptor enforcing authentication and the allow-list on every RPC. */
export function authInterceptor(opts: AuthInterceptorOptions): Interceptor {
  const sampler = new LogSampler();
  const refuse = (code: 'unauthenticated' | 'permission_denied', role: string, service: string, method: string): never => {
    recordInternalAuthRefusal(code, role);
    sampler.sample(code, (notLogged) => opts.log.warn({ code, role: role || undefined, rpc: `${service}/${method}`, refusals_not_logged: notLogged }, 'internal API call refused'));
    throw code === 'unauthenticated'
      ? new ConnectError('missing or invalid internal API credential (authorization: Bearer <token>)', Code.Unauthenticated)
      : new ConnectError(`the caller role "${role}" may not call ${service}/${method}`, Code.PermissionDenied);
  };

  const authenticate = async (header: string | null): Promise<Caller | undefined> => {
    const token = bearerToken(header);
    if (!token) return undefined;
    const hash = tokenSha256(token);
    const hex = hash.toString('hex');
    const role = opts.registry.roleOf(hex);
    if (role) return { role, id: role };
    if (token.startsWith(CLIENT_TOKEN_PREFIX) && opts.clients) return opts.clients.verify(hash, hex);
    return undefined;
  };

  return (next) => async (req) => {
    const service = req.service.typeName;
    if (UNAUTHENTICATED_SERVICES.has(service)) return next(req);
    const method = req.method.name;
    const local = req.contextValues.get(IN_PROCESS_CALLER);
    const caller = local ? { role: local, id: local } : await authenticate(req.header.get('authorization'));
    if (!caller) return refuse('unauthenticated', '', service, method);
    if (!isAllowed(caller.role, service, method)) return refuse('permission_denied', caller.role, service, method);
    req.contextValues.set(CALLER, caller);
    return next(req);
  };
}

/** A client interceptor sending `token` as `authorization: Bearer` on every call. */
export function bearerInterceptor(token: string): Interceptor {
  const value = `Bearer ${token}`;
  return (next) => (req) => {
    req.header.set('authorization', value);
    return next(req);
  };
}
