/**
 * The previous release: the commit of main that landed before this change, named in
 * `deploy/previous-release` (comment lines start with `#`, the one other line is the
 * full commit id). Every release must run beside it on one schema (docs/operations.md
 * "Upgrades"): the rolling-upgrade check starts its code from git history, and the
 * migration lint lints only the migration files it does not have.
 *
 * A checked-in id rather than one derived from history: a merge commit, a rebase or a
 * fast-forward each leave a different shape behind, and `HEAD~1` is the previous
 * release only when a change lands as one commit; the file says it plainly, like
 * `proto/landed.binpb` does for `buf breaking`, and is refreshed when a change lands:
 * `npm run previous-release:record` (this file run directly) on main names `HEAD`.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The repository root. */
export const REPOSITORY_ROOT = join(__dirname, '..');

/** Where the previous release is named. */
export const PREVIOUS_RELEASE_FILE = join(REPOSITORY_ROOT, 'deploy', 'previous-release');

/** The full commit id in `file`; throws when the file holds anything else. */
export function previousRelease(file = PREVIOUS_RELEASE_FILE): string {
  const ids = readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  if (ids.length !== 1 || !/^[0-9a-f]{40}$/.test(ids[0]!)) throw new Error(`${file}: expected one full commit id (40 hex digits) besides # comment lines`);
  return ids[0]!;
}

/** Runs git in `root`; its stdout. */
export function git(args: string[], root = REPOSITORY_ROOT): string {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Throws a message saying what to do when `commit` is not in the clone's history (a shallow clone). */
export function requireCommit(commit: string, root = REPOSITORY_ROOT): void {
  try {
    git(['cat-file', '-e', `${commit}^{commit}`], root);
  } catch {
    throw new Error(`the previous release ${commit} (deploy/previous-release) is not in this clone's history: fetch it (git fetch --unshallow, or clone without --depth)`);
  }
}

/** The paths (relative to the root) of every file in `commit` under `dir`. */
export function filesAt(commit: string, dir: string, root = REPOSITORY_ROOT): Set<string> {
  return new Set(git(['ls-tree', '-r', '--name-only', commit, '--', dir], root).split('\n').filter(Boolean));
}

/** Names `HEAD` as the previous release in `file`, keeping its comment lines; returns the id. */
export function recordPreviousRelease(file = PREVIOUS_RELEASE_FILE, root = REPOSITORY_ROOT): string {
  const head = git(['rev-parse', 'HEAD'], root).trim();
  const comments = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('#'));
  writeFileSync(file, [...comments, head, ''].join('\n'));
  return head;
}

if (require.main === module) process.stdout.write(`deploy/previous-release: ${recordPreviousRelease()}\n`);
