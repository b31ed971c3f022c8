/**
 * A fresh database for one test file.
 *
 * - DATABASE_URL set (CI): a new database `psync_t_<random>` on that server, dropped
 *   afterwards, so runs and test files never see each other's rows.
 * - Otherwise: an embedded PGlite server in a child process (PGlite cannot start inside
 *   a Jest worker) with a temporary data directory, a copy of an initialised one
 *   (pglite-template.ts). It has ONE
 *   session: use the returned `sql` (max 1) and do not open a second connection.
 */
import { spawn, ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createSql, Sql } from '../../services/kit/db';
import { ROOT, waitForLine } from './process';
import { seedEmbeddedDatabase } from './pglite-template';

export interface TestDatabase {
  /** postgres:// URL of the fresh database. */
  url: string;
  /** A ready postgres.js instance (max 1 in embedded mode). */
  sql: Sql;
  /**
   * True for embedded PGlite: one session only, so a second client must not connect
   * while `sql` is open. On a server, more clients may connect to `url`.
   */
  embedded: boolean;
  /** Ends `sql` and drops the database (or stops the embedded server); safe to call twice. */
  stop(): Promise<void>;
}

/** Runs `fn` once; later calls get the first call's promise. */
function once(fn: () => Promise<void>): () => Promise<void> {
  let p: Promise<void> | undefined;
  return () => (p ??= fn());
}

/** Stops `child` with SIGTERM (SIGKILL after `graceMs`) and resolves when it has exited. */
async function stopChild(child: ChildProcess, graceMs = 10000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export async function startTestDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    const name = `psync_t_${randomBytes(6).toString('hex')}`;
    const admin = createSql(serverUrl, { max: 1 });
    try {
      await admin.unsafe(`create database ${name}`);
    } catch (err) {
      await admin.end({ timeout: 5 });
      throw err;
    }
    const u = new URL(serverUrl);
    u.pathname = `/${name}`;
    const url = u.toString();
    const sql = createSql(url, { max: 10 });
    return {
      url,
      sql,
      embedded: false,
      stop: once(async () => {
        try {
          await sql.end({ timeout: 5 });
          await admin.unsafe(`drop database if exists ${name} with (force)`);
        } finally {
          await admin.end({ timeout: 5 });
        }
      }),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'psync-pglite-'));
  seedEmbeddedDatabase(dir);
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/support/embedded-postgres-server.ts'), dir], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let url: string;
  try {
    const line = await waitForLine(child, /^url (\S+)/, 60000);
    url = line.match(/^url (\S+)/)![1]!;
  } catch (err) {
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const sql = createSql(url, { max: 1 });
  return {
    url,
    sql,
    embedded: true,
    stop: once(async () => {
      try {
        await sql.end({ timeout: 5 });
      } finally {
        await stopChild(child);
        rmSync(dir, { recursive: true, force: true });
      }
    }),
  };
}
