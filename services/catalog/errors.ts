/**
 * The errors the catalog raises on purpose: the nearest standard Code plus an
 * ErrorDetail reason (and a ValidationDetail for INVALID_ARGUMENT), which the gateway
 * maps to problem documents (common/v1/errors.proto). Never the submitted value.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorDetailSchema, ErrorReason, ValidationDetailSchema } from '../../gen/psync/common/v1/errors_pb';

/** One `{field, code}` entry (operator-interface.md, `errors[].code` values). */
export interface Violation {
  field: string;
  code: string;
}

/** INVALID_ARGUMENT / VALIDATION_FAILED with every violation found. */
export function validationFailed(violations: Violation[], message = 'request validation failed'): ConnectError {
  return new ConnectError(message, Code.InvalidArgument, undefined, [
    { desc: ErrorDetailSchema, value: { reason: ErrorReason.VALIDATION_FAILED } },
    { desc: ValidationDetailSchema, value: { violations } },
  ]);
}

/** An error with a Connect code and an ErrorDetail reason. */
export function failure(code: Code, reason: ErrorReason, message: string): ConnectError {
  return new ConnectError(message, code, undefined, [{ desc: ErrorDetailSchema, value: { reason } }]);
}

/** NOT_FOUND / PROPERTY_NOT_FOUND: unknown and foreign are indistinguishable (spec "Errors"). */
export const propertyNotFound = (): ConnectError => failure(Code.NotFound, ErrorReason.PROPERTY_NOT_FOUND, 'property not found');

/** NOT_FOUND / LISTING_NOT_FOUND: marketplace-side lookups and public surfaces. */
export const listingNotFound = (): ConnectError => failure(Code.NotFound, ErrorReason.LISTING_NOT_FOUND, 'listing not found');

/** NOT_FOUND / WORKSPACE_NOT_FOUND: operator and marketplace calls naming an unknown workspace. */
export const workspaceNotFound = (): ConnectError => failure(Code.NotFound, ErrorReason.WORKSPACE_NOT_FOUND, 'workspace not found');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a textual UUID (any version). */
export function isUuid(s: string): boolean {
  return UUID.test(s);
}
