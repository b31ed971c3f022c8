/**
 * Reading internal (Connect) errors in tests: the error a call rejects with and the
 * machine-readable details services attach (common/v1/errors.proto).
 */
import { ConnectError } from '@connectrpc/connect';
import { ConflictDetailSchema, ErrorDetailSchema, type ErrorReason, RetryDetailSchema, ValidationDetailSchema } from '../../gen/psync/common/v1/errors_pb';

/** The error `p` rejects with (fails the test if it resolves or throws something else). */
export async function connectErrorOf(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ConnectError) return err;
    throw err;
  }
  throw new Error('expected the call to fail');
}

/** The ErrorDetail reason of an error (undefined if none). */
export const reasonOf = (err: ConnectError): ErrorReason | undefined => err.findDetails(ErrorDetailSchema)[0]?.reason;

/** The field violations of a validation error, as {field, code}. */
export const violationsOf = (err: ConnectError): { field: string; code: string }[] =>
  (err.findDetails(ValidationDetailSchema)[0]?.violations ?? []).map((v) => ({ field: v.field, code: v.code }));

/** The colliding dates of a conflict error. */
export const conflictDatesOf = (err: ConnectError): string[] | undefined => err.findDetails(ConflictDetailSchema)[0]?.dates;

/** The retry-after seconds of a rate-limit error. */
export const retryAfterOf = (err: ConnectError): number | undefined => err.findDetails(RetryDetailSchema)[0]?.retryAfterSeconds;
