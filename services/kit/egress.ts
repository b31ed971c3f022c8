/**
 * The egress guard: the one way a service makes an HTTP request to a URL a partner
 * gave us (photo fetches now, webhook deliveries later).
 *
 * operator-interface.md, "outbound address rule": the URL host must be a DNS name
 * (an IP literal is refused); the name is resolved, addresses outside the public
 * unicast ranges are dropped unless inside EGRESS_ALLOW_CIDRS, none left means
 * refused; the connection goes only to an address that passed, and this is redone
 * at every connection. Spec "Events": redirects are never followed.
 *
 * How the pinning works: the request is made with node:http/https (fetch cannot pin)
 * with a custom `lookup` function, so every new socket's address comes from `lookup`,
 * which resolves the name again, vets every answer and hands Node only the addresses
 * that passed. A name that resolved to a public address a moment ago and now resolves
 * to 127.0.0.1 (DNS rebinding) is therefore refused at the connection, not just at a
 * pre-check. The URL's host name stays the TLS server name (SNI and certificate
 * check) and the `Host` header. TLS trust is Node's own (NODE_EXTRA_CA_CERTS adds a CA).
 *
 * Connections: by default (photo fetches) no agent (`agent: false`): every request is
 * a new connection, closed after it. A caller that sends many requests to the same
 * partners (webhook deliveries) may opt in to an `EgressPool`: kept-alive HTTPS
 * connections whose every NEW socket is made through the same vetting `lookup` (with
 * the pool's rules), so a reused socket is always one that was vetted and pinned when
 * it was opened. Idle sockets are bounded (per pool key and in all), close after an
 * idle time-out, are not reused past a maximum age (a changed DNS answer is then
 * picked up), and are all closed by `close()`; new sockets resume TLS sessions.
 *
 * Scheme and port rules differ per caller and are passed in (`UrlRules`); the
 * address rules are the same for everyone.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Socket } from 'node:net';
import { SpanKind } from '@opentelemetry/api';
import { inSpan } from './telemetry';

/** Coarse outcome of a refused or failed request; callers map it to their public vocabulary. */
export type EgressErrorKind = 'forbidden_url' | 'unreachable' | 'too_large';

/**
 * Why a request did not produce a response. `kind` is coarse (what partners may be
 * told), `reason` is precise (for logs and tests; never shown to partners of webhooks,
 * which get one generic refusal).
 */
