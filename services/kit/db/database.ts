/**
 * postgres.js factory for every service.
 *
 * - Real PostgreSQL (DATABASE_URL or any `<SERVICE>_DATABASE_URL`): one postgres()
 *   instance per service, pool of DATABASE_POOL_SIZE connections, connecting with
 *   the service's own URL when set (its least-privilege role, database-roles.ts),
 *   else with DATABASE_URL (the all-in-one on one shared role).
 * - Embedded default (none of them set): PGlite served on a Unix socket in DATA_DIR; it has ONE session,
 *   so every service in the process shares ONE instance with `max: 1`
 *   (PGlite resets a second connection).
 *
 * Services receive a `Database` and never know which one they got.
 */
import postgres from 'postgres';
import { join } from 'node:path';
import { logEvent, type Logger } from '../base';
import { startEmbeddedPostgres, EmbeddedPostgres } from './embedded-postgres';
import { makePrivateDir } from '../base';
import { parsePostgresUrl } from './postgres-url';
import { instrumentSql } from './sql-telemetry';
import type { ServiceName } from '../base';

/** The postgres.js instance type every query module uses (tagged templates only). */
export type Sql = postgres.Sql<Record<string, never>>;
/** A transaction handle inside `sql.begin`. */
export type Tx = postgres.TransactionSql<Record<string, never>>;
/**
 * True when `err` says that the connection a statement was sent on is gone (postgres.js'
 * CONNECTION_CLOSED / CONNECTION_DESTROYED …, a socket error, a FATAL from the server),
 * not that the statement failed on a live connection. A reserved connection that is gone
 * must not be released: postgres.js has already put it back in the pool as closed (it
 * reconnects when next used), and `release()` would list the dead connection as open,
 * so every later query handed to it would fail.
 */
export function connectionLost(err: unknown): boolean {
  if (err instanceof postgres.PostgresError) return err.severity === 'FATAL' || err.severity === 'PANIC';
  // postgres.js' connection errors and Node's socket errors carry `errno`; its other own errors (a bad parameter …) do not.
  return typeof err === 'object' && err !== null && 'errno' in err;
}

/** Connections closed so far, per instance made by createSql (connectionsClosed). */
const closedConnections = new WeakMap<Sql, { count: number }>();

/** Creates a postgres.js instance with the project's defaults, its statements measured (sql-telemetry.ts). */
export function createSql(url: string, opts: { max?: number; applicationName?: string; asyncCommit?: boolean; path?: string } = {}): Sql {
  const closed = { count: 0 };
  const sql: Sql = instrumentSql(
    postgres(url, {
      ...(opts.path ? { path: opts.path } : {}),
      max: opts.max ?? 10,
      onnotice: () => {},
      onclose: () => void closed.count++,
      idle_timeout: 60,
      connect_timeout: 10,
      connection: {
        application_name: opts.applicationName ?? 'psync',
        ...(opts.asyncCommit ? { synchronous_commit: 'off' } : {}),
      },
      // bigint columns come back as strings (postgres.js default): convert where a number is meant.
    }),
  );
  closedConnections.set(sql, closed);
  return sql;
}

/**
 * How many connections of `sql` have closed so far (for whatever reason: idle timeout,
 * server restart, a terminated backend); undefined for an instance createSql did not make.
 */
export function connectionsClosed(sql: Sql): number | undefined {
  return closedConnections.get(sql)?.count;
}

/** The database settings of config.ts that openDatabase reads. */
export interface DatabaseSettings {
  /** The shared URL: every service's role in the all-in-one, the administrator when per-service URLs are set too. */
  databaseUrl?: string;
  identityDatabaseUrl?: string;
  catalogDatabaseUrl?: string;
  calendarDatabaseUrl?: string;
  notificationsDatabaseUrl?: string;
  dataDir: string;
  databasePoolSize: number;
}

/** Which setting holds each service's own URL (`<SERVICE>_DATABASE_URL`). */
const SERVICE_URL_SETTINGS = {
  identity: 'identityDatabaseUrl',
  catalog: 'catalogDatabaseUrl',
  calendar: 'calendarDatabaseUrl',
  notifications: 'notificationsDatabaseUrl',
} as const satisfies Record<ServiceName, keyof DatabaseSettings>;

/** Every service, in the order of SERVICE_URL_SETTINGS. */
export const SERVICE_NAMES = Object.keys(SERVICE_URL_SETTINGS) as ServiceName[];

/** The service's own `<SERVICE>_DATABASE_URL`, if set (not the DATABASE_URL fallback). */
export function ownDatabaseUrl(cfg: DatabaseSettings, service: string): string | undefined {
  const key = (SERVICE_URL_SETTINGS as Record<string, keyof DatabaseSettings | undefined>)[service];
  return key ? (cfg[key] as string | undefined) || undefined : undefined;
}

/** The URL `service` connects with: its own, else DATABASE_URL; undefined on the embedded default. */
export function databaseUrlFor(cfg: DatabaseSettings, service: string): string | undefined {
  return ownDatabaseUrl(cfg, service) ?? (cfg.databaseUrl || undefined);
}

/**
 * True when the process runs on a PostgreSQL server rather than the embedded PGlite:
 * DATABASE_URL or any per-service URL is set (a catalog process may have only
 * CATALOG_DATABASE_URL).
 */
export function usesPostgresServer(cfg: DatabaseSettings): boolean {
  return Boolean(cfg.databaseUrl) || SERVICE_NAMES.some((s) => ownDatabaseUrl(cfg, s) !== undefined);
}

