/**
 * The previous release (deploy/previous-release) as a runnable checkout for the
 * rolling-upgrade check: its files from git history (`git archive`, so the clone's
 * worktrees and index are never touched) in a temporary directory, its dependencies,
 * and its generated code (`npm run generate`: buf generate).
 *
 * Dependencies: when every package the previous release's package-lock.json installs is
 * in ours at the same version and integrity (a change that only adds or keeps packages),
 * our node_modules serves it as well and is linked in; otherwise `npm ci --prefer-offline`
 * installs its own (minutes, mostly from npm's cache).
 */
import { execFileSync, execSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { previousRelease, REPOSITORY_ROOT, requireCommit } from '../../../tools/previous-release';

export interface PreviousReleaseCheckout {
  commit: string;
  /** The checkout's root: start its entry point from here (startSystem's `root`). */
  dir: string;
  /** True when our node_modules was linked in, false when it installed its own. */
  sharedModules: boolean;
  /** Seconds the checkout, install and code generation took. */
  preparedSeconds: number;
  remove(): void;
}

interface Lock {
  packages?: Record<string, { version?: string; integrity?: string; link?: boolean }>;
}

/** Packages (node_modules paths) `previous` installs that `current` does not install identically. */
export function packagesNotShared(previous: Lock, current: Lock): string[] {
  const ours = current.packages ?? {};
  return Object.entries(previous.packages ?? {})
    .filter(([path]) => path.startsWith('node_modules/'))
    .filter(([path, p]) => ours[path]?.version !== p.version || ours[path]?.integrity !== p.integrity)
    .map(([path]) => path);
}

/** Checks the previous release out into a temporary directory, ready to start. */
export function checkOutPreviousRelease(): PreviousReleaseCheckout {
  const started = Date.now();
  const commit = previousRelease();
  requireCommit(commit);
  const dir = mkdtempSync('/tmp/psync-previous-');
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    execSync(`git archive --format=tar ${commit} | tar -x -C ${JSON.stringify(dir)}`, { cwd: REPOSITORY_ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    const lock = (root: string) => JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as Lock;
    const sharedModules = packagesNotShared(lock(dir), lock(REPOSITORY_ROOT)).length === 0;
    const npm = (args: string[], timeout: number) => execFileSync('npm', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], timeout });
    if (sharedModules) {
      symlinkSync(join(REPOSITORY_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
      npm(['run', '--silent', 'generate'], 120_000);
    } else {
      // Its `prepare` (buf generate and its own patches) runs as part of npm ci.
      npm(['ci', '--prefer-offline', '--no-audit', '--no-fund'], 600_000);
    }
    return { commit, dir, sharedModules, preparedSeconds: (Date.now() - started) / 1000, remove };
  } catch (err) {
    remove();
    throw err;
  }
}
