/**
 * What a failed call throws. Every answer of the API except a token endpoint refusal
 * is a problem document: it becomes a `ProblemError`, to be told apart by `code`
 * (never by `title` or `detail`, which may change). A refusal of `POST /token` is
 * `{message}` and becomes a `TokenExchangeError`. Anything else (a proxy's HTML page,
 * a body that is not what the API sends) is an `UnexpectedResponseError`.
 */
import type { RateLimitInfo } from './rate-limit';
import type { Problem, Violation } from './types';

/** The codes of this API version. Later versions may add codes: `code` stays a string. */
export const PROBLEM_CODES = [
  'validation_failed',
  'unauthorized',
  'workspace_scope_mismatch',
  'property_not_found',
  'deletion_request_not_found',
  'delivery_not_found',
  'endpoint_check_not_found',
  'webhook_endpoint_not_found',
  'not_found',
  'method_not_allowed',
  'conflict',
  'webhook_endpoint_not_active',
  'delivery_not_resendable',
  'rate_limited',
  'internal_error',
  'not_enabled',
  'service_unavailable',
] as const;
export type ProblemCode = (typeof PROBLEM_CODES)[number];

/** What every error the client throws for an HTTP answer carries. */
export abstract class PartnerApiError extends Error {
  /** The HTTP status. */
  abstract readonly status: number;
  /** `Retry-After` of the answer in seconds (a `429`, sometimes a `503`). */
  readonly retryAfterSeconds: number | undefined;
  /** The `RateLimit-*` state the answer stated. */
  readonly rateLimit: RateLimitInfo | undefined;
  /** The `X-Request-Id` of the answer: quote it to support. */
  readonly requestId: string | undefined;

  protected constructor(message: string, meta: ResponseMeta) {
    super(message);
    this.retryAfterSeconds = meta.retryAfterSeconds;
    this.rateLimit = meta.rateLimit;
    this.requestId = meta.requestId;
  }
}

/** Response facts an error keeps. */
export interface ResponseMeta {
  retryAfterSeconds?: number;
  rateLimit?: RateLimitInfo;
  requestId?: string;
}

/** A problem document (`application/problem+json`). */
export class ProblemError extends PartnerApiError {
  override readonly name = 'ProblemError';
  /** Branch on this. `ProblemCode` lists this version's codes; a later one may add more. */
  readonly code: ProblemCode | (string & {});
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  /** The problem type URI: a stable identifier, not to be fetched. */
  readonly type: string;
  /** `urn:psync:request:<uuid>`: this occurrence. */
  readonly instance: string;
  /** `validation_failed`: every violation (`{field, code}`, never the submitted value); otherwise empty. */
  readonly fields: Violation[];
  /** `conflict`: every colliding night (`YYYY-MM-DD`); otherwise empty. */
  readonly conflicts: string[];
  /** The document as received (fields a later version adds included). */
  readonly problem: Problem;

  constructor(problem: Problem, meta: ResponseMeta = {}) {
    super(`${problem.status} ${problem.code}: ${problem.detail}`, meta);
    this.problem = problem;
    this.code = problem.code;
    this.status = problem.status;
    this.title = problem.title;
    this.detail = problem.detail;
    this.type = problem.type;
    this.instance = problem.instance;
    this.fields = problem.errors ?? [];
    this.conflicts = problem.conflicts ?? [];
  }
}

/** `POST /token` refused the key (`401`), its ceiling is used up (`429`) or tokens are not configured (`503`). */
export class TokenExchangeError extends PartnerApiError {
  override readonly name = 'TokenExchangeError';
  constructor(
    readonly status: number,
    /** The `message` of the `{message}` body. */
    readonly reason: string,
    meta: ResponseMeta = {},
  ) {
    super(`token exchange refused (${status}): ${reason}`, meta);
  }
}

/** An answer that is neither a success nor what the API sends on failure. */
export class UnexpectedResponseError extends PartnerApiError {
  override readonly name = 'UnexpectedResponseError';
  constructor(
    readonly status: number,
    /** The first 2000 characters of the body. */
    readonly body: string,
    meta: ResponseMeta = {},
  ) {
    super(`unexpected answer ${status}${body ? `: ${body.slice(0, 200)}` : ''}`, meta);
  }
}

/** True when `e` is a problem document with code `code` (narrows `e`). */
export function isProblem<C extends ProblemCode>(e: unknown, code: C): e is ProblemError & { code: C } {
  return e instanceof ProblemError && e.code === code;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Whether `body` has the fields every problem document has. */
export function isProblemDocument(body: unknown): body is Problem {
  return isObject(body) && typeof body.code === 'string' && typeof body.status === 'number' && typeof body.title === 'string';
}

/** Whether `body` is the token endpoint's `{message}` refusal. */
export function isMessage(body: unknown): body is { message: string } {
  return isObject(body) && typeof body.message === 'string';
}

/** Events after the `after` given to `PartnerClient.events` were pruned before they were read: reconcile from your own records, then read from the oldest kept (no `after`). */
export class EventsPrunedError extends Error {
  constructor(readonly after: string) {
    super(`events after position ${after} were pruned by the feed's retention before they were read`);
    this.name = 'EventsPrunedError';
  }
}
