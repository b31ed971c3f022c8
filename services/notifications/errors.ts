/**
 * The errors notifications raises on purpose: the nearest standard Code plus an
 * ErrorDetail reason (and a ValidationDetail for INVALID_ARGUMENT), which the gateway
 * maps to problem documents (common/v1/errors.proto). Never the submitted value.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorDetailSchema, ErrorReason, ValidationDetailSchema } from '../../gen/psync/common/v1/errors_pb';

/** INVALID_ARGUMENT / VALIDATION_FAILED with the given `{field, code}` violations. */
export function validationFailed(violations: { field: string; code: string }[], message = 'request validation failed'): ConnectError {
  return new ConnectError(message, Code.InvalidArgument, undefined, [
    { desc: ErrorDetailSchema, value: { reason: ErrorReason.VALIDATION_FAILED } },
    { desc: ValidationDetailSchema, value: { violations } },
  ]);
}

/**
 * The one answer to every refused webhook URL (spec PUT /webhooks/endpoint: "one
 * generic validation_failed that does not say which check failed"): the same
 * message, code and single violation whatever the reason.
 */
export function urlRefused(): ConnectError {
  return validationFailed([{ field: 'url', code: 'invalid' }], 'url is not an acceptable webhook endpoint');
}

/** NOT_FOUND with a reason. */
export function notFound(reason: ErrorReason, message: string): ConnectError {
  return new ConnectError(message, Code.NotFound, undefined, [{ desc: ErrorDetailSchema, value: { reason } }]);
}

/** UNAVAILABLE / SERVICE_UNAVAILABLE: a needed capability is not configured; nothing written. */
export function serviceUnavailable(message: string): ConnectError {
  return new ConnectError(message, Code.Unavailable, undefined, [
    { desc: ErrorDetailSchema, value: { reason: ErrorReason.SERVICE_UNAVAILABLE } },
  ]);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a textual UUID (any version). */
export function isUuid(s: string): boolean {
  return UUID.test(s);
}

/** Throws INVALID_ARGUMENT naming `field` unless `value` is a UUID. */
export function requireUuid(value: string, field: string): string {
  if (!isUuid(value)) throw validationFailed([{ field, code: 'format' }]);
  return value.toLowerCase();
}