/** The embedded database's Unix socket: `DATA_DIR/postgres.sock` (embedded-postgres.ts). */
export function embeddedSocketPath(dataDir: string): string {
  return join(dataDir, 'postgres.sock');
}

/** Where the services of one process get their SQL connection from. */
export interface Database {
  /** 'postgresql' (a real server) or 'embedded' (PGlite). */
  readonly kind: 'postgresql' | 'embedded';
  /** The postgres.js instance for `service` (the shared one in embedded mode). */
  sqlFor(service: string): Sql;
  /**
   * A second instance for `service` whose sessions run with `synchronous_commit = off`:
   * a commit returns before its WAL record is flushed, so row locks are released
   * ~1–2 ms sooner, and a database crash can lose the last few hundred milliseconds
   * of its commits (never corrupt them). Only for writes whose loss is harmless —
   * the rate-limit counters (docs/decisions.md "Rate-limit counters"). The shared
   * instance in embedded mode.
   */
  asyncCommitSqlFor(service: string): Sql;
  /**
   * Set when DATABASE_URL and per-service URLs are both given: the administrator's
   * connection and each such service's own URL, for database-roles.ts to create and
   * check the roles before migrations run.
   */
  readonly roles?: { admin: Sql; serviceUrls: ReadonlyMap<ServiceName, string> };
  /** Cheap liveness probe (`select 1`) over a URL this process uses (its first hosted service's). */
  ping(): Promise<void>;
  /** Ends every instance and stops the embedded server, if any. */
  close(): Promise<void>;
}

/**
 * Opens the database the configuration points at and logs which backend is in use.
 * `hosted` names the services this process runs: each must have a URL (its own or
 * DATABASE_URL), and the first one's URL is the one `ping()` uses.
 */
export async function openDatabase(cfg: DatabaseSettings, log: Logger, hosted: readonly string[] = []): Promise<Database> {
  if (usesPostgresServer(cfg)) {
    const urlOf = (service: string): string => {
      const u = databaseUrlFor(cfg, service);
      if (!u) throw new Error(`no database URL for the ${service} service: set ${service.toUpperCase()}_DATABASE_URL or DATABASE_URL`);
      return u;
    };
    for (const service of hosted) urlOf(service);
    const withOwnUrl = SERVICE_NAMES.filter((s) => ownDatabaseUrl(cfg, s) !== undefined);
    const pingUrl = hosted[0] !== undefined ? urlOf(hosted[0]) : (cfg.databaseUrl ?? urlOf(withOwnUrl[0]!));
    const instances = new Map<string, Sql>();
    // postgres.js connects lazily: an instance nobody queries opens no connection.
    const instance = (name: string, url: string, max: number, asyncCommit = false): Sql => {
      let s = instances.get(name);
      if (!s) {
        s = createSql(url, { max, applicationName: name, asyncCommit });
        instances.set(name, s);
      }
      return s;
    };
    const sqlFor = (service: string): Sql => instance(`psync-${service}`, urlOf(service), cfg.databasePoolSize);
    const adminUrl = cfg.databaseUrl;
    const userOf = (url: string) => parsePostgresUrl(url).username;
    // Services with a role of their own. A DATABASE_URL naming the same user as a
    // service's URL (a service Deployment given its own URL under both names) is that
    // role, not an administrator: nothing to set up for it.
    const own = new Map<ServiceName, string>();
    for (const s of withOwnUrl) {
      const u = ownDatabaseUrl(cfg, s)!;
      if (!(adminUrl && userOf(adminUrl) === userOf(u))) own.set(s, u);
    }
    const u = parsePostgresUrl(pingUrl);
    log.info(
      {
        event: logEvent('database.opened'),
        backend: 'postgresql',
        host: u.hosts.map((h) => h.host).join(','),
        port: u.hosts.map((h) => h.port || '5432').join(','),
        database: u.database,
        target_session_attrs: u.searchParams.get('target_session_attrs') ?? undefined,
        service_urls: withOwnUrl,
      },
      'database: PostgreSQL server',
    );
    return {
      kind: 'postgresql',
      sqlFor,
      asyncCommitSqlFor: (service) => instance(`psync-${service}-async-commit`, urlOf(service), cfg.databasePoolSize, true),
      ...(adminUrl && own.size > 0 ? { roles: { admin: instance('psync-admin', adminUrl, 1), serviceUrls: own } } : {}),
      async ping() {
        await instance('psync-health', pingUrl, cfg.databasePoolSize)`select 1`;
      },
      async close() {
        await Promise.all([...instances.values()].map((s) => s.end({ timeout: 5 })));
      },
    };
  }
  makePrivateDir(cfg.dataDir);
  const dir = join(cfg.dataDir, 'postgres');
  const embedded: EmbeddedPostgres = await startEmbeddedPostgres(dir, { socket: embeddedSocketPath(cfg.dataDir) });
  const shared = createSql(embedded.url, { max: 1, applicationName: 'psync-embedded', path: embedded.path });
  log.info(
    { event: logEvent('database.opened'), backend: 'embedded', data_dir: dir, socket: embedded.path, narrowed_at_open: embedded.narrowed },
    'database: embedded PGlite (one shared connection over a Unix socket only this account can open)',
  );
  return {
    kind: 'embedded',
    sqlFor: () => shared,
    asyncCommitSqlFor: () => shared,
    async ping() {
      await shared`select 1`;
    },
    async close() {
      await shared.end({ timeout: 5 });
      await embedded.stop();
    },
  };
}
