/**
 * The egress client: the one way a service makes an HTTP request to a URL a partner
 * gave us (webhook deliveries and registration challenges, photo fetches), on undici
 * under the rules of egress-rules.ts (docs/security/threat-model.md, "Egress").
 *
 * - The address rule holds at every connection: every socket is opened by the vetting
 *   connector of egress-connector.ts, so a connection goes only to an address that
 *   passed the rules when it was opened.
 * - TLS: the URL's host name is the server name (SNI and certificate check) and the
 *   Host header; trust is Node's own store (NODE_EXTRA_CA_CERTS adds a CA); HTTP/1.1.
 * - Redirects are never followed: no redirect handling is composed into the
 *   dispatcher, so a 3xx is the answer.
 * - Time-outs: connect (TCP and TLS handshake), headers (request written → status
 *   line and headers), body (longest silence between body chunks), and a deadline on
 *   the whole request, so a server trickling bytes cannot hold it.
 * - Size: a declared Content-Length over the limit is refused before reading; a body
 *   without one is counted while it streams and the connection is closed at the limit.
 *
 * Connections: without a pool (photo fetches, challenges) a request has a connection
 * of its own, closed after it. Webhook deliveries use an `EgressPool` (egress-pool.ts):
 * kept-alive connections per pool key (the endpoint) and origin, each opened through
 * the same vetting connector, so a reused connection is always one that was vetted and
 * pinned when it was opened.
 *
 * This module is the egress facade: callers import the rules (egress-rules.ts) and the
 * pool (egress-pool.ts) from here with the request itself, so one import names all
 * of egress.
 */
import { SpanKind } from '@opentelemetry/api';
import { Client, type buildConnector, type Dispatcher } from 'undici';
import { DEFAULT_CONNECT_TIMEOUT_MS, connector, onUsedConnection } from './egress-connector';
import type { EgressPool } from './egress-pool';
import { EgressError, checkUrl, type Resolver, type UrlRules } from './egress-rules';
import { inSpan } from '../telemetry';

export { EgressPool, type EgressPoolOptions } from './egress-pool';
export {
  CidrList,
  EgressError,
  PHOTO_URL_RULES,
  WEBHOOK_URL_RULES,
  checkUrl,
  checkUrlAndResolve,
  isAllowedAddress,
  isPublicAddress,
  mappedIPv4,
  resolveAllowed,
  systemResolver,
  type EgressErrorKind,
  type ResolvedAddress,
  type Resolver,
  type UrlRules,
} from './egress-rules';

const DEFAULT_MAX_BYTES = 1024 * 1024;
const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
const DEFAULT_BODY_TIMEOUT_MS = 10_000;
const DEFAULT_TOTAL_TIMEOUT_MS = 60_000;

export interface GuardedRequestOptions {
  /** Scheme/port rules of this kind of URL (PHOTO_URL_RULES, WEBHOOK_URL_RULES). */
  rules: UrlRules;
  /** EGRESS_ALLOW_CIDRS. */
  allowCidrs?: readonly string[];
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** Largest accepted response body; default 1 MiB. */
  maxBytes?: number;
  /** TCP connection and TLS handshake; default 5000. A pooled request uses the pool's. */
  connectTimeoutMs?: number;
  /** From the request written until the status line and headers are in; default 10000. */
  headersTimeoutMs?: number;
  /** Longest silence between two chunks of the body; default 10000. */
  bodyTimeoutMs?: number;
  /** Deadline for the whole request, so a server trickling bytes cannot hold it; default 60000. */
  totalTimeoutMs?: number;
  /**
   * Resolve as soon as the status line and headers arrive, without the body (`body`
   * is empty): for callers that need only the status, e.g. webhook deliveries, where
   * any 2xx acknowledges whatever follows. On a pooled connection the rest is read and
   * discarded (at most `maxBytes`, within the time-outs) so the connection can carry
   * the next request; otherwise the connection is closed at once.
   */
  ignoreBody?: boolean;
  /** Aborts the request (e.g. at shutdown); the promise rejects with EgressError('unreachable', 'aborted'). */
  signal?: AbortSignal;
  /** Name resolution; default the system resolver. Injected by tests to play DNS rebinding. */
  resolver?: Resolver;
  /**
   * Kept-alive connections (opt-in). New connections are vetted with the POOL's
   * allowCidrs and resolver, which replace `allowCidrs` and `resolver` above for this
   * request; so is its connect time-out.
   */
  pool?: EgressPool;
  /**
   * Which of the pool's connections the request may use, besides the origin (e.g. the
   * endpoint): requests with different keys never share a connection or a TLS session,
   * and the pool's per-key bound applies per key.
   */
  poolKey?: string;
}