export class EgressError extends Error {
  override name = 'EgressError';
  constructor(
    readonly kind: EgressErrorKind,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** Scheme and port rules of one kind of outbound URL. */
export interface UrlRules {
  /** Allowed schemes without the colon. */
  schemes: readonly ('http' | 'https')[];
  /** Allowed ports (the scheme's default port counts as its number); undefined: any port. */
  ports?: readonly number[];
}

/** Photos: http and https, any port (operator-interface.md, "outbound address rule"). */
export const PHOTO_URL_RULES: UrlRules = { schemes: ['http', 'https'] };
/** Webhooks: https on 443 or 8443 only (spec: "Webhook endpoint"). */
export const WEBHOOK_URL_RULES: UrlRules = { schemes: ['https'], ports: [443, 8443] };

/** One resolved address. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address (default: `dns.lookup` with `all: true`). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver, as sockets use it (hosts file, search domains, both families). */
export const systemResolver: Resolver = async (hostname) => {
  const all = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return all.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

// ---------------------------------------------------------------------------
// Addresses

/**
 * IPv4 ranges that are not public unicast (IANA special-purpose registry, RFC 6890
 * and successors).
 */
const NON_PUBLIC_V4: readonly [string, number][] = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata lives here)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation TEST-NET-1
  ['192.31.196.0', 24], // AS112-v4
  ['192.52.193.0', 24], // AMT
  ['192.88.99.0', 24], // deprecated 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['192.175.48.0', 24], // direct delegation AS112
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation TEST-NET-2
  ['203.0.113.0', 24], // documentation TEST-NET-3
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and 255.255.255.255 broadcast
];

/**
 * IPv6: only global unicast (2000::/3) can be public; inside it these are not
 * (documentation, 6to4, Teredo and other IETF assignments). Everything outside
 * 2000::/3 — ::, ::1, ::/96 IPv4-compatible, 64:ff9b::/96 NAT64, 100::/64 discard,
 * fc00::/7 unique-local, fe80::/10 link-local, fec0::/10 site-local, ff00::/8
 * multicast — is refused. IPv4-mapped addresses (::ffff:a.b.c.d) are judged by the
 * IPv4 rules.
 */
const NON_PUBLIC_V6_IN_GLOBAL: readonly [string, number][] = [
  ['2001::', 23], // IETF protocol assignments, incl. Teredo 2001::/32
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4
  ['3fff::', 20], // documentation (RFC 9637)
];

function blockList(v4: readonly [string, number][], v6: readonly [string, number][]): net.BlockList {
  const list = new net.BlockList();
  for (const [a, p] of v4) list.addSubnet(a, p, 'ipv4');
  for (const [a, p] of v6) list.addSubnet(a, p, 'ipv6');
  return list;
}

const nonPublicV4 = blockList(NON_PUBLIC_V4, []);
const globalV6 = blockList([], [['2000::', 3]]);
const nonPublicV6 = blockList([], NON_PUBLIC_V6_IN_GLOBAL);

/** Expands an IPv6 address (no zone) into 8 numbers, or null if it is not one. */
function hextets(address: string): number[] | null {
  if (net.isIPv6(address) === false) return null;
  let text = address.toLowerCase();
  const tail: number[] = [];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const b = v4[1]!.split('.').map(Number);
    tail.push((b[0]! << 8) | b[1]!, (b[2]! << 8) | b[3]!);
    text = text.slice(0, -v4[1]!.length);
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1);
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((h) => parseInt(h, 16)));
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  const fill = 8 - left.length - right.length - tail.length;
  if (fill < 0 || (rest === undefined && fill !== 0)) return null;
  return [...left, ...new Array<number>(rest === undefined ? 0 : fill).fill(0), ...right, ...tail];
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d), else null. */
export function mappedIPv4(address: string): string | null {
  const h = hextets(address);
  if (!h || h.slice(0, 5).some((x) => x !== 0) || h[5] !== 0xffff) return null;
  return [h[6]! >> 8, h[6]! & 0xff, h[7]! >> 8, h[7]! & 0xff].join('.');
}

/** True if `address` (an IP, no zone) is public unicast: the only kind a partner URL may reach. */
export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return !nonPublicV4.check(address, 'ipv4');
  if (family !== 6) return false;
  const v4 = mappedIPv4(address);
  if (v4) return isPublicAddress(v4);
  return globalV6.check(address, 'ipv6') && !nonPublicV6.check(address, 'ipv6');
}

/** A compiled EGRESS_ALLOW_CIDRS list. */
export class CidrList {
  private readonly list = new net.BlockList();
  readonly size: number;

  constructor(cidrs: readonly string[]) {
    for (const c of cidrs) {
      const [addr, bits] = c.split('/');
      const family = net.isIP(addr ?? '');
      if (!family || bits === undefined) throw new Error(`not a CIDR: ${c}`);
      this.list.addSubnet(addr!, Number(bits), family === 6 ? 'ipv6' : 'ipv4');
    }
    this.size = cidrs.length;
  }

  /** True if `address` lies in one of the CIDRs (an IPv4-mapped address also matches IPv4 CIDRs). */
  contains(address: string): boolean {
    if (this.size === 0) return false;
    const family = net.isIP(address);
    if (!family) return false;
    if (this.list.check(address, family === 6 ? 'ipv6' : 'ipv4')) return true;
    const v4 = family === 6 ? mappedIPv4(address) : null;
    return v4 !== null && this.list.check(v4, 'ipv4');
  }
}

const compiled = new Map<string, CidrList>();
function cidrList(cidrs: readonly string[] | undefined): CidrList {
  const key = (cidrs ?? []).join(',');
  let list = compiled.get(key);
  if (!list) {
    list = new CidrList(cidrs ?? []);
    compiled.set(key, list);
  }
  return list;
}

/** True if a connection to `address` is allowed: public unicast, or inside the allow-list. */
export function isAllowedAddress(address: string, allowCidrs: readonly string[] = []): boolean {
  if (address.includes('%')) return false; // zoned (link-local) addresses are never allowed
  return isPublicAddress(address) || cidrList(allowCidrs).contains(address);
}

// ---------------------------------------------------------------------------
// URLs and names

/**
 * Checks what can be checked without the network: a parsable absolute URL, an
 * allowed scheme and port, no user-info, and a DNS name as host (IP literals,
 * including the numeric forms URL parsing normalises, e.g. http://2130706433/, are
 * refused). Returns the parsed URL; throws EgressError('forbidden_url').
 */
