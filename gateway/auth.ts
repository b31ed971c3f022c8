/**
 * Authentication, rate limiting and authorisation of contract requests: one
 * IdentityService.Authorize round trip per request (spec "Authentication" 3, 5,
 * 6).
 *
 * Only `Authorization: Bearer <ACCESS_TOKEN>` is read — never a cookie or the query
 * string. Outcomes, in the order of checks (docs/decisions.md):
 *   UNAUTHENTICATED            → 401 unauthorized (nothing counted)
 *   rate_limit.limited         → 429 rate_limited + Retry-After (not counted)
 *   WORKSPACE_SCOPE_MISMATCH   → 403 workspace_scope_mismatch (counted)
 *   ALLOWED                    → the caller, with the key's rate-limit state
 */
import type { Client } from '@connectrpc/connect';
import { AuthorizeDecision, type AuthorizeResponse, IdentityService } from '../gen/psync/identity/v1/identity_pb';
import type { Logger } from '../services/kit/base';
import { WWW_AUTHENTICATE } from './connect-errors';
import { ProblemError } from './problems';
import { retryAfterSeconds, viewFromStatus } from './rate-limit';
import type { GatewayContext, Principal } from './request-context';

/** Longest credential passed on to identity (real tokens and keys are a few hundred characters). */
const MAX_CREDENTIAL_LENGTH = 4096;
/** `Bearer <b64token>` (RFC 6750 §2.1); the scheme is case-insensitive. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** The credential of an `Authorization: Bearer` header, or undefined when missing or malformed. */
export function bearerCredential(header: string | undefined): string | undefined {
  if (!header || header.length > MAX_CREDENTIAL_LENGTH + 16) return undefined;
  const m = BEARER.exec(header);
  return m?.[1];
}

export function unauthorized(): ProblemError {
  return new ProblemError('unauthorized', { headers: { 'WWW-Authenticate': WWW_AUTHENTICATE } });
}

export interface AuthDeps {
  identity: Client<typeof IdentityService>;
  /** RATE_LIMIT_PER_HOUR, when identity reports no limit. */
  contractQuota: number;
  log: Logger;
}

/** Records the key and its rate-limit state on the request (for headers and the log). */
function remember(ctx: GatewayContext, res: AuthorizeResponse, deps: AuthDeps): void {
  if (res.keyId) ctx.state.keyId = res.keyId;
  if (res.rateLimit) ctx.state.rateLimit = viewFromStatus(res.rateLimit, deps.contractQuota);
}

/**
 * Authenticates a contract request and counts it; throws the 401/429/403 problem,
 * or returns the caller.
 */
export async function authorizeContractRequest(ctx: GatewayContext, deps: AuthDeps): Promise<Principal> {
  const token = bearerCredential(ctx.get('Authorization') || undefined);
  if (!token) throw unauthorized();
  const res = await deps.identity.authorize({ accessToken: token, countRequest: true });
  if (res.decision === AuthorizeDecision.UNAUTHENTICATED) throw unauthorized();
  if (res.decision !== AuthorizeDecision.ALLOWED && res.decision !== AuthorizeDecision.WORKSPACE_SCOPE_MISMATCH) {
    throw new Error(`Authorize answered an unexpected decision ${res.decision}`);
  }
  remember(ctx, res, deps);
  // From here the request has a workspace (its token's) and is recorded in the request log.
  ctx.state.workspaceId = res.workspaceId;
  if (res.rateLimit?.limited) {
    throw new ProblemError('rate_limited', { headers: { 'Retry-After': String(retryAfterSeconds(res.rateLimit)) } });
  }
  if (res.decision === AuthorizeDecision.WORKSPACE_SCOPE_MISMATCH) throw new ProblemError('workspace_scope_mismatch');
  return { keyId: res.keyId, workspaceId: res.workspaceId, environment: res.environment };
}

/**
 * For a request no route answers (404/405): when a token was presented, shows the
 * key's rate-limit state without counting. Never fails the request: without a token,
 * with a bad one or when identity cannot be asked, the defaults are shown.
 */
export async function peekRateLimit(ctx: GatewayContext, deps: AuthDeps): Promise<void> {
  const token = bearerCredential(ctx.get('Authorization') || undefined);
  if (!token) return;
  try {
    const res = await deps.identity.authorize({ accessToken: token, countRequest: false });
    if (res.decision === AuthorizeDecision.ALLOWED || res.decision === AuthorizeDecision.WORKSPACE_SCOPE_MISMATCH) {
      remember(ctx, res, deps);
    }
  } catch (err) {
    deps.log.debug({ err }, 'rate-limit peek failed; default headers sent');
  }
}