export interface GuardedResponse {
  /** HTTP status, as answered: a 3xx is returned, never followed. */
  status: number;
  /** Header names in lower case; a repeated header's values joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * One HTTP(S) request to a partner-supplied URL under the egress rules. Resolves
 * with the response (any status; redirects are not followed); rejects with
 * EgressError: `forbidden_url` (URL rules, IP literal, no allowed address),
 * `unreachable` (DNS failure, connection failure, TLS failure, time-outs, reset,
 * abort) or `too_large` (Content-Length or streamed bytes over `maxBytes`).
 */
export async function guardedRequest(rawUrl: string, opts: GuardedRequestOptions): Promise<GuardedResponse> {
  const method = opts.method ?? 'GET';
  let host = '';
  try {
    host = new URL(rawUrl).hostname;
  } catch {
    // checkUrl below refuses it, inside the span
  }
  // A CLIENT span per request (photo fetch, webhook delivery): host only, never the
  // URL (a partner's path or query may carry credentials). No trace headers are sent out.
  return inSpan(`${method} egress`, { kind: SpanKind.CLIENT, attributes: { 'http.request.method': method, 'server.address': host } }, async (span) => {
    try {
      const res = await guardedRequestUntraced(rawUrl, opts);
      span.setAttribute('http.response.status_code', res.status);
      return res;
    } catch (err) {
      if (err instanceof EgressError) span.setAttribute('error.type', `${err.kind}/${err.reason}`);
      throw err;
    }
  });
}

async function guardedRequestUntraced(rawUrl: string, opts: GuardedRequestOptions): Promise<GuardedResponse> {
  const url = checkUrl(rawUrl, opts.rules);
  if (opts.signal?.aborted) throw new EgressError('unreachable', 'aborted', 'request aborted');
  const deadline = new Deadline(opts.signal, opts.totalTimeoutMs ?? DEFAULT_TOTAL_TIMEOUT_MS);
  let rest: Promise<unknown> | undefined;
  try {
    const pool = opts.pool && !opts.pool.closed ? opts.pool : undefined;
    if (!pool) {
      const connect = connector({ allowCidrs: opts.allowCidrs, resolver: opts.resolver }, opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, 0);
      return await ownConnection(url, opts, connect, deadline);
    }
    const key = pool.key(opts.poolKey ?? '');
    try {
      const done = await deadline.race(exchange(url, opts, key.agent, deadline.signal, true));
      rest = done.rest;
      return done.response;
    } catch (err) {
      if (!onUsedConnection(err)) throw err;
      // The server closed a kept-alive connection as the request went out on it, before
      // answering: once more, on a connection of its own (vetted the same way), within the deadline.
      return await ownConnection(url, opts, key.connect, deadline);
    }
  } catch (err) {
    throw toEgressError(err);
  } finally {
    // The deadline and the caller's signal also bound the discarded rest of a body.
    if (rest) void rest.finally(() => deadline.clear());
    else deadline.clear();
  }
}

/** A request on a connection of its own, closed when the request is over. */
async function ownConnection(url: URL, opts: GuardedRequestOptions, connect: buildConnector.connector, deadline: Deadline): Promise<GuardedResponse> {
  const client = new Client(url.origin, { connect, pipelining: 1 });
  const onAbort = () => void client.destroy().catch(() => {});
  deadline.signal.addEventListener('abort', onAbort, { once: true });
  try {
    return (await deadline.race(exchange(url, opts, client, deadline.signal, false))).response;
  } finally {
    deadline.signal.removeEventListener('abort', onAbort);
    void client.destroy().catch(() => {});
  }
}

/** Sends the request and reads the answer; `rest` is a discarded body still being read. */
async function exchange(
  url: URL,
  opts: GuardedRequestOptions,
  dispatcher: Dispatcher,
  signal: AbortSignal,
  keepConnection: boolean,
): Promise<{ response: GuardedResponse; rest?: Promise<unknown> }> {
  const res = await dispatcher.request({
    origin: url.origin,
    path: `${url.pathname}${url.search}`,
    method: opts.method ?? 'GET',
    headers: requestHeaders(opts.headers),
    body: opts.body,
    signal,
    headersTimeout: opts.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
    bodyTimeout: opts.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS,
  });
  try {
    return await readResponse(res, opts, keepConnection);
  } catch (err) {
    // After the headers a failure is never retried: the server did answer.
    throw toEgressError(err);
  }
}

/** Reads the body under the size limit (or discards it, with ignoreBody). */
async function readResponse(res: Dispatcher.ResponseData, opts: GuardedRequestOptions, keepConnection: boolean): Promise<{ response: GuardedResponse; rest?: Promise<unknown> }> {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
  const headers = flatHeaders(res.headers);
  const declared = Number(headers['content-length']);
  const declaredTooLarge = Number.isFinite(declared) && declared > maxBytes;
  if (opts.ignoreBody) {
    const response = { status: res.statusCode, headers, body: Buffer.alloc(0) };
    if (!keepConnection || declaredTooLarge) {
      discard(res.body);
      return { response };
    }
    // Read and discard the rest (bounded by maxBytes: beyond it the connection is closed).
    return { response, rest: res.body.dump({ limit: maxBytes }).catch(() => {}) };
  }
  if (declaredTooLarge) {
    discard(res.body);
    throw new EgressError('too_large', 'content_length', `Content-Length ${declared} exceeds ${maxBytes} bytes`);
  }
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    received += chunk.length;
    if (received > maxBytes) {
      discard(res.body); // stops reading: the connection is closed, not drained
      throw new EgressError('too_large', 'body', `body exceeds ${maxBytes} bytes`);
    }
    chunks.push(chunk);
  }
  return { response: { status: res.statusCode, headers, body: Buffer.concat(chunks, received) } };
}

