/**
 * How notifications reaches a partner: every challenge and delivery is one POST
 * through the egress guard (services/kit/egress/egress.ts) under the webhook URL rules —
 * https on port 443 or 8443, a DNS name, addresses vetted (public, or inside
 * EGRESS_ALLOW_CIDRS) and pinned at every connection, redirects never followed,
 * time-outs, a byte limit.
 *
 * Deliveries reuse kept-alive connections (docs/notifications.md, "How it is sent"):
 * one pool per endpoint (the workspace), at most as many connections as the
 * dispatcher's per-endpoint bound, each NEW connection vetted and pinned like any
 * other; a reused one was vetted when it was opened. Challenges always use a
 * connection of their own. `close()` closes them all at shutdown.
 */
import { EgressError, EgressPool, WEBHOOK_URL_RULES, checkUrlAndResolve, guardedRequest, type Resolver } from '../kit/egress';

/** Why a POST produced no HTTP status (recorded as a delivery's `last_error`). */
export type PostError = 'timeout' | 'connection_failed' | 'tls_failed' | 'address_refused' | 'too_large' | 'aborted';

export type PostResult =
  | {
      status: number;
      body: Buffer;
      /** The response's Retry-After header, as sent (parsed by the dispatcher for 429 and 503). */
      retryAfter?: string;
    }
  | { error: PostError };

export interface PostOptions {
  /** Deadline of the whole request. */
  timeoutMs: number;
  /** Largest response body read (readBody only). */
  maxResponseBytes: number;
  /** Read the response body (the challenge); otherwise only the status counts. */
  readBody?: boolean;
  signal?: AbortSignal;
  /**
   * The endpoint (workspace) of a delivery: reuse that endpoint's kept-alive
   * connections. Absent (challenges): a connection of its own, closed after.
   */
  endpoint?: string;
}

/** The two things notifications asks of the network. */
export interface WebhookPoster {
  /** True if `url` is an acceptable webhook endpoint right now (rules + resolution). */
  vet(url: string): Promise<boolean>;
  /** POSTs `body` with `headers`; never throws for network outcomes. */
  post(url: string, body: string, headers: Record<string, string>, opts: PostOptions): Promise<PostResult>;
  /** Closes the kept-alive connections (shutdown, once deliveries were drained); returns how many. */
  close(): number;
}

function classify(err: unknown): PostError {
  if (!(err instanceof EgressError)) return 'connection_failed';
  if (err.kind === 'forbidden_url') return 'address_refused';
  if (err.kind === 'too_large') return 'too_large';
  switch (err.reason) {
    case 'connect_timeout':
    case 'headers_timeout':
    case 'body_timeout':
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

export interface WebhookPosterOptions {
  /** EGRESS_ALLOW_CIDRS. */
  allowCidrs: readonly string[];
  resolver?: Resolver;
  /** Connections kept per endpoint at most: the dispatcher's per-endpoint concurrency bound. */
  connectionsPerEndpoint: number;
  /** An idle connection is closed after this long; default 30 s. */
  idleTimeoutMs?: number;
}

/** The poster over the egress guard, with EGRESS_ALLOW_CIDRS. */
export function createWebhookPoster(opts: WebhookPosterOptions): WebhookPoster {
  const pool = new EgressPool({
    allowCidrs: opts.allowCidrs,
    resolver: opts.resolver,
    maxSocketsPerKey: opts.connectionsPerEndpoint,
    idleTimeoutMs: opts.idleTimeoutMs ?? 30_000,
  });
  return {
    close: () => pool.close(),
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
          headersTimeoutMs: o.timeoutMs,
          bodyTimeoutMs: o.timeoutMs,
          totalTimeoutMs: o.timeoutMs,
          signal: o.signal,
          ...(o.endpoint === undefined ? {} : { pool, poolKey: o.endpoint }),
        });
        const retryAfter = res.headers['retry-after'];
        return { status: res.status, body: res.body, ...(retryAfter === undefined ? {} : { retryAfter }) };
      } catch (err) {
        return { error: classify(err) };
      }
    },
  };
}
