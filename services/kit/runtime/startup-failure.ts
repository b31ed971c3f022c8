/**
 * Start-up failures an operator can fix, as one line naming the variable to change:
 * a port in use (PORT, INTERNAL_PORT, HEALTH_PORT, an explicitly set METRICS_PORT), a
 * database or NATS server that cannot be reached (DATABASE_URL or the service's own
 * `<SERVICE>_DATABASE_URL`, NATS_URL; never with a password), an embedded database
 * that cannot be opened under DATA_DIR. run-process.ts prints the line on stderr and
 * exits 1; anything else still reaches the log with its stack.
 */
import { ConfigError } from '../base';
import { ownDatabaseUrl, type Database, type DatabaseSettings } from '../db';
import { postgresUrlWithoutSecrets } from '../db';

/** A start-up failure outside the configuration's syntax; the message is one line naming the variable. */
export class StartupError extends Error {
  override name = 'StartupError';
}

/** A one-shot role (`after-restore`) will not run: runOneShot prints `<role> refused: <message>` and exits 1. */
export class OneShotRefusal extends Error {
  override name = 'OneShotRefusal';
}

/** Prints a StartupError as one line on stderr and exits 1; rethrows anything else. */
export function exitOnStartupError(err: unknown): never {
  if (err instanceof StartupError) {
    process.stderr.write(`start-up failed: ${err.message}\n`);
    process.exit(1);
  }
  throw err;
}

/** The error's own words on one line: its message, else its code, else its first inner error's (AggregateError). */
export function reasonOf(err: unknown): string {
  const e = err as { message?: string; code?: string; errors?: unknown[] };
  const text = e?.message || (Array.isArray(e?.errors) && e.errors.length > 0 ? reasonOf(e.errors[0]) : '') || e?.code || String(err);
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * Binds a port through `bind`; a port already in use, not allowed or on an address
 * this machine lacks becomes a ConfigError naming `variable`.
 */
export async function bindingPort<T>(variable: string, port: number, bind: () => Promise<T>): Promise<T> {
  try {
    return await bind();
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { address?: string };
    if (e.code === 'EADDRINUSE') throw new ConfigError(`${variable} ${port} is already in use (set ${variable} to a free port)`);
    if (e.code === 'EACCES') throw new ConfigError(`${variable} ${port} may not be bound by this user (set ${variable} to a port above 1023)`);
    if (e.code === 'EADDRNOTAVAIL') {
      throw new ConfigError(`${variable} ${port} cannot be bound on ${e.address ?? 'that address'}: not an address of this machine (check HOST and INTERNAL_HOST)`);
    }
    throw err;
  }
}

/** A postgres:// or nats:// URL fit for a log or an error line: no password, no query (which may carry one). */
export function urlWithoutSecrets(url: string): string {
  if (/^postgres(ql)?:\/\//i.test(url)) {
    try {
      return postgresUrlWithoutSecrets(url);
    } catch {
      return '[unparseable URL]';
    }
  }
  return url
    .split(',')
    .map((one) => {
      try {
        const u = new URL(one);
        u.password = '';
        u.search = '';
        return u.toString();
      } catch {
        return '[unparseable URL]';
      }
    })
    .join(',');
}

/**
 * Checks, with one `select 1` each, every PostgreSQL URL this process connects with
 * first (each hosted service's, or the administrator's DATABASE_URL when it sets up the
 * services' roles: their own URLs log in only once it has), so an unreachable server
 * or a refused login fails start-up with one line naming the variable holding the URL.
 */
export async function checkDatabaseReachable(db: Database, cfg: DatabaseSettings, hosted: readonly string[]): Promise<void> {
  if (db.kind !== 'postgresql') return;
  const checks = new Map<string, { variable: string; ping: () => Promise<unknown> }>();
  for (const service of hosted) {
    if ((db.roles?.serviceUrls as ReadonlyMap<string, string> | undefined)?.has(service)) continue; // provisioned by the administrator first
    const own = ownDatabaseUrl(cfg, service);
    const url = own ?? cfg.databaseUrl;
    if (!url || checks.has(url)) continue;
    const sql = db.sqlFor(service);
    checks.set(url, { variable: own ? `${service.toUpperCase()}_DATABASE_URL` : 'DATABASE_URL', ping: () => sql`select 1` });
  }
  const admin = db.roles?.admin;
  if (admin && cfg.databaseUrl && !checks.has(cfg.databaseUrl)) checks.set(cfg.databaseUrl, { variable: 'DATABASE_URL', ping: () => admin`select 1` });
  await Promise.all(
    [...checks].map(async ([url, { variable, ping }]) => {
      try {
        await ping();
      } catch (err) {
        throw new StartupError(`cannot use the PostgreSQL server at ${variable} (${urlWithoutSecrets(url)}): ${reasonOf(err)}`, { cause: err });
      }
    }),
  );
}
