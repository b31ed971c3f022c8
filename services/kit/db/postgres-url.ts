/**
 * PostgreSQL connection URLs, single- or multi-host
 * (`postgres://user:pass@h1:5432,h2:5432/db?target_session_attrs=read-write`), read the
 * way postgres.js reads them (postgres/src/index.js `parseUrl`: the host list is the
 * authority after the `@`, split on commas; the rest is an ordinary URL). WHATWG `new URL`
 * refuses a host list, so every place that reads a DATABASE_URL goes through here.
 */

/** One host of the list; `port` is the URL's text ('' when absent: PostgreSQL's 5432). */
export interface PostgresHost {
  host: string;
  port: string;
}

export interface PostgresUrl {
  /** 'postgres' or 'postgresql' (without the colon). */
  scheme: string;
  /** Decoded user name ('' when absent). */
  username: string;
  /** Decoded password ('' when absent). */
  password: string;
  /** Every host, in the order postgres.js tries them. */
  hosts: PostgresHost[];
  /** Decoded database name ('' when absent: postgres.js then uses the user name). */
  database: string;
  searchParams: URLSearchParams;
}

/** The `target_session_attrs` values postgres.js accepts (postgres/src/index.js `tsa`). */
export const TARGET_SESSION_ATTRS = ['read-write', 'read-only', 'primary', 'standby', 'prefer-standby'] as const;

/** Parses `raw`; throws a TypeError (from `new URL`, or naming what is wrong) for an unusable URL. */
export function parsePostgresUrl(raw: string): PostgresUrl {
  const schemeEnd = raw.indexOf('://');
  if (schemeEnd < 0) throw new TypeError('not a URL');
  const authority = raw.slice(schemeEnd + 3).split(/[/?#]/)[0]!;
  const at = authority.lastIndexOf('@');
  const hostList = authority.slice(at + 1);
  const entries = hostList.split(',');
  // One ordinary URL with the first host stands in for the rest of the text.
  const u = new URL(raw.slice(0, schemeEnd + 3) + authority.slice(0, at + 1) + entries[0] + raw.slice(schemeEnd + 3 + authority.length));
  const hosts = entries.map((entry, i) => {
    if (i === 0) return { host: u.hostname, port: u.port };
    const one = new URL(`postgres://${entry}`);
    if (one.username || one.pathname !== '') throw new TypeError(`bad host ${JSON.stringify(entry)} in the host list`);
    return { host: one.hostname, port: one.port };
  });
  if (hosts.some((h) => h.host === '')) throw new TypeError('empty host in the host list');
  const tsa = u.searchParams.get('target_session_attrs');
  if (tsa !== null && !(TARGET_SESSION_ATTRS as readonly string[]).includes(tsa)) {
    throw new TypeError(`target_session_attrs must be one of ${TARGET_SESSION_ATTRS.join(', ')} (got ${JSON.stringify(tsa)})`);
  }
  return {
    scheme: u.protocol.replace(/:$/, ''),
    username: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    hosts,
    database: decodeURIComponent(u.pathname.slice(1)),
    searchParams: u.searchParams,
  };
}

/** `host:port,host:port` (port omitted where the URL has none), for logs. */
export function hostList(url: PostgresUrl): string {
  return url.hosts.map((h) => (h.port ? `${h.host}:${h.port}` : h.host)).join(',');
}

/** The URL fit for a log or an error line: no password, no query (which may carry one). */
export function postgresUrlWithoutSecrets(raw: string): string {
  const u = parsePostgresUrl(raw);
  const user = u.username ? `${encodeURIComponent(u.username)}@` : '';
  return `${u.scheme}://${user}${hostList(u)}/${encodeURIComponent(u.database)}`;
}