export function checkUrl(raw: string, rules: UrlRules): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new EgressError('forbidden_url', 'invalid_url', 'not an absolute URL');
  }
  const scheme = url.protocol.replace(/:$/, '');
  if (!(rules.schemes as readonly string[]).includes(scheme)) {
    throw new EgressError('forbidden_url', 'scheme', `scheme ${scheme} is not allowed (${rules.schemes.join(', ')})`);
  }
  if (url.username || url.password) throw new EgressError('forbidden_url', 'userinfo', 'credentials in the URL are not allowed');
  const host = bareHost(url);
  if (!host) throw new EgressError('forbidden_url', 'invalid_url', 'the URL has no host');
  if (net.isIP(host)) throw new EgressError('forbidden_url', 'ip_literal', 'the host must be a DNS name, not an IP address');
  const port = url.port ? Number(url.port) : scheme === 'https' ? 443 : 80;
  if (rules.ports && !rules.ports.includes(port)) {
    throw new EgressError('forbidden_url', 'port', `port ${port} is not allowed (${rules.ports.join(', ')})`);
  }
  return url;
}

/** The URL's host without IPv6 brackets. */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Resolves `hostname` and keeps only the addresses a connection may go to. Throws
 * EgressError('unreachable', 'dns') if the name does not resolve, and
 * EgressError('forbidden_url', 'no_allowed_address') if nothing is left.
 */
export async function resolveAllowed(
  hostname: string,
  opts: { allowCidrs?: readonly string[]; resolver?: Resolver } = {},
): Promise<ResolvedAddress[]> {
  let all: ResolvedAddress[];
  try {
    all = await (opts.resolver ?? systemResolver)(hostname);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new EgressError('unreachable', 'dns', `cannot resolve ${hostname} (${code})`);
  }
  if (all.length === 0) throw new EgressError('unreachable', 'dns', `${hostname} resolves to no address`);
  const allowed = all.filter((a) => isAllowedAddress(a.address, opts.allowCidrs));
  if (allowed.length === 0) {
    throw new EgressError('forbidden_url', 'no_allowed_address', `${hostname} resolves only to non-public addresses`);
  }
  return allowed;
}

/**
 * The whole pre-flight check for a URL (what webhook registration needs): the URL
 * rules, then a resolution with at least one allowed address.
 */
export async function checkUrlAndResolve(
  raw: string,
  rules: UrlRules,
  opts: { allowCidrs?: readonly string[]; resolver?: Resolver } = {},
): Promise<{ url: URL; addresses: ResolvedAddress[] }> {
  const url = checkUrl(raw, rules);
  return { url, addresses: await resolveAllowed(bareHost(url), opts) };
}

// ---------------------------------------------------------------------------
// Requests

export interface GuardedRequestOptions {
  /** Scheme/port rules of this kind of URL (PHOTO_URL_RULES, WEBHOOK_URL_RULES). */
  rules: UrlRules;
  /** EGRESS_ALLOW_CIDRS. */
  allowCidrs?: readonly string[];
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** Largest accepted response body, enforced while streaming; default 1 MiB. */
  maxBytes?: number;
  /** From the start of the request until the connection (and TLS handshake) is up; default 5000. */
  connectTimeoutMs?: number;
  /** Longest silence while waiting for or reading the response; default 10000. */
  readTimeoutMs?: number;
  /** Deadline for the whole request, so a server trickling bytes cannot hold it; default 60000. */
  totalTimeoutMs?: number;
  /**
   * Resolve as soon as the status line and headers arrive, without reading the body
   * (`body` is empty, the connection is closed): for callers that need only the
   * status, e.g. webhook deliveries, where any 2xx acknowledges whatever follows.
   */
  ignoreBody?: boolean;
  /** Aborts the request (e.g. at shutdown); the promise rejects with EgressError('unreachable', 'aborted'). */
  signal?: AbortSignal;
  /** Name resolution; default the system resolver. Injected by tests to play DNS rebinding. */
  resolver?: Resolver;
  /**
   * Kept-alive connections (opt-in; https URLs only, an http URL still gets a fresh
   * connection). New connections are vetted with the POOL's allowCidrs and resolver,
   * which replace `allowCidrs` and `resolver` above for this request.
   */
  pool?: EgressPool;
  /**
   * Which of the pool's connections the request may use, besides host and port (e.g.
   * the endpoint): requests with different keys never share a connection, and the
   * pool's per-key bound applies per key.
   */
  poolKey?: string;
}

