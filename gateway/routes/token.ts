/**
 * POST /v1/token → IdentityService.ExchangeToken (spec "POST /token",
 * "Authentication" 2, 7, 8; docs/decisions.md "Token endpoint ceiling").
 *
 * - The API key is read only from `Authorization: Bearer`; the body is never read or
 *   parsed, whatever its content type.
 * - 200 `{access_token, token_type, expires_in, workspace_id, sandbox}`, `Cache-Control: no-store`
 *   (RFC 6749 §5.1), as every API answer has it (the error mapper's default).
 * - Every refusal of the key — no header, a malformed one, an unknown, revoked or
 *   wrong key — is one identical `401 {"message": "invalid API key"}`.
 * - Over the endpoint's own ceiling: `429 {message}` with `Retry-After`.
 * - Too many failed exchanges from one client address, or for one presented key id:
 *   `429 {message}` with `Retry-After` (gateway/token-failures.ts).
 * - Not configured: `503 {message}`.
 * - Anything unexpected is a problem document (the error mapper).
 * The RateLimit-* headers describe the token ceiling (TOKEN_RATE_LIMIT_PER_HOUR).
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { type ExchangeTokenResponse, RateLimitStatusSchema, type RateLimitStatus } from '../../gen/psync/identity/v1/identity_pb';
import { bearerCredential } from '../auth';
import { errorReason, retryAfterFrom, WWW_AUTHENTICATE } from '../connect-errors';
import type { Route } from '../contract-router';
import { INVALID_API_KEY, TOKEN_CEILING_REACHED, TOKEN_NOT_CONFIGURED, TOO_MANY_FAILURES } from '../contract/token';
import { presentToken } from '../presenters/token';
import { secondsLeftInWindow } from '../../services/domain';
import { viewFromStatus } from '../rate-limit';
import { sendJson } from '../respond';
import type { GatewayContext } from '../request-context';
import type { RouteDeps } from './deps';
import { presentedKeyId } from '../token-failures';
import { RATE_WINDOW_SECONDS } from '../../services/kit/base';

/** Connect codes by which identity refuses a key. */
const REFUSALS = new Set([Code.Unauthenticated, Code.PermissionDenied, Code.InvalidArgument, Code.NotFound]);

function refuse(ctx: GatewayContext): void {
  ctx.set('WWW-Authenticate', WWW_AUTHENTICATE);
  sendJson(ctx, 401, INVALID_API_KEY);
}

function tooManyFailures(ctx: GatewayContext, retryAfter: number, tokenQuota: number): void {
  ctx.state.rateLimit ??= { limit: tokenQuota, windowSeconds: RATE_WINDOW_SECONDS, remaining: 0, resetSeconds: retryAfter };
  ctx.set('Retry-After', String(retryAfter));
  sendJson(ctx, 429, TOO_MANY_FAILURES);
}

/** The ceiling's state as identity reports it: `rate_limit` of the response, or a RateLimitStatus detail of a refusal. */
function ceilingState(source: ConnectError | ExchangeTokenResponse): RateLimitStatus | undefined {
  if (source instanceof ConnectError) {
    try {
      return source.findDetails(RateLimitStatusSchema)[0];
    } catch {
      return undefined;
    }
  }
  return source.rateLimit;
}

export function tokenRoutes(deps: RouteDeps): Route[] {
  const identity = deps.upstreams.identity;
  return [
    {
      method: 'POST',
      path: '/v1/token',
      async handle(ctx) {
        ctx.state.quota = 'token';
        const address = ctx.ip;
        const blocked = deps.tokenFailures.byAddress.retryAfterSeconds(address);
        if (blocked > 0) return tooManyFailures(ctx, blocked, deps.tokenQuota);
        const apiKey = bearerCredential(ctx.get('Authorization') || undefined);
        const keyId = presentedKeyId(apiKey);
        /** A refused key: counted; past the key id's limit the answer is 429, not 401. */
        const failed = () => {
          const keyBlocked = keyId ? deps.tokenFailures.byKey.retryAfterSeconds(keyId) : 0;
          deps.tokenFailures.fail(address, keyId);
          return keyBlocked > 0 ? tooManyFailures(ctx, keyBlocked, deps.tokenQuota) : refuse(ctx);
        };
        if (!apiKey) return failed();
        let res: ExchangeTokenResponse;
        try {
          res = await identity.exchangeToken({ apiKey });
        } catch (err) {
          if (!(err instanceof ConnectError)) throw err;
          const reason = errorReason(err);
          const state = ceilingState(err);
          if (state) ctx.state.rateLimit = viewFromStatus(state, deps.tokenQuota);
          if (err.code === Code.ResourceExhausted || reason === ErrorReason.RATE_LIMITED) {
            const retryAfter = retryAfterFrom(err) ?? state?.retryAfterSeconds ?? secondsLeftInWindow(Date.now() / 1000);
            ctx.state.rateLimit ??= { limit: deps.tokenQuota, windowSeconds: RATE_WINDOW_SECONDS, remaining: 0, resetSeconds: retryAfter };
            ctx.set('Retry-After', String(retryAfter));
            return sendJson(ctx, 429, TOKEN_CEILING_REACHED);
          }
          if (reason === ErrorReason.TOKEN_ISSUER_NOT_CONFIGURED) {
            return sendJson(ctx, 503, TOKEN_NOT_CONFIGURED);
          }
          if (REFUSALS.has(err.code)) return failed();
          throw err;
        }
        if (res.keyId) ctx.state.keyId = res.keyId;
        const state = ceilingState(res);
        if (state) ctx.state.rateLimit = viewFromStatus(state, deps.tokenQuota);
        sendJson(ctx, 200, presentToken(res));
      },
    },
  ];
}
