/**
 * postgres.js factory for every service.
 *
 * - Real PostgreSQL (DATABASE_URL): one postgres() instance per service, pool of
 *   DATABASE_POOL_SIZE connections.
 * - Embedded default (no DATABASE_URL): PGlite served on loopback; it has ONE session,
 *   so every service in the process shares ONE instance with `max: 1`
 *   (stack-notes.md: a second connection is reset).
 *
 * Services receive a `Database` and never know which one they got.
 */
import postgres from 'postgres';
import { join } from 'node:path';
import type { Logger } from './logger';
import { startEmbeddedPostgres, EmbeddedPostgres } from './embedded-postgres';

/** The postgres.js instance type every query module uses (tagged templates only). */
export type Sql = postgres.Sql<Record<string, never>>;
/** A transaction handle inside `sql.begin`. */
export type Tx = postgres.TransactionSql<Record<string, never>>;

/** Creates a postgres.js instance with the project's defaults. */
export function createSql(url: string, opts: { max?: number; applicationName?: string; asyncCommit?: boolean } = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 10,
    onnotice: () => {},
    idle_timeout: 60,
    connect_timeout: 10,
    connection: {
      application_name: opts.applicationName ?? 'psync',
      ...(opts.asyncCommit ? { synchronous_commit: 'off' } : {}),
    },
    // bigint columns come back as strings (postgres.js default): convert where a number is meant.
  }) as unknown as Sql;
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
  /** Cheap liveness probe (`select 1`). */
  ping(): Promise<void>;
  /** Ends every instance and stops the embedded server, if any. */
  close(): Promise<void>;
}

/** Opens the database the configuration points at and logs which backend is in use. */
export async function openDatabase(
  cfg: { databaseUrl?: string; dataDir: string; databasePoolSize: number },
  log: Logger,
): Promise<Database> {
  if (cfg.databaseUrl) {
    const url = cfg.databaseUrl;
    const instances = new Map<string, Sql>();
    // postgres.js connects lazily: an instance nobody queries opens no connection.
    const instance = (service: string, asyncCommit: boolean): Sql => {
      const name = asyncCommit ? `psync-${service}-async-commit` : `psync-${service}`;
      let s = instances.get(name);
      if (!s) {
        s = createSql(url, { max: cfg.databasePoolSize, applicationName: name, asyncCommit });
        instances.set(name, s);
      }
      return s;
    };
    const sqlFor = (service: string): Sql => instance(service, false);
    const u = new URL(url);
    log.info({ backend: 'postgresql', host: u.hostname, port: u.port || '5432', database: u.pathname.slice(1) }, 'database: PostgreSQL server');
    return {
      kind: 'postgresql',
      sqlFor,
      asyncCommitSqlFor: (service) => instance(service, true),
      async ping() {
        await sqlFor('health')`select 1`;
      },
      async close() {
        await Promise.all([...instances.values()].map((s) => s.end({ timeout: 5 })));
      },
    };
  }
  const dir = join(cfg.dataDir, 'postgres');
  const embedded: EmbeddedPostgres = await startEmbeddedPostgres(dir);
  const shared = createSql(embedded.url, { max: 1, applicationName: 'psync-embedded' });
  log.info({ backend: 'embedded', data_dir: dir }, 'database: embedded PGlite (one shared connection)');
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
