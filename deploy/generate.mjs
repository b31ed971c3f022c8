/**
 * Generates gen/ from proto/ (`buf generate`, buf.gen.yaml) only when its inputs
 * changed: the .proto files, the buf configuration and the protoc-gen-es version. Their
 * sha256 is kept in gen/.inputs.sha256; the same inputs again leave gen/ as it is. So
 * `npm start` and `npm test` do not spend a generator run (and new mtimes on every
 * generated file) on an unchanged schema. `npm run generate` always generates.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'gen', '.inputs.sha256');

function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : e.name.endsWith('.proto') ? [join(dir, e.name)] : []));
}

const inputs = [...filesUnder(join(root, 'proto')), join(root, 'buf.gen.yaml'), join(root, 'buf.yaml'), join(root, 'node_modules', '@bufbuild', 'protoc-gen-es', 'package.json')]
  .filter((f) => existsSync(f))
  .sort();
const hash = createHash('sha256');
for (const f of inputs) hash.update(relative(root, f)).update('\0').update(readFileSync(f)).update('\0');
const digest = hash.digest('hex');

if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === digest) process.exit(0);
execFileSync(join(root, 'node_modules', '.bin', 'buf'), ['generate'], { cwd: root, stdio: 'inherit' });
writeFileSync(stamp, `${digest}\n`);
