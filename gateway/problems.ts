/**
 * Problem documents (RFC 9457, `application/problem+json`): the public shape of every
 * error the gateway answers, except the token endpoint's refusals (spec "Errors").
 *
 *   { type, title, status, detail, instance, code, errors?, conflicts? }
 *
 * `type` is `{DOCS_URL}/errors/<code-with-hyphens>`, a stable identifier; `instance`
 * is `urn:psync:request:<uuid>`, the request's own id (also `X-Request-Id` and the
 * access log line). Clients branch on `code`. Nothing here ever carries a value the
 * partner submitted: `detail` is generic text per code, `errors[]` names fields only.
 */

/** Every public error code and its HTTP status (spec "Errors" + docs/contract-gaps.md). */
export const PROBLEM_CODES = {
  validation_failed: { status: 400, title: 'Validation failed', detail: 'The request does not match the published schema; see errors.' },
  unauthorized: { status: 401, title: 'Unauthorized', detail: 'A valid access token is required: send Authorization: Bearer <ACCESS_TOKEN>.' },
  workspace_scope_mismatch: { status: 403, title: 'Workspace scope mismatch', detail: 'The token does not grant access to the addressed workspace.' },
  property_not_found: { status: 404, title: 'Property not found', detail: 'No such property or listing in this workspace.' },
  deletion_request_not_found: { status: 404, title: 'Deletion request not found', detail: 'No deletion request with this event_id for this partner.' },
  delivery_not_found: { status: 404, title: 'Delivery not found', detail: 'No delivery with this event_id in this workspace.' },
  endpoint_check_not_found: { status: 404, title: 'Receiver check not found', detail: 'No receiver check run with this id in this workspace.' },
  webhook_endpoint_not_found: { status: 404, title: 'Webhook endpoint not found', detail: 'This workspace has no webhook endpoint registered.' },
  not_found: { status: 404, title: 'Not found', detail: 'No endpoint of this API has this path.' },
  method_not_allowed: { status: 405, title: 'Method not allowed', detail: 'This path does not support this method; see the Allow header.' },
  conflict: { status: 409, title: 'Conflict', detail: 'Some nights collide with a marketplace booking or live hold; nothing was written.' },
  webhook_endpoint_not_active: {
    status: 409,
    title: 'Webhook endpoint not active',
    detail: 'The workspace has no active webhook endpoint subscribed to this event kind; nothing was queued.',
  },
  delivery_not_resendable: {
    status: 409,
    title: 'Delivery not resendable',
    detail: "This delivery's body is no longer kept (a real event's is deleted once delivered); nothing was queued.",
  },
  rate_limited: { status: 429, title: 'Too many requests', detail: 'The request quota of this API key is used up for the current window; see Retry-After.' },
  internal_error: { status: 500, title: 'Internal error', detail: 'An unexpected fault occurred on the service side; idempotent requests may be retried.' },
  not_enabled: { status: 501, title: 'Not enabled', detail: 'This contract is published but not enabled for this workspace; nothing was written.' },
  service_unavailable: { status: 503, title: 'Service unavailable', detail: 'A capability this request needs is not available right now; nothing was written. Retry later.' },
} as const;

export type ProblemCode = keyof typeof PROBLEM_CODES;

/** One schema violation: `{field, code}` (docs/contract-gaps.md, "`errors[].code` values"). */
export interface Violation {
  field: string;
  code: ViolationCode;
}

/** The closed vocabulary of `errors[].code`. */
export const VIOLATION_CODES = [
  'required',
  'unknown_field',
  'type',
  'format',
  'pattern',
  'enum',
  'min_length',
  'max_length',
  'minimum',
  'maximum',
  'min_items',
  'max_items',
  'one_of',
  'invalid',
] as const;

export type ViolationCode = (typeof VIOLATION_CODES)[number];

export function isViolationCode(value: string): value is ViolationCode {
  return (VIOLATION_CODES as readonly string[]).includes(value);
}

/** The JSON body of a problem response. */
export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: ProblemCode;
  errors?: Violation[];
  conflicts?: string[];
}

export interface ProblemOptions {
  /** Replaces the generic detail text; must never contain a submitted value. */
  detail?: string;
  /** validation_failed: the violations. */
  errors?: Violation[];
  /** conflict: every colliding date. */
  conflicts?: string[];
  /** Extra response headers (Allow, Retry-After, WWW-Authenticate). */
  headers?: Record<string, string>;
  /** Internal cause, for the log only. */
  cause?: unknown;
}

/**
 * A failure the gateway answers on purpose. Thrown anywhere below the error mapper,
 * which renders it as a problem document with its message (detail) kept.
 */
export class ProblemError extends Error {
  override name = 'ProblemError';
  readonly code: ProblemCode;
  readonly status: number;
  readonly errors?: Violation[];
  readonly conflicts?: string[];
  readonly headers: Record<string, string>;

  constructor(code: ProblemCode, opts: ProblemOptions = {}) {
    super(opts.detail ?? PROBLEM_CODES[code].detail, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.status = PROBLEM_CODES[code].status;
    if (opts.errors) this.errors = opts.errors;
    if (opts.conflicts) this.conflicts = opts.conflicts;
    this.headers = opts.headers ?? {};
  }
}

/** `validation_failed` with these violations. */
export function validationFailed(errors: Violation[]): ProblemError {
  return new ProblemError('validation_failed', { errors });
}

/** The `type` URI of a code: `{docsUrl}/errors/<code-with-hyphens>`. */
export function problemType(docsUrl: string, code: ProblemCode): string {
  return `${docsUrl.replace(/\/+$/, '')}/errors/${code.replace(/_/g, '-')}`;
}

/** `urn:psync:request:<uuid>`. */
export function instanceUrn(requestId: string): string {
  return `urn:psync:request:${requestId}`;
}

/** Builds the document of `err` for the request `requestId`. */
export function problemDocument(err: ProblemError, docsUrl: string, requestId: string): ProblemDocument {
  const doc: ProblemDocument = {
    type: problemType(docsUrl, err.code),
    title: PROBLEM_CODES[err.code].title,
    status: err.status,
    detail: err.message,
    instance: instanceUrn(requestId),
    code: err.code,
  };
  if (err.code === 'validation_failed') doc.errors = err.errors ?? [];
  if (err.code === 'conflict') doc.conflicts = err.conflicts ?? [];
  return doc;
}

/** Media type of problem documents. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
