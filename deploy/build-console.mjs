/**
 * Builds the sandbox console (console/, Vite + Preact) into console/dist/ and writes a
 * Brotli (.br) and a gzip (.gz) copy beside every file, which the gateway serves to
 * browsers that accept them (gateway/console.ts). Runs from `npm ci` (prepare),
 * `npm start`, `npm test` and `npm run build`, and builds only when its inputs changed:
 * the console's sources, the partner SDK's source it bundles, and the versions of Vite
 * and Preact. Their sha256 is kept in console/dist/.inputs.sha256. `--force` always builds.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { filesUnder, inputsDigest, isCurrent, writeStamp } from './input-stamp.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const consoleDir = join(root, 'console');
const outDir = join(consoleDir, 'dist');
const stamp = join(outDir, '.inputs.sha256');

const digest = inputsDigest(root, [
  ...filesUnder(join(consoleDir, 'src')),
  ...filesUnder(join(root, 'packages', 'partner-sdk', 'src')),
  join(consoleDir, 'index.html'),
  join(consoleDir, 'vite.config.mts'),
  join(root, 'node_modules', 'vite', 'package.json'),
  join(root, 'node_modules', 'preact', 'package.json'),
  fileURLToPath(import.meta.url),
]);

if (!process.argv.includes('--force') && isCurrent(stamp, digest)) process.exit(0);

const { build } = await import('vite');
await build({ root: consoleDir, configFile: join(consoleDir, 'vite.config.mts'), logLevel: 'warn' });

for (const file of filesUnder(outDir)) {
  const body = readFileSync(file);
  writeFileSync(`${file}.br`, brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }));
  writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
}
writeStamp(stamp, digest);
