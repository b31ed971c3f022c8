/**
 * Bundles the operator CLI (bin/cli/main.ts and everything it imports, dependencies
 * included) into one CommonJS file, by default dist/psync-cli.cjs, which bin/psync runs.
 *
 * One file because start-up is what a CLI is judged by: Node resolving and reading a
 * few hundred modules of node_modules costs more than the CLI's own work (about 0.6 s
 * against 0.1 s on the development VM; docs/performance.md "Tools"), and transpiling
 * the TypeScript on every call (tsx) cost a second more. esbuild is the bundler tsx
 * already uses. The file is written under a temporary name and renamed, so two
 * `psync` calls rebuilding at once never run half a file.
 */
import { build } from 'esbuild';
import { mkdirSync, renameSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = resolve(process.argv[2] ?? join(root, 'dist', 'psync-cli.cjs'));
const partial = `${outfile}.${process.pid}.partial`;

mkdirSync(dirname(outfile), { recursive: true });
await build({
  entryPoints: [join(root, 'bin', 'cli', 'main.ts')],
  outfile: partial,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  logLevel: 'warning',
  legalComments: 'none',
});
renameSync(partial, outfile);
