/**
 * Internal (Connect) errors → public problems (docs/decisions.md "Errors have one path";
 * proto/psync/common/v1/errors.proto says which Code goes with which reason).
 *
 * The ErrorDetail reason decides first; the Connect code alone is the fallback. A
 * reason the public contract has no answer for (an operator-only NOT_FOUND, say) is
 * a fault of ours: `undefined` here, a 500 in the mapper, the cause in the log.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { ConflictDetailSchema, ErrorDetailSchema, ErrorReason, RetryDetailSchema, ValidationDetailSchema } from '../gen/psync/common/v1/errors_pb';
import { isViolationCode, ProblemError, Violation } from './problems';

/** The ErrorDetail reason of an error, UNSPECIFIED when none is attached. */
export function errorReason(err: ConnectError): ErrorReason {
  try {
    return err.findDetails(ErrorDetailSchema)[0]?.reason ?? ErrorReason.UNSPECIFIED;
  } catch {
    return ErrorReason.UNSPECIFIED;
  }
}

function details<T>(read: () => T[]): T[] {
  try {
    return read();
  } catch {
    return [];
  }
}

/** Violations of a ValidationDetail; an unknown code from a service becomes `invalid`. */
function violations(err: ConnectError): Violation[] {
  return details(() => err.findDetails(ValidationDetailSchema)).flatMap((d) =>
    d.violations.map((v) => ({ field: v.field || 'body', code: isViolationCode(v.code) ? v.code : 'invalid' })),
  );
}

/** `Retry-After` seconds from a RetryDetail, if any. */
export function retryAfterFrom(err: ConnectError): number | undefined {
  const s = details(() => err.findDetails(RetryDetailSchema))[0]?.retryAfterSeconds;
  return s !== undefined && s > 0 ? s : undefined;
}

/** Codes meaning "a backend could not be reached or did not answer in time". */
const UNAVAILABLE_CODES = new Set([Code.Unavailable, Code.DeadlineExceeded, Code.Canceled, Code.Aborted]);

/**
 * The public problem for an internal error, or `undefined` when it has none (→ 500).
 * `Unimplemented` is `not_enabled`: a contract whose behaviour has not landed yet
 * (docs/decisions.md).
 */
export function problemFromConnectError(err: ConnectError): ProblemError | undefined {
  // UNAVAILABLE is 503 on every route, whatever reason it carries (services/kit/rpc/errors.ts:
  // the database or bus unreachable); INTERNAL and UNKNOWN fall through to 500 below.
  if (err.code === Code.Unavailable) return new ProblemError('service_unavailable', { cause: err });
  const reason = errorReason(err);
  if (reason !== ErrorReason.UNSPECIFIED) return problemForReason(reason, err);
  // A socket error wrapped under another code (e.g. when the transport could not classify it) is still "unreachable".
  if (UNAVAILABLE_CODES.has(err.code) || isNetworkError(err.cause)) return new ProblemError('service_unavailable', { cause: err });
  const byCode = CODE_REASONS.get(err.code);
  return byCode === undefined ? undefined : problemForReason(byCode, err);
}

/** The reason a Connect code alone stands for, when the error carries none. */
const CODE_REASONS = new Map<Code, ErrorReason>([
  [Code.Unimplemented, ErrorReason.NOT_ENABLED],
  [Code.InvalidArgument, ErrorReason.VALIDATION_FAILED],
  [Code.Unauthenticated, ErrorReason.UNAUTHORIZED],
  [Code.PermissionDenied, ErrorReason.WORKSPACE_SCOPE_MISMATCH],
  [Code.ResourceExhausted, ErrorReason.RATE_LIMITED],
]);

function problemForReason(reason: ErrorReason, err: ConnectError): ProblemError | undefined {
  switch (reason) {
    case ErrorReason.VALIDATION_FAILED:
      return new ProblemError('validation_failed', { errors: violations(err), cause: err });
    case ErrorReason.UNAUTHORIZED:
      return new ProblemError('unauthorized', { headers: { 'WWW-Authenticate': WWW_AUTHENTICATE }, cause: err });
    case ErrorReason.WORKSPACE_SCOPE_MISMATCH:
      return new ProblemError('workspace_scope_mismatch', { cause: err });
    case ErrorReason.PROPERTY_NOT_FOUND:
    case ErrorReason.LISTING_NOT_FOUND:
      return new ProblemError('property_not_found', { cause: err });
    case ErrorReason.DELETION_REQUEST_NOT_FOUND:
      return new ProblemError('deletion_request_not_found', { cause: err });
    case ErrorReason.DELIVERY_NOT_FOUND:
      return new ProblemError('delivery_not_found', { cause: err });
    case ErrorReason.ENDPOINT_CHECK_NOT_FOUND:
      return new ProblemError('endpoint_check_not_found', { cause: err });
    case ErrorReason.ENDPOINT_CHECKS_LIMITED:
      return new ProblemError('rate_limited', {
        detail: 'A receiver check run started for this workspace less than a minute ago; see Retry-After.',
        headers: { 'Retry-After': String(retryAfterFrom(err) ?? 60) },
        cause: err,
      });
    case ErrorReason.ENDPOINT_NOT_FOUND:
      return new ProblemError('webhook_endpoint_not_found', { cause: err });
    case ErrorReason.WEBHOOK_ENDPOINT_NOT_ACTIVE:
      return new ProblemError('webhook_endpoint_not_active', { cause: err });
    case ErrorReason.DELIVERY_NOT_RESENDABLE:
      return new ProblemError('delivery_not_resendable', { cause: err });
    case ErrorReason.CONFLICT:
      return new ProblemError('conflict', {
        conflicts: details(() => err.findDetails(ConflictDetailSchema)).flatMap((d) => d.dates),
        cause: err,
      });
    case ErrorReason.RATE_LIMITED:
      return new ProblemError('rate_limited', { headers: { 'Retry-After': String(retryAfterFrom(err) ?? 60) }, cause: err });
    case ErrorReason.NOT_ENABLED:
      return new ProblemError('not_enabled', { cause: err });
    case ErrorReason.SERVICE_UNAVAILABLE:
    case ErrorReason.TOKEN_ISSUER_NOT_CONFIGURED:
      return new ProblemError('service_unavailable', { cause: err });
    default:
      // A reason with no public meaning on a contract route (operator/marketplace only).
      return undefined;
  }
}

/** Node network errors meaning "the backend is not reachable". */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);

/** True for a raw socket error from reaching a backend (not wrapped by Connect). */
export function isNetworkError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && NETWORK_CODES.has(code);
}

/** The challenge of every 401 (RFC 6750 §3). */
export const WWW_AUTHENTICATE = 'Bearer realm="partner-sync"';