export interface GuardedResponse {
  /** HTTP status, as answered: a 3xx is returned, never followed. */
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The address the connection went to (it passed the vetting). */
  remoteAddress: string | undefined;
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

/** A `lookup` for sockets: resolves the name again and hands Node only the addresses that pass. */
function vettingLookup(rules: { allowCidrs?: readonly string[]; resolver?: Resolver }): net.LookupFunction {
  return (hostname, options, callback) => {
    resolveAllowed(hostname, { allowCidrs: rules.allowCidrs, resolver: rules.resolver }).then(
      (allowed) => {
        const family = options.family === 4 || options.family === 6 ? options.family : 0;
        const usable = family ? allowed.filter((a) => a.family === family) : allowed;
        if (usable.length === 0) {
          callback(new EgressError('forbidden_url', 'no_allowed_address', `${hostname} has no allowed IPv${family} address`), '', 0);
        } else if (options.all) {
          callback(null, usable.map((a) => ({ address: a.address, family: a.family })));
        } else {
          callback(null, usable[0]!.address, usable[0]!.family);
        }
      },
      (err: Error) => callback(err as NodeJS.ErrnoException, '', 0),
    );
  };
}

async function guardedRequestUntraced(rawUrl: string, opts: GuardedRequestOptions): Promise<GuardedResponse> {
  const url = checkUrl(rawUrl, opts.rules);
  if (opts.signal?.aborted) throw new EgressError('unreachable', 'aborted', 'request aborted');
  const deadline = Date.now() + (opts.totalTimeoutMs ?? 60000);
  const pool = opts.pool && url.protocol === 'https:' && !opts.pool.closed ? opts.pool : undefined;
  // Without a pool: a fresh socket per request, so every connection goes through `lookup`.
  if (!pool) return requestOnce(url, opts, { agent: false, lookup: vettingLookup(opts), deadline });
  try {
    return await requestOnce(url, opts, { agent: pool.agent, lookup: pool.lookup, poolKey: opts.poolKey ?? '', deadline });
  } catch (err) {
    if (!(err instanceof StaleConnectionError)) throw err;
    // The server closed a kept-alive connection as the request went out on it, before
    // answering: once more, on a new connection (vetted the same way), within the deadline.
    return requestOnce(url, opts, { agent: false, lookup: pool.lookup, deadline });
  }
}

/** A request on a reused connection that the server had closed (nothing was answered). */
class StaleConnectionError extends EgressError {}

/** How one request connects. */
interface Via {
  /** `false`: a socket of its own, closed after the request. */
  agent: https.Agent | false;
  lookup: net.LookupFunction;
  poolKey?: string;
  /** Date.now() by which everything must be done (shared by a retry). */
  deadline: number;
}

function requestOnce(url: URL, opts: GuardedRequestOptions, via: Via): Promise<GuardedResponse> {
  const maxBytes = opts.maxBytes ?? 1024 * 1024;
  const connectTimeoutMs = opts.connectTimeoutMs ?? 5000;
  const readTimeoutMs = opts.readTimeoutMs ?? 10000;
  const totalTimeoutMs = opts.totalTimeoutMs ?? 60000;
  const https_ = url.protocol === 'https:';
  const pooled = via.agent !== false;
  if (opts.signal?.aborted) return Promise.reject(new EgressError('unreachable', 'aborted', 'request aborted'));
  const left = via.deadline - Date.now();
  if (left <= 0) return Promise.reject(new EgressError('unreachable', 'deadline', `no complete response within ${totalTimeoutMs} ms`));

  return new Promise<GuardedResponse>((resolve, reject) => {
    let settled = false;
    let watching = true;
    let responded = false;
    let failure: EgressError | null = null;
    const timers: NodeJS.Timeout[] = [];
    /** Stops the timers and the abort listener (the request is over, or its connection is back in the pool). */
    const unwatch = () => {
      if (!watching) return;
      watching = false;
      for (const t of timers) clearTimeout(t);
      opts.signal?.removeEventListener('abort', onAbort);
    };
    const settle = (err: EgressError | null, res?: GuardedResponse) => {
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolve(res!);
    };
    const finish = (err: EgressError | null, res?: GuardedResponse) => {
      unwatch();
      settle(err, res);
    };
    /** Ends the request with `err` (the first failure wins over the resulting socket error). */
    const fail = (err: EgressError) => {
      failure ??= err;
      req.destroy(err);
      finish(failure);
    };
    const onAbort = () => fail(new EgressError('unreachable', 'aborted', 'request aborted'));

    const body = opts.body === undefined ? undefined : Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(opts.body);
    const headers: Record<string, string> = { 'user-agent': 'PartnerSync/1', accept: '*/*', ...opts.headers };
    if (body) headers['content-length'] = String(body.length);
    const requestOptions: https.RequestOptions & { poolKey?: string } = {
      protocol: url.protocol,
      hostname: bareHost(url),
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      method: opts.method ?? 'GET',
      headers,
      agent: via.agent,
      lookup: via.lookup,
      ...(pooled ? { poolKey: via.poolKey ?? '' } : {}),
    };
    const req = (https_ ? https : http).request(requestOptions);

    timers.push(setTimeout(() => fail(new EgressError('unreachable', 'deadline', `no complete response within ${totalTimeoutMs} ms`)), left));
    const connectTimer = setTimeout(
      () => fail(new EgressError('unreachable', 'connect_timeout', `no connection within ${connectTimeoutMs} ms`)),
      Math.min(connectTimeoutMs, left),
    );
    timers.push(connectTimer);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    req.once('close', unwatch);

    req.on('socket', (socket: Socket) => {
      const connected = () => {
        clearTimeout(connectTimer);
        // On the request, not the socket: Node drops it when a kept-alive socket goes back to the pool.
        req.setTimeout(readTimeoutMs, () => fail(new EgressError('unreachable', 'read_timeout', `no data for ${readTimeoutMs} ms`)));
      };
      // A reused socket is connected (and was vetted when it was opened).
      if (req.reusedSocket) connected();
      else socket.once(https_ ? 'secureConnect' : 'connect', connected);
    });

    req.on('error', (err: Error) => {
      if (err instanceof EgressError) return finish(failure ?? err);
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (!failure && !responded && req.reusedSocket && (code === 'ECONNRESET' || code === 'EPIPE')) {
        return finish(new StaleConnectionError('unreachable', 'reset', `kept-alive connection closed by the server (${code})`));
      }
      const tls = /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO|HOSTNAME/i.test(code) || /certificate|ssl|tls/i.test(err.message);
      finish(failure ?? new EgressError('unreachable', tls ? 'tls' : 'connect', `request failed: ${code || err.message}`));
    });

    req.on('response', (res: http.IncomingMessage) => {
      responded = true;
      const length = Number(res.headers['content-length']);
      const declaredTooLarge = Number.isFinite(length) && length > maxBytes;
      res.on('error', (err: Error) => fail(err instanceof EgressError ? err : new EgressError('unreachable', 'reset', `response failed: ${err.message}`)));
      if (opts.ignoreBody) {
        settle(null, { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.alloc(0), remoteAddress: res.socket?.remoteAddress });
        if (!pooled || declaredTooLarge) {
          unwatch();
          res.destroy();
          if (pooled) req.destroy();
          return;
        }
        // Read and discard the rest (bounded by maxBytes and the time-outs, which stay
        // armed until the request closes), so the connection can serve the next request.
        let drained = 0;
        res.on('data', (chunk: Buffer) => {
          drained += chunk.length;
          if (drained > maxBytes) fail(new EgressError('too_large', 'body', `body exceeds ${maxBytes} bytes`));
        });
        return;
      }
      if (declaredTooLarge) {
        return fail(new EgressError('too_large', 'content_length', `Content-Length ${length} exceeds ${maxBytes} bytes`));
      }
      const chunks: Buffer[] = [];
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > maxBytes) return fail(new EgressError('too_large', 'body', `body exceeds ${maxBytes} bytes`));
        chunks.push(chunk);
      });
      res.on('end', () => {
        if (!res.complete) return fail(new EgressError('unreachable', 'reset', 'connection closed before the body was complete'));
        finish(null, { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), remoteAddress: res.socket?.remoteAddress });
        if (!pooled) res.socket?.destroy(); // a pooled socket goes back to its pool
      });
      res.on('aborted', () => fail(new EgressError('unreachable', 'reset', 'connection closed before the body was complete')));
    });

    req.end(body);
  });
}

