/**
 * Every request the client sends goes through `Transport.send`: it authenticates the
 * request, reads the rate-limit headers, retries what is safe to retry and turns a
 * failure into a typed error (errors.ts).
 *
 * Authentication: `POST /token` carries the API key; every other request carries an
 * access token from the TokenSource, and a `401` is answered once by a fresh exchange
 * and the same request again (the token may have expired early, or the service's
 * clock may disagree with ours).
 *
 * Retries:
 * - `429`: the request was not counted and changed nothing, so any method is retried
 *   after `Retry-After`, at most `rateLimitRetries` times and only when the wait is at
 *   most `maxRetryAfterSeconds`; otherwise the `429` is thrown at once with
 *   `retryAfterSeconds`, for the caller to schedule.
 * - `503 service_unavailable`: nothing was written, so any method is retried with
 *   backoff (or after its `Retry-After`). The token endpoint's `503` says tokens are
 *   not configured in this deployment and is thrown at once.
 * - `500`, `502`, `504` and network failures: the request may have taken effect, so
 *   only idempotent requests are retried: GET, HEAD, PUT and DELETE (the contract's
 *   PUTs replace and its DELETE frees what the block still holds), the token exchange
 *   and the deletion acknowledgement (a second one answers the first). Any other POST
 *   is never repeated.
 */
import { isMessage, isProblemDocument, ProblemError, type ResponseMeta, TokenExchangeError, UnexpectedResponseError } from './errors';
import { parseRateLimit, parseRetryAfter, type RateLimitInfo } from './rate-limit';

/** How hard the client retries. */
export interface RetryPolicy {
  /** Retries of a `429` (default 2). */
  rateLimitRetries: number;
  /** The longest `Retry-After` waited out, in seconds (default 60); a longer one is thrown at once. */
  maxRetryAfterSeconds: number;
  /** Retries of a `5xx` or a network failure where a retry is safe (default 2). */
  serverRetries: number;
  /** First backoff delay of a server retry in milliseconds, doubled per retry, with jitter (default 500). */
  backoffMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { rateLimitRetries: 2, maxRetryAfterSeconds: 60, serverRetries: 2, backoffMs: 500 };

/** Time as the client sees it; tests replace it. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const SYSTEM_CLOCK: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** How a request authenticates. */
export interface Credentials {
  apiKey: string;
  /** A valid access token (exchanging one when needed). */
  accessToken(): Promise<string>;
  /** Forgets `token` after the API refused it, so the next `accessToken()` exchanges anew. */
  refused(token: string): void;
}

/** POST operations that are safe to repeat, as path suffixes of `{base_url}`. */
const IDEMPOTENT_POSTS = [/\/token$/, /\/deletion-requests\/[^/]+\/acknowledge$/];
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);

export function isIdempotent(method: string, pathname: string): boolean {
  return IDEMPOTENT_METHODS.has(method) || (method === 'POST' && IDEMPOTENT_POSTS.some((p) => p.test(pathname)));
}

export class Transport {
  /** The contract quota as the last contract response stated it. */
  rateLimit: RateLimitInfo | undefined;
  /** The token endpoint's own ceiling as the last exchange stated it. */
  tokenRateLimit: RateLimitInfo | undefined;

  constructor(
    private readonly baseUrl: string,
    private readonly credentials: Credentials,
    private readonly fetchFn: (request: Request) => Promise<Response>,
    private readonly policy: RetryPolicy,
    private readonly clock: Clock,
    private readonly extraHeaders: Record<string, string>,
  ) {}

  /** Whether `url` is the token endpoint of this client's base URL. */
  private isTokenEndpoint(url: URL): boolean {
    return url.href.replace(/\/+$/, '') === `${this.baseUrl}/token`;
  }

  /** Sends `request` (built by openapi-fetch or by the token source) and returns a 2xx answer or throws. */
  async send(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const tokenEndpoint = this.isTokenEndpoint(url);
    const idempotent = isIdempotent(request.method, url.pathname);
    // The body is read once so that every attempt can send it again.
    const body = request.body === null ? undefined : await request.arrayBuffer();
    let refreshed = false;
    let rateLimitRetries = 0;
    let serverRetries = 0;
    for (;;) {
      const headers = new Headers(request.headers);
      for (const [k, v] of Object.entries(this.extraHeaders)) if (!headers.has(k)) headers.set(k, v);
      const token = tokenEndpoint ? undefined : await this.credentials.accessToken();
      headers.set('Authorization', `Bearer ${token ?? this.credentials.apiKey}`);
      let res: Response;
      try {
        res = await this.fetchFn(new Request(url, { method: request.method, headers, body, signal: request.signal, redirect: 'manual' }));
      } catch (e) {
        if (request.signal.aborted || !idempotent || serverRetries >= this.policy.serverRetries) throw e;
        await this.clock.sleep(this.backoff(serverRetries++));
        continue;
      }
      const now = this.clock.now();
      const rateLimit = parseRateLimit(res.headers, now);
      if (rateLimit) {
        if (tokenEndpoint) this.tokenRateLimit = rateLimit;
        else this.rateLimit = rateLimit;
      }
      if (res.ok) return res;
      const retryAfter = parseRetryAfter(res.headers, now);
      if (res.status === 401 && token !== undefined && !refreshed) {
        await res.body?.cancel();
        this.credentials.refused(token);
        refreshed = true;
        continue;
      }
      if (res.status === 429) {
        const wait = retryAfter ?? 1;
        if (rateLimitRetries < this.policy.rateLimitRetries && wait <= this.policy.maxRetryAfterSeconds) {
          await res.body?.cancel();
          rateLimitRetries++;
          await this.clock.sleep(wait * 1000);
          continue;
        }
      } else if (((res.status === 503 && !tokenEndpoint) || (idempotent && [500, 502, 504].includes(res.status))) && serverRetries < this.policy.serverRetries) {
        const wait = retryAfter !== undefined ? retryAfter * 1000 : this.backoff(serverRetries);
        if (wait <= this.policy.maxRetryAfterSeconds * 1000) {
          await res.body?.cancel();
          serverRetries++;
          await this.clock.sleep(wait);
          continue;
        }
      }
      throw await this.failure(res, tokenEndpoint, { retryAfterSeconds: retryAfter, rateLimit, requestId: res.headers.get('X-Request-Id') ?? undefined });
    }
  }

  private backoff(attempt: number): number {
    const base = this.policy.backoffMs * 2 ** attempt;
    return base / 2 + Math.random() * (base / 2);
  }

  /** The typed error of a failed answer. */
  private async failure(res: Response, tokenEndpoint: boolean, meta: ResponseMeta): Promise<Error> {
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    const clean = Object.fromEntries(Object.entries(meta).filter(([, v]) => v !== undefined)) as ResponseMeta;
    if (isProblemDocument(parsed)) return new ProblemError(parsed, clean);
    if (tokenEndpoint && isMessage(parsed)) return new TokenExchangeError(res.status, parsed.message, clean);
    return new UnexpectedResponseError(res.status, text.slice(0, 2000), clean);
  }
}
