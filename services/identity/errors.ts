/**
 * The identity service's own named errors, built like every other from the kit's
 * constructors (services/kit/rpc/errors.ts: `failure`, `invalidField`, and the one
 * interceptor that maps failures nobody mapped on purpose). Never a value the caller
 * submitted.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorDetailSchema, ErrorReason, RetryDetailSchema } from '../../gen/psync/common/v1/errors_pb';
import { RateLimitStatusSchema } from '../../gen/psync/identity/v1/identity_pb';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { failure } from '../kit/rpc';

/**
 * The one refusal of ExchangeToken for an unknown key id, a revoked key, a wrong
 * secret or a malformed key (spec "Authentication" 7): same code, same message, same
 * detail, whatever the cause.
 */
export function invalidApiKey(): ConnectError {
  return failure(Code.Unauthenticated, ErrorReason.UNAUTHORIZED, 'invalid API key');
}

/**
 * RESOURCE_EXHAUSTED / RATE_LIMITED with the seconds to wait (RetryDetail) and the
 * counter's state (RateLimitStatus, for the gateway's RateLimit-* headers).
 */
export function rateLimited(message: string, status: MessageInitShape<typeof RateLimitStatusSchema>): ConnectError {
  return new ConnectError(message, Code.ResourceExhausted, undefined, [
    { desc: ErrorDetailSchema, value: { reason: ErrorReason.RATE_LIMITED } },
    { desc: RetryDetailSchema, value: { retryAfterSeconds: status.retryAfterSeconds ?? 0 } },
    { desc: RateLimitStatusSchema, value: status },
  ]);
}
