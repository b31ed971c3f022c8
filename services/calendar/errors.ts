/**
 * The calendar's errors: the nearest standard Connect code plus an ErrorDetail reason
 * (common/v1/errors.proto), and the PostgreSQL SQLSTATEs the calendar reacts to.
 * Details never carry a value the caller submitted, except the colliding dates a
 * conflict must list (spec: 409 `conflicts[]`).
 */
import { Code, ConnectError } from '@connectrpc/connect';
import {
  ConflictDetailSchema,
  ErrorDetailSchema,
  ErrorReason,
  ValidationDetailSchema,
} from '../../gen/psync/common/v1/errors_pb';

/** SQLSTATEs mapped by code, never by message text (architecture.md, "Errors inside"). */
export const SqlState = {
  uniqueViolation: '23505',
  exclusionViolation: '23P01',
  serializationFailure: '40001',
  deadlockDetected: '40P01',
} as const;

/** The SQLSTATE of a postgres.js error, if it is one. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

function detail(reason: ErrorReason) {
  return { desc: ErrorDetailSchema, value: { reason } };
}

/** One schema violation, as the gateway's `errors[]` entry `{field, code}`. */
export interface Violation {
  field: string;
  code: string;
}

/** INVALID_ARGUMENT (VALIDATION_FAILED) listing every violation. */
export function invalidArgument(violations: Violation[], message = 'invalid request'): ConnectError {
  const fields = violations.map((v) => `${v.field}: ${v.code}`).join(', ');
  return new ConnectError(fields ? `${message} (${fields})` : message, Code.InvalidArgument, undefined, [
    detail(ErrorReason.VALIDATION_FAILED),
    { desc: ValidationDetailSchema, value: { violations } },
  ]);
}

/** FAILED_PRECONDITION (CONFLICT) with every colliding night, ascending, untruncated. */
export function conflict(dates: string[]): ConnectError {
  return new ConnectError(`${dates.length} night(s) already taken`, Code.FailedPrecondition, undefined, [
    detail(ErrorReason.CONFLICT),
    { desc: ConflictDetailSchema, value: { dates } },
  ]);
}

/** NOT_FOUND with a reason (PROPERTY_NOT_FOUND, LISTING_NOT_FOUND, HOLD_NOT_FOUND, BOOKING_NOT_FOUND). */
export function notFound(reason: ErrorReason, message: string): ConnectError {
  return new ConnectError(message, Code.NotFound, undefined, [detail(reason)]);
}

/** FAILED_PRECONDITION with a reason (HOLD_NOT_LIVE, SANDBOX_PAYMENT_REFUSED). */
export function failedPrecondition(reason: ErrorReason, message: string): ConnectError {
  return new ConnectError(message, Code.FailedPrecondition, undefined, [detail(reason)]);
}

/**
 * OUT_OF_RANGE (CURSOR_EXPIRED): a WatchEvents position whose following events were
 * pruned by the retention (docs/calendar.md "Retention"). Never retryable as it is.
 */
export function cursorExpired(message: string): ConnectError {
  return new ConnectError(message, Code.OutOfRange, undefined, [detail(ErrorReason.CURSOR_EXPIRED)]);
}

/** UNIMPLEMENTED (NOT_ENABLED): the contract is published but not enabled (public 501). */
export function notEnabled(message: string): ConnectError {
  return new ConnectError(message, Code.Unimplemented, undefined, [detail(ErrorReason.NOT_ENABLED)]);
}

/** UNAVAILABLE (SERVICE_UNAVAILABLE): a service the calendar depends on did not answer. */
export function unavailable(message: string, cause?: unknown): ConnectError {
  return new ConnectError(message, Code.Unavailable, undefined, [detail(ErrorReason.SERVICE_UNAVAILABLE)], cause);
}