// ---------------------------------------------------------------------------
// Kept-alive connections (opt-in)

export interface EgressPoolOptions {
  /** EGRESS_ALLOW_CIDRS: applied to every new connection of the pool. */
  allowCidrs?: readonly string[];
  /** Name resolution for new connections; default the system resolver. */
  resolver?: Resolver;
  /**
   * Connections per pool key (with host and port) at most, busy and idle together;
   * make it the caller's own concurrency bound per key, so a request never waits for one.
   */
  maxSocketsPerKey: number;
  /** Idle connections kept in all; one falling idle beyond that is closed. Default 64. */
  maxIdleSockets?: number;
  /** An idle connection is closed after this long (sooner if the server announces a shorter Keep-Alive). Default 30000. */
  idleTimeoutMs?: number;
  /** A connection this old is closed instead of being reused (a changed DNS answer is then picked up). Default 300000. */
  maxSocketAgeMs?: number;
  /** TLS sessions remembered for resumption on new connections (one per key, host and port). Default 256. */
  maxCachedSessions?: number;
}

/** The https.Agent methods the pool overrides (documented, missing from @types/node). */
interface AgentMethods {
  getName(options?: object): string;
  keepSocketAlive(socket: Socket): boolean;
  createConnection(...args: unknown[]): Socket;
}
const agentMethods = https.Agent.prototype as unknown as AgentMethods;
const OPENED_AT = Symbol('egress.openedAt');

