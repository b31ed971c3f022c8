/**
 * The identity service's errors: a standard Connect Code plus a
 * psync.common.v1.ErrorDetail (proto/psync/common/v1/errors.proto says which Code
 * goes with which reason), never a value the caller submitted.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import {
  ErrorDetailSchema,
  ErrorReason,
  RetryDetailSchema,
  ValidationDetailSchema,
} from '../../gen/psync/common/v1/errors_pb';
import { RateLimitStatusSchema } from '../../gen/psync/identity/v1/identity_pb';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { Logger } from '../kit/logger';

/** A ConnectError carrying an ErrorDetail with `reason`. */
export function fail(code: Code, reason: ErrorReason, message: string): ConnectError {
  return new ConnectError(message, code, undefined, [{ desc: ErrorDetailSchema, value: { reason } }]);
}

/** INVALID_ARGUMENT / VALIDATION_FAILED naming the field and the violated rule. */
export function invalidArgument(field: string, code: string, message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument, undefined, [
    { desc: ErrorDetailSchema, value: { reason: ErrorReason.VALIDATION_FAILED } },
    { desc: ValidationDetailSchema, value: { violations: [{ field, code }] } },
  ]);
}

/**
 * The one refusal of ExchangeToken for an unknown key id, a revoked key, a wrong
 * secret or a malformed key (spec "Authentication" 7): same code, same message, same
 * detail, whatever the cause.
 */
export function invalidApiKey(): ConnectError {
  return fail(Code.Unauthenticated, ErrorReason.UNAUTHORIZED, 'invalid API key');
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

/** postgres.js / network failures meaning "the database is not reachable right now". */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN',
  'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED',
]);

/**
 * What a handler throws for an unexpected failure: a database that cannot be reached
 * becomes UNAVAILABLE / SERVICE_UNAVAILABLE (public 503); anything else INTERNAL with
 * a generic message. The cause goes to the log only (architecture.md "Errors inside").
 */
export function toConnectError(err: unknown, log: Logger, rpc: string): ConnectError {
  if (err instanceof ConnectError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const unavailable =
    typeof code === 'string' &&
    (UNAVAILABLE_CODES.has(code) || code.startsWith('08') || code === '57P01' || code === '57P03' || code === '53300');
  if (unavailable) {
    log.warn({ err, rpc }, 'identity: database unavailable');
    return fail(Code.Unavailable, ErrorReason.SERVICE_UNAVAILABLE, 'identity database unavailable');
  }
  log.error({ err, rpc }, 'identity: unexpected failure');
  return new ConnectError('internal error', Code.Internal);
}
