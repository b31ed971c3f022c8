/**
 * The SQL files of the tree (each service's `migrations/`, `functions/` and baseline), read the
 * same way from the sources and from the shipped build. From the sources they are files
 * on disk; deploy/build-main.mjs bundles the process into one file and embeds every one
 * of them as text (`__PSYNC_SQL_FILES__`, repository-relative path → content), so the
 * image carries no SQL beside its code and no copy step can leave one behind.
 *
 * A folder is named by its absolute path below the tree's root (`treePath`); a folder
 * elsewhere (a test's temporary one) is always read from disk.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';

/** Set by deploy/build-main.mjs in the shipped build; undefined when running from the sources. */
declare const __PSYNC_SQL_FILES__: Readonly<Record<string, string>> | undefined;

const EMBEDDED: Readonly<Record<string, string>> | undefined = typeof __PSYNC_SQL_FILES__ === 'undefined' ? undefined : __PSYNC_SQL_FILES__;

/** The repository's root as the sources see it (services/kit/db → ../../..); in the build only a prefix for the embedded names. */
const ROOT = join(__dirname, '..', '..', '..');

/** The absolute path of `path` (slash-separated, relative to the repository's root). */
export function treePath(path: string): string {
  return join(ROOT, ...path.split('/'));
}

/** The embedded name of `dir`, when the build embeds it. */
function embeddedName(dir: string): string | undefined {
  if (!EMBEDDED) return undefined;
  const rel = relative(ROOT, dir);
  if (rel.startsWith('..') || isAbsolute(rel)) return undefined;
  return rel.split(sep).join('/');
}

/** Whether `dir` exists (holds at least one file, in the build). */
export function sqlDirExists(dir: string): boolean {
  const name = embeddedName(dir);
  if (name === undefined) return existsSync(dir);
  return Object.keys(EMBEDDED!).some((k) => k.startsWith(`${name}/`));
}

/**
 * The files directly in `dir`, in name order: their names and bytes. `wanted` leaves
 * files out by name before they are read.
 */
export function readSqlDir(dir: string, wanted: (name: string) => boolean = () => true): { name: string; bytes: Buffer }[] {
  const name = embeddedName(dir);
  if (name === undefined) {
    return readdirSync(dir)
      .sort()
      .filter(wanted)
      .map((n) => ({ name: n, bytes: readFileSync(join(dir, n)) }));
  }
  const prefix = `${name}/`;
  return Object.keys(EMBEDDED!)
    .filter((k) => k.startsWith(prefix) && !k.slice(prefix.length).includes('/') && wanted(k.slice(prefix.length)))
    .sort()
    .map((k) => ({ name: k.slice(prefix.length), bytes: Buffer.from(EMBEDDED![k]!, 'utf8') }));
}

/** The bytes of the file at `path`, or undefined when there is none. */
export function readSqlFile(path: string): Buffer | undefined {
  const name = embeddedName(path);
  if (name === undefined) return existsSync(path) ? readFileSync(path) : undefined;
  const text = EMBEDDED![name];
  return text === undefined ? undefined : Buffer.from(text, 'utf8');
}