/**
 * The pool's agent: keep-alive HTTPS whose new sockets are made with the vetting
 * `lookup` (in its options, which win over a request's), pooled per host, port,
 * TLS options and pool key.
 */
class VettingAgent extends https.Agent {
  constructor(
    options: https.AgentOptions,
    private readonly limits: { maxIdleSockets: number; maxSocketAgeMs: number },
  ) {
    super(options);
  }

  getName(options: { poolKey?: string } = {}): string {
    return `${agentMethods.getName.call(this, options)}:${options.poolKey ?? ''}`;
  }

  createConnection(...args: unknown[]): Socket {
    const socket = agentMethods.createConnection.apply(this, args) as Socket & { [OPENED_AT]?: number };
    socket[OPENED_AT] = Date.now();
    return socket;
  }

  /** Called when a socket falls idle: false closes it instead of pooling it. */
  keepSocketAlive(socket: Socket & { [OPENED_AT]?: number }): boolean {
    if (Date.now() - (socket[OPENED_AT] ?? 0) >= this.limits.maxSocketAgeMs) return false;
    let idle = 0;
    for (const list of Object.values(this.freeSockets)) idle += list?.length ?? 0;
    if (idle >= this.limits.maxIdleSockets) return false;
    return agentMethods.keepSocketAlive.call(this, socket);
  }
}

/**
 * Kept-alive HTTPS connections for a caller that sends many requests to the same
 * partners (webhook deliveries). The address rule holds as without it: every new
 * connection resolves the name again, is refused unless an address passes the rules
 * (this pool's allowCidrs) and is pinned to that address; a request only ever reuses
 * a connection that was vetted that way when it was opened. Pass it as
 * `guardedRequest(url, { pool, poolKey })`; `close()` at shutdown.
 */
export class EgressPool {
  /** @internal the agent requests go through. */
  readonly agent: https.Agent;
  /** @internal the vetting lookup of every new connection. */
  readonly lookup: net.LookupFunction;
  private isClosed = false;

  constructor(opts: EgressPoolOptions) {
    this.lookup = vettingLookup(opts);
    this.agent = new VettingAgent(
      {
        keepAlive: true,
        scheduling: 'lifo', // the most recently used first: surplus connections idle out
        maxSockets: opts.maxSocketsPerKey,
        maxFreeSockets: opts.maxSocketsPerKey,
        timeout: opts.idleTimeoutMs ?? 30_000,
        maxCachedSessions: opts.maxCachedSessions ?? 256,
        lookup: this.lookup,
      },
      { maxIdleSockets: opts.maxIdleSockets ?? 64, maxSocketAgeMs: opts.maxSocketAgeMs ?? 300_000 },
    );
  }

  /** True after close(): requests then make connections of their own again. */
  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * Closes every connection, idle or busy (at shutdown, after in-flight requests were
   * drained); returns how many there were.
   */
  close(): number {
    this.isClosed = true;
    let open = 0;
    for (const set of [this.agent.sockets, this.agent.freeSockets]) for (const list of Object.values(set)) open += list?.length ?? 0;
    this.agent.destroy();
    return open;
  }
}
