/**
 * A PGlite data directory initialised once, copied into each embedded database a test
 * starts (test/support/database.ts, and a system's fresh DATA_DIR in
 * test/support/system.ts). PGlite's initdb runs in WebAssembly and costs several seconds
 * of CPU per database; opening a copy of an initialised directory costs a fraction of it.
 *
 * The template is made by the product's own `startEmbeddedPostgres` (the path every
 * first start takes, so what is copied is what a first start leaves: btree_gist
 * created, modes narrowed), once per PGlite version, by Jest's global set-up
 * (test/support/build-main.js). A first start's initdb itself is still exercised by the
 * tests that start on a DATA_DIR of their own (test/platform/start.test.ts,
 * private-data-dir.test.ts) and by CI's smoke of `npm start`.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './process';

// The package's exports do not include its package.json: read the file.
const PGLITE_VERSION = (JSON.parse(readFileSync(join(ROOT, 'node_modules', '@electric-sql', 'pglite', 'package.json'), 'utf8')) as { version: string }).version;

/** Where the template of this PGlite version lives (under node_modules/.cache: a fresh install makes it anew). */
export const PGLITE_TEMPLATE = join(ROOT, 'node_modules', '.cache', 'psync', `pglite-template-${PGLITE_VERSION}`);

/** Copies the template into `dir` (which must not hold a database yet); false when there is no template (then PGlite initialises `dir` itself). */
export function seedEmbeddedDatabase(dir: string): boolean {
  if (!existsSync(join(PGLITE_TEMPLATE, 'PG_VERSION'))) return false;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  cpSync(PGLITE_TEMPLATE, dir, { recursive: true });
  return true;
}

/** Makes the template when it is missing: `initialise(dir)` opens and closes an embedded database in `dir`. */
export async function ensurePgliteTemplate(initialise: (dir: string) => Promise<void>): Promise<void> {
  if (existsSync(join(PGLITE_TEMPLATE, 'PG_VERSION'))) return;
  const building = `${PGLITE_TEMPLATE}.${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  await initialise(building);
  // Another run may have made it meanwhile: theirs is as good.
  if (existsSync(PGLITE_TEMPLATE)) rmSync(building, { recursive: true, force: true });
  else renameSync(building, PGLITE_TEMPLATE);
}
