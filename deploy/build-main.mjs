/**
 * Builds what every process runs, the image and `npm start` alike: main.ts and all of
 * the project's code it imports bundled into one CommonJS file, dist/psync.cjs, with
 * the SQL files migrate reads (services/<name>/baseline.sql, services/<name>/functions and
 * the migrations no baseline replaces) embedded as text (services/kit/db/sql-tree.ts
 * reads them from there). A migration a baseline's header names (`-- replaces: <id>
 * <sha256>`, services/kit/db/migration-baseline.ts) is history migrate never reads, so
 * it stays out. Dependencies stay
 * in node_modules (`packages: 'external'`): native ones (sharp, PGlite's WebAssembly)
 * cannot be bundled, and the image ships its production node_modules anyway.
 *
 * Built only when an input changed (the sha256 of the sources, the SQL and this file,
 * kept in dist/.psync.inputs.sha256; deploy/input-stamp.mjs); `--force` always builds.
 * The file is written under a temporary name and renamed, so a process starting while
 * another build runs never reads half a file. esbuild is the bundler bin/psync already
 * uses (deploy/build-cli.mjs).
 */
import { build } from 'esbuild';
import { mkdirSync, readFileSync, renameSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { filesUnder, inputsDigest, isCurrent, writeStamp } from './input-stamp.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = join(root, 'dist', 'psync.cjs');
const stamp = join(root, 'dist', '.psync.inputs.sha256');

const isSource = (name) => (name.endsWith('.ts') && !name.endsWith('.test.ts')) || name.endsWith('.json') || name.endsWith('.sql');
const inputs = [
  join(root, 'main.ts'),
  ...['services', 'gateway', 'gen', 'bin'].flatMap((d) => filesUnder(join(root, d), isSource)),
  join(root, 'tsconfig.json'),
  join(root, 'package.json'),
  fileURLToPath(import.meta.url),
];
const digest = inputsDigest(root, inputs);
if (!process.argv.includes('--force') && isCurrent(stamp, digest)) process.exit(0);

const allSql = filesUnder(join(root, 'services'), (name) => name.endsWith('.sql'));
const baselines = allSql.filter((f) => /[/\\]services[/\\][^/\\]+[/\\]baseline\.sql$/.test(f));
/** The migration files the baselines replace: `<folder>/migrations/<name>.sql` for each `-- replaces: <prefix>/<name>` line. */
const replaced = new Set(
  baselines.flatMap((b) => [...readFileSync(b, 'utf8').matchAll(/^-- replaces: [^/\s]+\/(\S+) [0-9a-f]{64}$/gm)].map((m) => join(dirname(b), 'migrations', `${m[1]}.sql`))),
);
/** The SQL files migrate reads, by their slash-separated paths from the root. */
const sqlFiles = Object.fromEntries(
  allSql
    // A `migrations/NNNN_baseline.sql` is a withdrawn baseline migrate never reads (services/kit/db/migration-files.ts).
    .filter((f) => baselines.includes(f) || (/[/\\](migrations|functions)[/\\][^/\\]+\.sql$/.test(f) && !/[/\\]migrations[/\\]\d{4}_baseline\.sql$/.test(f) && !replaced.has(f)))
    .map((f) => [relative(root, f).split(sep).join('/'), readFileSync(f, 'utf8')]),
);

mkdirSync(dirname(outfile), { recursive: true });
const partial = `${outfile}.${process.pid}.partial`;
await build({
  entryPoints: [join(root, 'main.ts')],
  outfile: partial,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  packages: 'external',
  // No keepNames: it wraps every function made at run time in a __name() call
  // (bench/support/compiled-build.ts); esbuild renames a class only where two share a name.
  define: { __PSYNC_SQL_FILES__: JSON.stringify(sqlFiles) },
  logLevel: 'warning',
  legalComments: 'none',
});
renameSync(partial, outfile);
writeStamp(stamp, digest);
