/**
 * Child process of Jest's global set-up (test/support/build-main.js): makes the PGlite
 * template (test/support/pglite-template.ts) when it is missing. PGlite cannot start
 * inside Jest's own process, hence a child.
 */
import { startEmbeddedPostgres } from '../../services/kit/db';
import { ensurePgliteTemplate } from './pglite-template';

ensurePgliteTemplate(async (dir) => {
  const pg = await startEmbeddedPostgres(dir, { loopbackPort: 0 });
  await pg.stop();
}).catch((err) => {
  process.stderr.write(`make-pglite-template: ${String(err)}\n`);
  process.exit(1);
});