/**
 * The caller's headers over the defaults, names in lower case: undici would send a
 * default `user-agent` and a caller's `User-Agent` as two headers.
 */
function requestHeaders(headers: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = { 'user-agent': 'PartnerSync/1', accept: '*/*' };
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value;
  return out;
}

/** Stops reading a body and closes its connection (the abort it reports is expected, not an error). */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {});
  body.destroy();
}

function flatHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** The whole-request deadline and the caller's abort, as one signal undici honours. */
class Deadline {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private readonly onCallerAbort = () => this.controller.abort(new EgressError('unreachable', 'aborted', 'request aborted'));
  /** Rejects with the abort's reason: undici honours an abort only once a request has a connection. */
  private readonly aborted: Promise<never>;

  constructor(
    private readonly callerSignal: AbortSignal | undefined,
    totalTimeoutMs: number,
  ) {
    this.timer = setTimeout(() => this.controller.abort(new EgressError('unreachable', 'deadline', `no complete response within ${totalTimeoutMs} ms`)), totalTimeoutMs);
    callerSignal?.addEventListener('abort', this.onCallerAbort, { once: true });
    this.aborted = new Promise<never>((_, reject) => {
      this.controller.signal.addEventListener('abort', () => reject(this.controller.signal.reason), { once: true });
    });
    this.aborted.catch(() => {});
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** `work`, or the abort if it comes first (the work's own later failure is then ignored). */
  race<T>(work: Promise<T>): Promise<T> {
    work.catch(() => {});
    return Promise.race([work, this.aborted]);
  }

  clear(): void {
    clearTimeout(this.timer);
    this.callerSignal?.removeEventListener('abort', this.onCallerAbort);
  }
}

/** Maps undici's and Node's errors to the egress vocabulary. */
function toEgressError(err: unknown): EgressError {
  if (err instanceof EgressError) return err;
  const e = err as Error & { code?: string };
  const code = e.code ?? '';
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return new EgressError('unreachable', 'connect_timeout', 'no connection within the connect time-out');
    case 'UND_ERR_HEADERS_TIMEOUT':
      return new EgressError('unreachable', 'headers_timeout', 'no response headers within the headers time-out');
    case 'UND_ERR_BODY_TIMEOUT':
      return new EgressError('unreachable', 'body_timeout', 'the body stalled longer than the body time-out');
    case 'UND_ERR_ABORTED':
    case 'ABORT_ERR':
      return new EgressError('unreachable', 'aborted', 'request aborted');
    case 'UND_ERR_SOCKET':
    case 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH':
    case 'ECONNRESET':
    case 'EPIPE':
      return new EgressError('unreachable', 'reset', `connection closed before the response was complete (${code})`);
  }
  const tls = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO|HOSTNAME/i.test(code) || /certificate|ssl|tls/i.test(e.message ?? '');
  return new EgressError('unreachable', tls ? 'tls' : 'connect', `request failed: ${code || e.message}`);
}
