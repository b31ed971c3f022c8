/**
 * The SQL tree of a release from git history: its `services/` folder (`git archive`, so
 * no worktree or index is touched) in a temporary directory, to migrate a database as
 * that release left it. `previousReleaseSql()` takes the previous release
 * (deploy/previous-release); `baselineRelease()` names the release a folder's baseline
 * was cut from, the last one holding the migrations it replaces.
 */
import { execSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { loadMigrations, treePath, type MigrationSource } from '../../services/kit/db';
import { allMigrationSources } from '../../tools/migration-manifest';
import { previousRelease, REPOSITORY_ROOT, requireCommit } from '../../tools/previous-release';

export interface ReleaseSql {
  commit: string;
  /** Its `services/` folder. */
  servicesDir: string;
  /** The sources a service's schema migrates from in that release: the kit's, then its own. */
  sourcesFor(service: string): MigrationSource[];
  /** The folder of that release matching `source`, a folder of this tree. */
  sourceAt(source: MigrationSource): MigrationSource;
  remove(): void;
}

/** The SQL tree of `commit`. */
export function releaseSql(commit: string): ReleaseSql {
  requireCommit(commit);
  const dir = mkdtempSync(join(tmpdir(), 'psync-release-sql-'));
  execSync(`git archive --format=tar ${commit} services | tar -x -C ${JSON.stringify(dir)}`, { cwd: REPOSITORY_ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  const servicesDir = join(dir, 'services');
  const sources = allMigrationSources(servicesDir);
  return {
    commit,
    servicesDir,
    sourcesFor: (service) => [sources.find((s) => s.prefix === 'kit')!, sources.find((s) => s.prefix === service)!],
    sourceAt: (source) => ({ prefix: source.prefix, dir: join(servicesDir, relative(treePath('services'), source.dir)) }),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** The SQL tree of the previous release. */
export function previousReleaseSql(): ReleaseSql {
  return releaseSql(previousRelease());
}

/** The release `source`'s baseline was cut from: the commit its header names. */
export function baselineRelease(source: MigrationSource): string {
  const baseline = loadMigrations([source]).find((m) => m.baseline);
  if (!baseline) throw new Error(`${source.dir} has no baseline`);
  const commit = /\b[0-9a-f]{40}\b/.exec(readFileSync(baseline.file, 'utf8').split('\n').slice(0, 3).join('\n'))?.[0];
  if (!commit) throw new Error(`${baseline.file}: its header names no release`);
  return commit;
}
