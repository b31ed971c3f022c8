/**
 * Child process for tests: serves an embedded PGlite database from the directory in
 * argv[2] on a loopback port and prints `url <postgres-url>`; SIGTERM stops it.
 */
import { startEmbeddedPostgres } from '../../services/kit/db';

async function main(): Promise<void> {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: embedded-postgres-server <data-dir>');
  const pg = await startEmbeddedPostgres(dir, { loopbackPort: 0 });
  process.stdout.write(`url ${pg.url}\n`);
  process.once('SIGTERM', () => {
    void pg.stop().finally(() => process.exit(0));
  });
}

main().catch((err) => {
  process.stderr.write(`embedded-postgres-server: ${String(err)}\n`);
  process.exit(1);
});
