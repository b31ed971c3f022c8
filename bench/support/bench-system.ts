/**
 * The system a calendar benchmark measures: its own scratch database on the server of
 * DATABASE_URL, the all-in-one process on free ports (accepting the test credentials,
 * test/support/credentials.ts), and Connect clients of the internal services. Shared
 * by bench/calendar.ts, bench/calendar-stream.ts and bench/blocks-history.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { createSql, type Sql } from '../../services/kit/db';
import { credentialInterceptor, testCallerEnv } from '../../test/support/credentials';
import { ROOT } from '../../test/support/process';
import { freePort } from '../../test/support/system';
import { samplePeakRss, watchPeakRss } from './results';

/** A database created for one benchmark run; `drop()` removes it (sessions terminated). */
export interface BenchDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** Creates `psync_bench_<random>` (or `<prefix>_<random>`) on the server of DATABASE_URL. */
export async function createBenchDatabase(prefix = 'psync_bench'): Promise<BenchDatabase> {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) throw new Error('set DATABASE_URL to a PostgreSQL server (the benchmark creates and drops its own database)');
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = createSql(adminUrl, { max: 1 });
  await admin.unsafe(`create database ${name}`);
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    name,
    async drop() {
      try {
        await admin.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await admin.end({ timeout: 5 });
      }
    },
  };
}

/**
 * The environment of a benchmark's whole system (`main.ts`) on `databaseUrl`:
 * fresh signing and encryption keys, a bus prefix of its own (`<busPrefix><hex>`), the
 * rate limit and token lifetime out of the way of the load, metrics on a free port (the
 * default 9464 may be taken by another system on this machine). `extra` wins.
 */
export function fullSystemEnv(databaseUrl: string, busPrefix: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'info',
    RATE_LIMIT_PER_HOUR: '1000000',
    TOKEN_TTL_SECONDS: '3600',
    TOKEN_SIGNING_KEY: randomBytes(32).toString('base64'),
    SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    BUS_PREFIX: `${busPrefix}${randomBytes(3).toString('hex')}`,
    METRICS_PORT: '0',
    ...extra,
  };
}

export interface BenchSystem {
  gateway: string;
  internal: string;
  child: ChildProcess;
  identity: Client<typeof IdentityService>;
  catalog: Client<typeof CatalogService>;
  calendar: Client<typeof CalendarService>;
  /** A postgres.js instance on the benchmark's database (`max` connections). */
  sql: Sql;
  /** Stops the process and closes the clients and the SQL instance. */
  stop(): Promise<void>;
}

/** Polls /readyz until 200 (or the process exits, or 120 s pass). */
async function waitReady(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 240; i++) {
    if (child.exitCode !== null) throw new Error('the system exited during start-up');
    try {
      const r = await fetch(`${url}/readyz`);
      if (r.status === 200) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error('the system did not become ready');
}

/** Starts `main.ts all` on `databaseUrl` with `env` added, and waits until it is ready. */
export async function startBenchSystem(databaseUrl: string, env: Record<string, string> = {}, sqlMax = 2): Promise<BenchSystem> {
  const port = await freePort();
  const internalPort = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'main.ts'), 'all'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      INTERNAL_PORT: String(internalPort),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      TOKEN_SIGNING_KEY: randomBytes(32).toString('base64'),
      SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      BUS_PREFIX: `bench${randomBytes(3).toString('hex')}`,
      ...testCallerEnv(),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  watchPeakRss('system', child.pid);
  const gateway = `http://127.0.0.1:${port}`;
  const internal = `http://127.0.0.1:${internalPort}`;
  const sm = new Http2SessionManager(internal);
  const transport = createGrpcTransport({ baseUrl: internal, sessionManager: sm, defaultTimeoutMs: 60000, interceptors: [credentialInterceptor()] });
  const sql = createSql(databaseUrl, { max: sqlMax });
  const stop = async () => {
    sm.abort();
    await sql.end({ timeout: 5 });
    if (child.exitCode === null) {
      samplePeakRss();
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  };
  try {
    await waitReady(gateway, child);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    gateway,
    internal,
    child,
    identity: createClient(IdentityService, transport),
    catalog: createClient(CatalogService, transport),
    calendar: createClient(CalendarService, transport),
    sql,
    stop,
  };
}
