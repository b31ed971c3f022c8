/**
 * Notifications' own named errors and identifier checks, built from the kit's
 * constructors (services/kit/rpc/errors.ts holds `validationFailed`, `notFound`,
 * `serviceUnavailable` and the one interceptor mapping failures nobody mapped on
 * purpose). Never the submitted value.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorDetailSchema, ErrorReason, RetryDetailSchema } from '../../gen/psync/common/v1/errors_pb';
import { failure, notFound, validationFailed } from '../kit/rpc';

/**
 * The one answer to every refused webhook URL (spec PUT /webhooks/endpoint: "one
 * generic validation_failed that does not say which check failed"): the same
 * message, code and single violation whatever the reason.
 */
export function urlRefused(): ConnectError {
  return validationFailed([{ field: 'url', code: 'invalid' }], 'url is not an acceptable webhook endpoint');
}

export { isUuid } from '../kit/base';

/** NOT_FOUND (DELIVERY_NOT_FOUND): unknown, malformed and another workspace's event_id alike. */
export function deliveryNotFound(): ConnectError {
  return notFound(ErrorReason.DELIVERY_NOT_FOUND, 'no delivery with that event_id in this workspace');
}

/** FAILED_PRECONDITION (WEBHOOK_ENDPOINT_NOT_ACTIVE): a test event, resend or receiver check could not be sent, so nothing was queued. */
export function endpointNotActive(message = 'the workspace has no active webhook endpoint subscribed to this event kind; nothing was queued'): ConnectError {
  return failure(Code.FailedPrecondition, ErrorReason.WEBHOOK_ENDPOINT_NOT_ACTIVE, message);
}

/** FAILED_PRECONDITION (DELIVERY_NOT_RESENDABLE): the delivery's body is no longer kept. */
export function deliveryNotResendable(): ConnectError {
  return failure(Code.FailedPrecondition, ErrorReason.DELIVERY_NOT_RESENDABLE, "the delivery's body is no longer kept; nothing was queued");
}

/** NOT_FOUND (ENDPOINT_CHECK_NOT_FOUND): unknown, malformed and another workspace's run id alike. */
export function endpointCheckNotFound(): ConnectError {
  return notFound(ErrorReason.ENDPOINT_CHECK_NOT_FOUND, 'no receiver check run with that id in this workspace');
}

/** FAILED_PRECONDITION (WEBHOOK_ENDPOINT_NOT_ACTIVE): receiver checks need an active endpoint. */
export function endpointNotActiveForChecks(): ConnectError {
  return failure(
    Code.FailedPrecondition,
    ErrorReason.WEBHOOK_ENDPOINT_NOT_ACTIVE,
    'receiver checks need the workspace endpoint to be active; register it and answer its challenge first',
  );
}

/** RESOURCE_EXHAUSTED (ENDPOINT_CHECKS_LIMITED) with the seconds to wait (RetryDetail). */
export function endpointChecksLimited(intervalSeconds: number, waitSeconds: number): ConnectError {
  return new ConnectError(`a receiver check run started less than ${intervalSeconds} s ago; retry in ${waitSeconds} s`, Code.ResourceExhausted, undefined, [
    { desc: ErrorDetailSchema, value: { reason: ErrorReason.ENDPOINT_CHECKS_LIMITED } },
    { desc: RetryDetailSchema, value: { retryAfterSeconds: waitSeconds } },
  ]);
}
