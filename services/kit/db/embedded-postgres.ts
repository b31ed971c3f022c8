/**
 * The embedded default database: PGlite (PostgreSQL compiled to WASM) stored under
 * DATA_DIR and served over the PostgreSQL wire protocol, so the very same postgres.js
 * code runs against it as against a real server.
 *
 * PGlite has exactly one session: the socket server accepts one
 * connection, and every service in the process must share ONE postgres.js instance
 * with `max: 1` (see database.ts).
 *
 * Who may connect: PGlite's wire server checks no password (anyone connected is the
 * superuser), so the socket itself is the secret. The process serves it on a Unix
 * socket inside the 0700 DATA_DIR, mode 0600: only the account running psync can
 * reach it, as with PostgreSQL's own `unix_socket_permissions`. Nothing else connects
 * to it (`bin/psync migrate` goes through the internal API). A loopback TCP port would
 * be open to every local user, and between the shared connection's idle close and its
 * reconnect anyone could take PGlite's one session. Loopback TCP remains only for the
 * test harness (test/support/embedded-postgres-server.ts), which shares one database
 * between processes on a test machine.
 */
import { chmodSync, lstatSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { makePrivateDir, tightenTree } from '../base';

export interface EmbeddedPostgres {
  /** postgres:// URL of the wire-protocol server (with `path`: the user and database only). */
  url: string;
  /** The Unix socket to connect to (postgres.js' `path` option); unset when served on loopback TCP. */
  path?: string;
  /** Files and directories PGlite left open to group or others when it opened (its initdb writes 0666), narrowed since. */
  narrowed: number;
  /** Stops the socket server and closes PGlite (flushes to DATA_DIR). */
  stop(): Promise<void>;
}

/** Where the wire server listens: a Unix socket at `socket` (the default), or loopback TCP (tests only; 0 = any free port). */
export type EmbeddedListen = { socket: string } | { loopbackPort: number };

/** Longest Unix socket path Linux accepts (sun_path is 108 bytes with its NUL). */
const SOCKET_PATH_MAX = 107;

/**
 * Where the socket goes: `preferred` when its path fits, else a fresh private (0700)
 * directory under the system's temp directory, removed on stop.
 */
function socketLocation(preferred: string): { path: string; cleanup(): void } {
  if (Buffer.byteLength(preferred) <= SOCKET_PATH_MAX) return { path: preferred, cleanup: () => undefined };
  const dir = mkdtempSync(join(tmpdir(), 'psync-db-'));
  return { path: join(dir, 'postgres.sock'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Removes a socket left behind by a process that died without closing it; throws when
 * a live process still serves it (two processes on one DATA_DIR would corrupt it).
 */
async function claimSocketPath(path: string): Promise<void> {
  try {
    if (!lstatSync(path).isSocket()) throw new Error(`${path} exists and is not a socket: move it away`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const live = await new Promise<boolean>((resolve) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (live) throw new Error(`another process serves the embedded database at ${path}: one DATA_DIR, one process`);
  unlinkSync(path);
}

/**
 * Opens (or creates) the PGlite database in `dataDir` with the btree_gist extension
 * (needed by the calendar's exclusion constraints) and serves it as `listen` says.
 *
 * Sets the process umask to 077 first: PGlite writes through Node's fs, so the umask
 * is what keeps the files it creates while running (WAL segments, new relations)
 * private. The files of a new database it writes 0666 regardless; they are narrowed
 * right after it opens (`narrowed`).
 */
export async function startEmbeddedPostgres(dataDir: string, listen: EmbeddedListen): Promise<EmbeddedPostgres> {
  process.umask(0o077);
  makePrivateDir(dataDir);
  const socket = 'socket' in listen ? socketLocation(listen.socket) : undefined;
  if (socket) await claimSocketPath(socket.path);
  // PGlite is loaded here, not at the top: a process on a real PostgreSQL (every role in
  // a cluster) never opens it and does not pay for loading it.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { PGlite } = require('@electric-sql/pglite') as typeof import('@electric-sql/pglite');
  const { PGLiteSocketServer: SocketServer } = require('@electric-sql/pglite-socket') as typeof import('@electric-sql/pglite-socket');
  /* eslint-enable @typescript-eslint/no-require-imports */
  // Extensions must be passed on every open of the data directory. The contrib entry
  // is ESM-only, hence the dynamic import.
  const { btree_gist } = await import('@electric-sql/pglite/contrib/btree_gist');
  const db = await PGlite.create({ dataDir, extensions: { btree_gist } });
  await db.exec('CREATE EXTENSION IF NOT EXISTS btree_gist');
  const opened = tightenTree(dataDir);
  let server: PGLiteSocketServer;
  try {
    server = socket
      ? new SocketServer({ db, path: socket.path, maxConnections: 1 })
      : new SocketServer({ db, host: '127.0.0.1', port: (listen as { loopbackPort: number }).loopbackPort, maxConnections: 1 });
    await server.start();
    if (socket) chmodSync(socket.path, 0o600);
  } catch (err) {
    await db.close().catch(() => undefined);
    socket?.cleanup();
    throw err;
  }
  const tcp = socket ? undefined : /:(\d+)$/.exec(server.getServerConn())?.[1];
  return {
    url: socket ? 'postgres://postgres@localhost/postgres' : `postgres://postgres@127.0.0.1:${tcp}/postgres`,
    ...(socket ? { path: socket.path } : {}),
    narrowed: opened.directories + opened.files,
    async stop() {
      await server.stop();
      await db.close();
      socket?.cleanup();
    },
  };
}
