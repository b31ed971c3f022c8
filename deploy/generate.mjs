/**
 * Generates gen/ from proto/ (`buf generate`, buf.gen.yaml) only when its inputs
 * changed: the .proto files, the buf configuration and the protoc-gen-es version. Their
 * sha256 is kept in gen/.inputs.sha256; the same inputs again leave gen/ as it is. So
 * `npm start` and `npm test` do not spend a generator run (and new mtimes on every
 * generated file) on an unchanged schema. `npm run generate` always generates.
 */
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { filesUnder, inputsDigest, isCurrent, writeStamp } from './input-stamp.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'gen', '.inputs.sha256');

const digest = inputsDigest(root, [
  ...filesUnder(join(root, 'proto'), (name) => name.endsWith('.proto')),
  join(root, 'buf.gen.yaml'),
  join(root, 'buf.yaml'),
  join(root, 'node_modules', '@bufbuild', 'protoc-gen-es', 'package.json'),
]);

if (isCurrent(stamp, digest)) process.exit(0);
execFileSync(join(root, 'node_modules', '.bin', 'buf'), ['generate'], { cwd: root, stdio: 'inherit' });
writeStamp(stamp, digest);
