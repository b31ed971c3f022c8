/**
 * The embedded default database: PGlite (PostgreSQL compiled to WASM) stored under
 * DATA_DIR and served over the PostgreSQL wire protocol on loopback, so the very same
 * postgres.js code runs against it as against a real server.
 *
 * PGlite has exactly one session: the socket server accepts one
 * connection, and every service in the process must share ONE postgres.js instance
 * with `max: 1` (see database.ts).
 */
import { mkdirSync } from 'node:fs';
import { AddressInfo, createServer } from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

export interface EmbeddedPostgres {
  /** postgres:// URL of the loopback wire-protocol server. */
  url: string;
  /** Stops the socket server and closes PGlite (flushes to DATA_DIR). */
  stop(): Promise<void>;
}

/** Finds a free loopback port (the socket server cannot report an ephemeral one). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Opens (or creates) the PGlite database in `dataDir` with the btree_gist extension
 * (needed by the calendar's exclusion constraints) and serves it on 127.0.0.1.
 */
export async function startEmbeddedPostgres(dataDir: string, port?: number): Promise<EmbeddedPostgres> {
  mkdirSync(dataDir, { recursive: true });
  // Extensions must be passed on every open of the data directory. The contrib entry
  // is ESM-only, hence the dynamic import.
  const { btree_gist } = await import('@electric-sql/pglite/contrib/btree_gist');
  const db = await PGlite.create({ dataDir, extensions: { btree_gist } });
  await db.exec('CREATE EXTENSION IF NOT EXISTS btree_gist');
  const listenPort = port ?? (await freePort());
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: listenPort, maxConnections: 1 });
  await server.start();
  return {
    url: `postgres://postgres@127.0.0.1:${listenPort}/postgres`,
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}
