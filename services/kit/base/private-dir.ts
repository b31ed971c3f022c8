/**
 * DATA_DIR is private to the account that runs psync: directories 0700, everything
 * else 0600 (PostgreSQL's own rule for its data directory). It holds the embedded
 * database (WAL included: erased data lingers there until recycled), the generated
 * keys and the operator token.
 *
 * PGlite creates the files of a new database with mode 0666 (an explicit mode, so the
 * umask does not narrow them), and an operator may copy or restore files with looser
 * modes; so every start narrows whatever is open to group or others, and says so in
 * one log line (counts and a few relative paths, never contents). The directory being
 * 0700 is what keeps others out in between: nothing below it can be reached.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync, type Stats } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { logEvent } from './log-events';
import type { Logger } from './logger';

/** Mode of every directory under DATA_DIR (and DATA_DIR itself). */
export const PRIVATE_DIR_MODE = 0o700;
/** Permission bits that must be clear on everything under DATA_DIR: group and others. */
const OPEN_BITS = 0o077;
/** How many repaired paths a log line names at most. */
const PATHS_LOGGED = 10;

/** What tightenTree changed (and could not change). */
export interface TightenResult {
  /** Directories narrowed to 0700. */
  directories: number;
  /** Files (and sockets) narrowed to their owner's bits. */
  files: number;
  /** Relative paths of the first few entries narrowed or failed. */
  paths: string[];
  /** Entries whose mode could not be changed (another owner …), relative paths. */
  failed: string[];
  /**
   * `root` itself is open but belongs to another account, which alone may change its
   * mode (a volume mounted for the process, e.g. a Kubernetes emptyDir): left as it is.
   */
  foreignRoot: boolean;
}

/**
 * Narrows every entry under `root` (itself included) that is open to group or others:
 * directories to 0700, anything else to its owner's bits alone (0666 → 0600). Symbolic
 * links are neither followed nor changed (their own mode means nothing on Linux; what
 * they point to is outside DATA_DIR's rule). A missing `root` is no error.
 */
export function tightenTree(root: string): TightenResult {
  const result: TightenResult = { directories: 0, files: 0, paths: [], failed: [], foreignRoot: false };
  const visit = (path: string): void => {
    const st = lstatIfPresent(path);
    // Removed meanwhile (PGlite recycles WAL segments): nothing to narrow.
    if (!st || st.isSymbolicLink()) return;
    const dir = st.isDirectory();
    if ((st.mode & OPEN_BITS) !== 0) {
      const rel = relative(root, path) || '.';
      try {
        chmodSync(path, dir ? PRIVATE_DIR_MODE : st.mode & 0o700);
        if (dir) result.directories++;
        else result.files++;
        if (result.paths.length < PATHS_LOGGED) result.paths.push(rel);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return;
        if (path === root && code === 'EPERM' && st.uid !== process.getuid?.()) result.foreignRoot = true;
        else result.failed.push(rel);
      }
    }
    if (dir) {
      let names: string[];
      try {
        names = readdirSync(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw err;
      }
      for (const name of names) visit(join(path, name));
    }
  };
  visit(root);
  return result;
}

/**
 * Narrows DATA_DIR at start-up (tightenTree) and logs one line when anything was open:
 * a warning naming the counts and the first few paths, an error for entries whose mode
 * could not be changed. Does not create DATA_DIR: a process that never writes there
 * (a chart's service pod) needs none.
 */
export function securePrivateDataDir(dataDir: string, log: Logger): TightenResult {
  refuseSharedDirectory(dataDir);
  const result = tightenTree(dataDir);
  if (result.failed.length > 0) {
    log.error(
      { event: logEvent('data_dir.unfixable'), data_dir: dataDir, failed: result.failed.length, failed_paths: result.failed.slice(0, PATHS_LOGGED) },
      'DATA_DIR: some entries are open to group or others and their mode cannot be changed (another owner?): fix them by hand',
    );
  }
  if (result.foreignRoot) {
    log.info(
      { event: logEvent('data_dir.foreign_owner'), data_dir: dataDir },
      'DATA_DIR belongs to another account (a mounted volume?) and stays open to others; what psync keeps in it is private (directories 0700, files 0600)',
    );
  }
  if (result.directories + result.files > 0) {
    log.warn(
      { event: logEvent('data_dir.narrowed'), data_dir: dataDir, directories: result.directories, files: result.files, paths: result.paths },
      'DATA_DIR: narrowed permissions open to group or others (directories 0700, files 0600)',
    );
  }
  return result;
}

/** The entry at `path` itself (a link is not followed), or undefined when there is none. */
function lstatIfPresent(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Throws when `dir` is a shared directory (the sticky bit, as /tmp has, or the root):
 * narrowing it and everything in it would break every other user of the machine.
 */
function refuseSharedDirectory(dir: string): void {
  const st = lstatIfPresent(dir);
  if (st?.isDirectory() && ((st.mode & 0o1000) !== 0 || resolve(dir) === resolve('/'))) {
    throw new Error(`DATA_DIR (${dir}) is a shared directory (like /tmp): give psync a directory of its own, e.g. DATA_DIR=${join(dir, 'psync')}`);
  }
}

/** Creates `dir` (and missing parents) private: mode 0700 for every directory it creates, then narrows `dir` itself. */
export function makePrivateDir(dir: string): void {
  refuseSharedDirectory(dir);
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  chmodSync(dir, PRIVATE_DIR_MODE);
}
