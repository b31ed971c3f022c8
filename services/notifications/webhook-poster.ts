/**
 * How notifications reaches a partner: every challenge and delivery is one POST
 * through the egress guard (services/kit/egress.ts) under the webhook URL rules —
 * https on port 443 or 8443, a DNS name, addresses vetted (public, or inside
 * EGRESS_ALLOW_CIDRS) and pinned at every connection, redirects never followed,
 * time-outs, a byte limit.
 */
import {
  EgressError,
  WEBHOOK_URL_RULES,
  checkUrlAndResolve,
  guardedRequest,
  type Resolver,
} from '../kit/egress';

/** Why a POST produced no HTTP status (recorded as a delivery's `last_error`). */
export type PostError = 'timeout' | 'connection_failed' | 'tls_failed' | 'address_refused' | 'too_large' | 'aborted';

export type PostResult = { status: number; body: Buffer } | { error: PostError };

export interface PostOptions {
  /** Deadline of the whole request. */
  timeoutMs: number;
  /** Largest response body read (readBody only). */
  maxResponseBytes: number;
  /** Read the response body (the challenge); otherwise only the status counts. */
  readBody?: boolean;
  signal?: AbortSignal;
}

/** The two things notifications asks of the network. */
export interface WebhookPoster {
  /** True if `url` is an acceptable webhook endpoint right now (rules + resolution). */
  vet(url: string): Promise<boolean>;
  /** POSTs `body` with `headers`; never throws for network outcomes. */
  post(url: string, body: string, headers: Record<string, string>, opts: PostOptions): Promise<PostResult>;
}

function classify(err: unknown): PostError {
  if (!(err instanceof EgressError)) return 'connection_failed';
  if (err.kind === 'forbidden_url') return 'address_refused';
  if (err.kind === 'too_large') return 'too_large';
  switch (err.reason) {
    case 'connect_timeout':
    case 'read_timeout':
    case 'deadline':
      return 'timeout';
    case 'tls':
      return 'tls_failed';
    case 'aborted':
      return 'aborted';
    default:
      return 'connection_failed';
  }
}

/** The poster over the egress guard, with EGRESS_ALLOW_CIDRS. */
export function createWebhookPoster(opts: { allowCidrs: readonly string[]; resolver?: Resolver }): WebhookPoster {
  return {
    async vet(url) {
      try {
        await checkUrlAndResolve(url, WEBHOOK_URL_RULES, { allowCidrs: opts.allowCidrs, resolver: opts.resolver });
        return true;
      } catch {
        return false;
      }
    },
    async post(url, body, headers, o) {
      try {
        const res = await guardedRequest(url, {
          rules: WEBHOOK_URL_RULES,
          allowCidrs: opts.allowCidrs,
          resolver: opts.resolver,
          method: 'POST',
          headers,
          body,
          maxBytes: o.maxResponseBytes,
          ignoreBody: !o.readBody,
          connectTimeoutMs: Math.min(5000, o.timeoutMs),
          readTimeoutMs: o.timeoutMs,
          totalTimeoutMs: o.timeoutMs,
          signal: o.signal,
        });
        return { status: res.status, body: res.body };
      } catch (err) {
        return { error: classify(err) };
      }
    },
  };
}
