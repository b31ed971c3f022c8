/**
 * Authentication and authorisation of internal API callers.
 *
 * Every call to the internal Connect/gRPC port except `grpc.health.v1.Health` must
 * prove a caller role (access-policy.ts); Health is open to all, and tells a caller
 * that proves a configured role more than an anonymous one (health.ts):
 *
 * - Over the network: `authorization: Bearer <token>`. The token is hashed (SHA-256)
 *   and the hash looked up among the accepted credentials: INTERNAL_CALLERS
 *   (`role:sha256` entries — servers hold hashes only, so a compromised pod cannot
 *   replay another role's credential from its configuration) and OPERATOR_TOKEN /
 *   OPERATOR_TOKEN_PREVIOUS. Comparing by hash keeps the secret out of any
 *   data-dependent comparison. Marketplace clients' tokens (`psmc_…`, issued by
 *   `psync client issue`, stored hashed by identity) are checked with
 *   IdentityService.AuthenticateClient, cached for INTERNAL_AUTH_CACHE_SECONDS; only a
 *   token of the exact issued shape is looked up, never-seen ones at a bounded rate,
 *   and refusals never displace live clients from the cache (ClientVerifier).
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
import type { AcceptedCaller } from './access-policy';
import type { Logger } from '../base';
import { LogSampler } from '../base';
import { recordInternalAuthRefusal } from '../telemetry';

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

/**
 * The exact shape of an issued client token: `psmc_`, 16 base32 characters (the client
 * id), `_`, 43 base64url characters (256 secret bits). Anything else is refused before
 * identity is asked.
 */
export const CLIENT_TOKEN_SHAPE = /^psmc_[a-z2-7]{16}_[A-Za-z0-9_-]{43}$/;

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

/** At most this many live client credentials are remembered (least recently verified dropped first). */
const LIVE_CACHE_MAX = 10_000;
/** At most this many refused credentials are remembered (oldest dropped first), apart from the live ones. */
const REFUSED_CACHE_MAX = 10_000;
/**
 * Look-ups of credentials this process has never seen live: at most this many per
 * second on average, in bursts of up to NEW_LOOKUP_BURST. Beyond that a new credential
 * is answered UNAVAILABLE (retry later) without asking identity, so a flood of random
 * `psmc_` tokens costs identity at most this rate. Clients seen live before are never
 * held back: their re-checks after the TTL bypass the budget.
 */
export const NEW_LOOKUPS_PER_SECOND = 20;
export const NEW_LOOKUP_BURST = 100;

/**
 * Checks issued client tokens with identity and remembers the answer for `ttlMs`
 * (positive and negative alike: a new token is a new hash, so a negative answer never
 * hides a fresh issue; a revocation takes effect within `ttlMs`). Concurrent checks of
 * one token share one call. A failed call (identity unreachable) is not remembered and
 * fails the request with UNAVAILABLE.
 *
 * Live and refused answers are kept in two tables of their own, so unknown tokens, however
 * many, never displace a live client (which would send its next request to identity), and
 * look-ups of never-seen tokens are rate-limited (NEW_LOOKUPS_PER_SECOND).
 */
export class ClientVerifier {
  /** Live clients by token hash; an expired entry stays until displaced, marking the hash as known live. */
  private readonly live = new Map<string, { caller: Caller; until: number }>();
  private readonly refused = new Map<string, number>();
  private readonly inFlight = new Map<string, Promise<Caller | undefined>>();
  private budget: number;
  private budgetAt: number;

  constructor(
    private readonly lookup: (sha256: Buffer) => Promise<ClientLookup>,
    private readonly ttlMs: number,
    private readonly newLookups = { perSecond: NEW_LOOKUPS_PER_SECOND, burst: NEW_LOOKUP_BURST },
  ) {
    this.budget = newLookups.burst;
    this.budgetAt = Date.now();
  }

  async verify(hash: Buffer, hashHex: string): Promise<Caller | undefined> {
    const now = Date.now();
    const live = this.live.get(hashHex);
    if (live && live.until > now) return live.caller;
    const refusedUntil = this.refused.get(hashHex);
    if (refusedUntil !== undefined && refusedUntil > now) return undefined;
    let pending = this.inFlight.get(hashHex);
    if (!pending) {
      if (!live && !this.takeNewLookup(now)) {
        throw new ConnectError('too many unrecognised internal API credentials right now; retry later', Code.Unavailable);
      }
      pending = this.lookup(hash).then(
        (res) => {
          const caller = res.authenticated && isRole(res.role) ? { role: res.role, id: `client:${res.clientId}` } : undefined;
          this.remember(hashHex, caller);
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

  private remember(hashHex: string, caller: Caller | undefined): void {
    const until = Date.now() + this.ttlMs;
    if (caller) {
      this.refused.delete(hashHex);
      // Re-inserted, so the map's order is least recently verified first.
      this.live.delete(hashHex);
      if (this.live.size >= LIVE_CACHE_MAX) this.live.delete(this.live.keys().next().value!);
      this.live.set(hashHex, { caller, until });
    } else {
      this.live.delete(hashHex);
      this.refused.delete(hashHex);
      if (this.refused.size >= REFUSED_CACHE_MAX) this.refused.delete(this.refused.keys().next().value!);
      this.refused.set(hashHex, until);
    }
  }

  /** Takes one look-up of a never-seen credential from the token bucket; false when it is empty. */
  private takeNewLookup(now: number): boolean {
    const { perSecond, burst } = this.newLookups;
    this.budget = Math.min(burst, this.budget + ((now - this.budgetAt) / 1000) * perSecond);
    this.budgetAt = now;
    if (this.budget < 1) return false;
    this.budget -= 1;
    return true;
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

  const configuredRole = (header: string | null): Role | undefined => {
    const token = bearerToken(header);
    return token === undefined ? undefined : opts.registry.roleOf(tokenSha256(token).toString('hex'));
  };

  const authenticate = async (header: string | null): Promise<Caller | undefined> => {
    const token = bearerToken(header);
    if (!token) return undefined;
    const hash = tokenSha256(token);
    const hex = hash.toString('hex');
    const role = opts.registry.roleOf(hex);
    if (role) return { role, id: role };
    if (CLIENT_TOKEN_SHAPE.test(token) && opts.clients) return opts.clients.verify(hash, hex);
    return undefined;
  };

  return (next) => async (req) => {
    const service = req.service.typeName;
    const local = req.contextValues.get(IN_PROCESS_CALLER);
    if (UNAUTHENTICATED_SERVICES.has(service)) {
      // Open to all, but a caller that proves a configured role (or calls in process) is
      // told more (health.ts: per-service status). Marketplace tokens are not looked up
      // here: an open RPC must not be a way to make identity work.
      const known = local ?? configuredRole(req.header.get('authorization'));
      if (known) req.contextValues.set(CALLER, { role: known, id: known });
      return next(req);
    }
    const method = req.method.name;
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
