/**
 * `npm run lint:migrations`: squawk (the npm package `squawk-cli`, pinned in
 * package.json) over every migration file that the previous release
 * (deploy/previous-release) does not have, with the settings of `.squawk.toml`.
 *
 * Landed files are not linted again: they are immutable (docs/operations.md "Migrate"),
 * so they could never gain the `-- squawk-ignore <rule>` comment an exception needs, and
 * what they did is already in every database. A new file must pass, or carry in itself
 * a comment saying why the hazard does not apply followed by `-- squawk-ignore <rule>`
 * on the line right above the statement (docs/operations.md "Upgrades").
 */
import { spawnSync } from 'node:child_process';
import { relative, join } from 'node:path';
import { currentMigrations } from './migration-manifest';
import { filesAt, previousRelease, REPOSITORY_ROOT, requireCommit } from './previous-release';

/** The squawk binary of the installed `squawk-cli`. */
export const SQUAWK = join(REPOSITORY_ROOT, 'node_modules', '.bin', 'squawk');

/** The squawk settings every run uses. */
export const SQUAWK_CONFIG = join(REPOSITORY_ROOT, '.squawk.toml');

/** Migration files (paths relative to `root`) that `commit` does not have. */
export function migrationsAddedSince(commit: string, root = REPOSITORY_ROOT): string[] {
  requireCommit(commit, root);
  const landed = filesAt(commit, 'services', root);
  return currentMigrations(join(root, 'services'))
    .map((m) => relative(root, m.file))
    .filter((f) => !landed.has(f));
}

export interface LintResult {
  /** True when squawk found nothing. */
  ok: boolean;
  /** squawk's report (one `file:line:column: warning: rule message` line per finding). */
  report: string;
}

/** Lints `files` (paths relative to `cwd`) with squawk and `.squawk.toml`. */
export function lintMigrationFiles(files: string[], cwd = REPOSITORY_ROOT): LintResult {
  if (files.length === 0) return { ok: true, report: '' };
  const res = spawnSync(SQUAWK, ['--config', SQUAWK_CONFIG, '--reporter', 'gcc', ...files], { cwd, encoding: 'utf8', timeout: 60_000 });
  if (res.error) throw res.error;
  // 0: clean; 1: findings; anything else (or a signal) is squawk failing to run.
  if (res.status !== 0 && res.status !== 1) throw new Error(`squawk exited ${res.status ?? res.signal}: ${res.stderr}`);
  return { ok: res.status === 0, report: `${res.stdout}${res.stderr}`.trim() };
}

function main(): void {
  const commit = previousRelease();
  const files = migrationsAddedSince(commit);
  if (files.length === 0) {
    process.stdout.write(`lint:migrations: no migration added since the previous release ${commit.slice(0, 12)}; landed migrations are immutable and not linted again\n`);
    return;
  }
  const result = lintMigrationFiles(files);
  process.stdout.write(`lint:migrations: ${files.length} migration(s) added since ${commit.slice(0, 12)}: ${files.join(', ')}\n`);
  if (result.ok) return;
  process.stderr.write(`${result.report}\n`);
  process.stderr.write(
    'lint:migrations: fix the migration, or justify the exception in it: the reason, then `-- squawk-ignore <rule>` on the line right above the statement (docs/operations.md "Upgrades")\n',
  );
  process.exitCode = 1;
}

if (require.main === module) main();
