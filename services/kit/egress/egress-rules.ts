/**
 * The egress rules: which URLs and which addresses an outbound request to a
 * partner-supplied URL may reach (docs/security/threat-model.md, "Egress"). No I/O but
 * name resolution; the client that applies them at every connection is egress.ts,
 * through its vetting connector (egress-connector.ts).
 *
 * - The URL: an absolute URL with an allowed scheme and port (per kind of URL,
 *   `UrlRules`), no user-info, and a DNS name as host: an IP literal is refused, in
 *   every form URL parsing accepts.
 * - The addresses: the name is resolved, every answer that is not public unicast is
 *   dropped unless it lies inside EGRESS_ALLOW_CIDRS, and nothing left means refused.
 *   IPv4-mapped IPv6 answers are judged by the IPv4 rules; zoned addresses never pass.
 */
import dns from 'node:dns';
import net from 'node:net';
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

/** Photos: http and https, any port (docs/catalog.md, "Photos"). */
export const PHOTO_URL_RULES: UrlRules = { schemes: ['http', 'https'] };
/** Webhooks: https on 443 or 8443 only (docs/partner-sync-api-v1.md, "Webhook endpoint"). */
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
export function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Resolves `hostname` and keeps only the addresses a connection may go to. Throws
 * EgressError('unreachable', 'dns') if the name does not resolve, and
 * EgressError('forbidden_url', 'no_allowed_address') if nothing is left.
 */
export async function resolveAllowed(hostname: string, opts: { allowCidrs?: readonly string[]; resolver?: Resolver } = {}): Promise<ResolvedAddress[]> {
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

/**
 * A `lookup` for sockets (net.connect / tls.connect): resolves the name at the moment
 * the socket is opened, vets every answer and hands Node only the addresses that
 * passed, which Node then connects to as they are (no second resolution), so the
 * connection is pinned to a vetted address. A refusal fails the socket with the
 * EgressError itself.
 */
export function vettingLookup(rules: { allowCidrs?: readonly string[]; resolver?: Resolver }): net.LookupFunction {
  return (hostname, options, callback) => {
    resolveAllowed(hostname, { allowCidrs: rules.allowCidrs, resolver: rules.resolver }).then(
      (allowed) => {
        const family = options.family === 4 || options.family === 6 ? options.family : 0;
        const usable = family ? allowed.filter((a) => a.family === family) : allowed;
        if (usable.length === 0) {
          callback(new EgressError('forbidden_url', 'no_allowed_address', `${hostname} has no allowed IPv${family} address`), '', 0);
        } else if (options.all) {
          callback(
            null,
            usable.map((a) => ({ address: a.address, family: a.family })),
          );
        } else {
          callback(null, usable[0]!.address, usable[0]!.family);
        }
      },
      (err: Error) => callback(err as NodeJS.ErrnoException, '', 0),
    );
  };
}
