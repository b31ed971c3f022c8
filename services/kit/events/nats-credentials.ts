/**
 * How a process proves itself to NATS (docs/operations.md, "NATS authentication"):
 * - user and password in NATS_URL (`nats://calendar:secret@nats:4222`), or
 * - NATS_CREDS, the path of a `.creds` file (a user JWT and its nkey seed, as `nsc`
 *   writes them), read again at every (re)connect so a rotated file takes effect.
 * The server's authorization block then lets each role publish and subscribe only to
 * its own subjects. With neither set the connection is anonymous, as on a development
 * server; the in-process bus needs none of it.
 *
 * nats.js does not take credentials from a server URL (it keeps only host and port,
 * and reads digits after `user:` as the port), so they are taken out of the URL here
 * and passed as options.
 */

/** A NATS_URL or NATS_CREDS that cannot be used; config.ts reports it as a ConfigError. */
export class NatsCredentialsError extends Error {
  override name = 'NatsCredentialsError';
}

/** NATS_URL split into credential-free server URLs and the credentials it carried. */
export interface NatsServers {
  servers: string[];
  user?: string;
  pass?: string;
}

/** Splits a NATS_URL (comma-separated URLs) into servers and user/password; throws NatsCredentialsError if the URLs disagree. */
export function natsServers(url: string, name = 'NATS_URL'): NatsServers {
  const servers: string[] = [];
  const found = new Set<string>();
  let user: string | undefined;
  let pass: string | undefined;
  for (const one of url.split(',').map((s) => s.trim())) {
    let u: URL;
    try {
      u = new URL(one.includes('://') ? one : `nats://${one}`);
    } catch {
      throw new NatsCredentialsError(`${name} must be comma-separated URLs (nats, tls, ws, wss)`);
    }
    if (!['nats:', 'tls:', 'ws:', 'wss:'].includes(u.protocol)) {
      throw new NatsCredentialsError(`${name} must use one of nats, tls, ws, wss, got ${u.protocol.replace(/:$/, '')}`);
    }
    if (u.username !== '' || u.password !== '') {
      user = decodeURIComponent(u.username);
      pass = decodeURIComponent(u.password);
      found.add(JSON.stringify([user, pass]));
    }
    servers.push(`${u.protocol}//${u.host}`);
  }
  if (found.size > 1) throw new NatsCredentialsError(`${name}: every URL that carries credentials must carry the same user and password`);
  if (user === '') throw new NatsCredentialsError(`${name}: a password needs a user name (nats://user:password@host:4222)`);
  return user === undefined ? { servers } : { servers, user, pass: pass ?? '' };
}

const CREDS_JWT = /-{3,}BEGIN NATS USER JWT-{3,}\s*\n\s*\S+\s*\n\s*-{3,}/;
const CREDS_SEED = /-{3,}BEGIN USER NKEY SEED-{3,}\s*\n\s*SU[A-Z2-7]+\s*\n\s*-{3,}/;

/** Throws NatsCredentialsError unless `text` (a `.creds` file read from `path`) holds a user JWT and a user nkey seed. */
export function checkCredsFile(text: string, path: string, name = 'NATS_CREDS'): void {
  if (!CREDS_JWT.test(text) || !CREDS_SEED.test(text)) {
    throw new NatsCredentialsError(`${name} (${path}) is not a NATS .creds file (a "BEGIN NATS USER JWT" block and a "BEGIN USER NKEY SEED" block)`);
  }
}

/** Whether `hostname` (as URL.hostname gives it) is on loopback: localhost, 127.0.0.0/8, ::1. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(h) || h === '::1' || /^::ffff:127(\.\d{1,3}){3}$/.test(h);
}

/**
 * The servers of NATS_URL that a process would reach anonymously off loopback: none
 * when it signs in (a user or token in the URL, or NATS_CREDS) or every server is on
 * loopback (a development server on the same machine). Such a connection means anyone
 * who reaches the server can read and publish the bus's events; the bus warns at start
 * and sets psync_bus_anonymous (bus-nats.ts).
 */
export function anonymousRemoteServers(url: string, credsFile: string | undefined): string[] {
  const { servers, user } = natsServers(url);
  if (credsFile || user !== undefined) return [];
  return servers.filter((s) => !isLoopbackHost(new URL(s).hostname));
}
