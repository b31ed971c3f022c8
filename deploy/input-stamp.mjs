/**
 * Steps that run only when their inputs changed (deploy/generate.mjs,
 * deploy/build-console.mjs): the sha256 of the inputs' paths and bytes, kept in a stamp
 * file in the step's output folder; the same digest again means the output is current.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** Every file below `dir` whose name `keep` accepts (default: all). */
export function filesUnder(dir, keep = () => true) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name), keep) : keep(e.name) ? [join(dir, e.name)] : []));
}

/** The digest of `files` that exist (paths relative to `root`, and contents), in path order. */
export function inputsDigest(root, files) {
  const hash = createHash('sha256');
  for (const f of files.filter((p) => existsSync(p)).sort()) hash.update(relative(root, f)).update('\0').update(readFileSync(f)).update('\0');
  return hash.digest('hex');
}

/** Whether `stampFile` holds `digest` (the output was made from these inputs). */
export function isCurrent(stampFile, digest) {
  return existsSync(stampFile) && readFileSync(stampFile, 'utf8').trim() === digest;
}

export function writeStamp(stampFile, digest) {
  writeFileSync(stampFile, `${digest}\n`);
}
