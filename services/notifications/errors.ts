/**
 * Notifications' own named errors and identifier checks, built from the kit's
 * constructors (services/kit/errors.ts holds `validationFailed`, `notFound`,
 * `serviceUnavailable` and the one interceptor mapping failures nobody mapped on
 * purpose). Never the submitted value.
 */
import type { ConnectError } from '@connectrpc/connect';
import { validationFailed } from '../kit/errors';

/**
 * The one answer to every refused webhook URL (spec PUT /webhooks/endpoint: "one
 * generic validation_failed that does not say which check failed"): the same
 * message, code and single violation whatever the reason.
 */
export function urlRefused(): ConnectError {
  return validationFailed([{ field: 'url', code: 'invalid' }], 'url is not an acceptable webhook endpoint');
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
