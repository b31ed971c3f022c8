/**
 * The calendar's own named errors, built from the kit's constructors
 * (services/kit/rpc/errors.ts holds `failure`, `validationFailed`, `notFound`, the
 * SQLSTATEs, and the one interceptor mapping failures nobody mapped on purpose).
 * Details never carry a value the caller submitted, except the colliding dates a
 * conflict must list (spec: 409 `conflicts[]`).
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { ConflictDetailSchema, ErrorDetailSchema, ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { failure, validationFailed, type Violation } from '../kit/rpc';

/**
 * INVALID_ARGUMENT (VALIDATION_FAILED) listing every violation; the message names the
 * fields too, for marketplace gRPC callers reading only the status message.
 */
export function invalidArgument(violations: Violation[], message = 'invalid request'): ConnectError {
  const fields = violations.map((v) => `${v.field}: ${v.code}`).join(', ');
  return validationFailed(violations, fields ? `${message} (${fields})` : message);
}

/** FAILED_PRECONDITION (CONFLICT) with every colliding night, ascending, untruncated. */
export function conflict(dates: string[]): ConnectError {
  return new ConnectError(`${dates.length} night(s) already taken`, Code.FailedPrecondition, undefined, [
    { desc: ErrorDetailSchema, value: { reason: ErrorReason.CONFLICT } },
    { desc: ConflictDetailSchema, value: { dates } },
  ]);
}

/** FAILED_PRECONDITION with a reason (HOLD_NOT_LIVE, SANDBOX_PAYMENT_REFUSED). */
export function failedPrecondition(reason: ErrorReason, message: string): ConnectError {
  return failure(Code.FailedPrecondition, reason, message);
}

/**
 * OUT_OF_RANGE (CURSOR_EXPIRED): a WatchEvents position whose following events were
 * pruned by the retention (docs/calendar.md "Retention"). Never retryable as it is.
 */
export function cursorExpired(message: string): ConnectError {
  return failure(Code.OutOfRange, ErrorReason.CURSOR_EXPIRED, message);
}

/** UNIMPLEMENTED (NOT_ENABLED): the contract is published but not enabled (public 501). */
export function notEnabled(message: string): ConnectError {
  return failure(Code.Unimplemented, ErrorReason.NOT_ENABLED, message);
}
