/**
 * `npm run lint:migrations`: squawk (the npm package `squawk-cli`, pinned in
 * package.json) over every migration file that the previous release
 * (deploy/previous-release) does not have, and every repeatable SQL file
 * (sql-functions.ts) it has not got in this form, with the settings of `.squawk.toml`.
 * And migrations hold schema changes only: a new one that defines a function,
 * procedure or view fails, naming the `functions/` folder it belongs in.
 *
 * Landed files are not linted again: they are immutable (docs/operations.md "Migrate"),
 * so they could never gain the `-- squawk-ignore <rule>` comment an exception needs, and
 * what they did is already in every database. A new file must pass, or carry in itself
 * a comment saying why the hazard does not apply followed by `-- squawk-ignore <rule>`
 * on the line right above the statement (docs/operations.md "Upgrades").
 */
import { spawnSync } from 'node:child_process';
import { relative, join } from 'node:path';
import { readFileSync } from 'node:fs';
import { currentFunctionFiles, currentMigrations } from './migration-manifest';
import { filesAt, git, previousRelease, REPOSITORY_ROOT, requireCommit } from './previous-release';

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

/** Repeatable SQL files (paths relative to `root`) that are new or differ from `commit`'s. */
export function functionFilesChangedSince(commit: string, root = REPOSITORY_ROOT): string[] {
  requireCommit(commit, root);
  const landed = filesAt(commit, 'services', root);
  const files = currentFunctionFiles(join(root, 'services')).map((f) => relative(root, f.file));
  const kept = files.filter((f) => landed.has(f));
  const changed = new Set(
    kept.length > 0
      ? git(['diff', '--name-only', commit, '--', ...kept], root)
          .split('\n')
          .filter(Boolean)
      : [],
  );
  return files.filter((f) => !landed.has(f) || changed.has(f));
}

/** A definition that belongs in a service's `functions/` folder, not in a migration. */
const ROUTINE_OR_VIEW = /\bcreate\s+(?:or\s+replace\s+)?(?:function|procedure|(?:materialized\s+)?view)\s+[a-z_"][\w."]*/gi;

/** For each of `files` (paths relative to `root`) defining a function, procedure or view, what it defines. */
export function routinesInMigrations(files: string[], root = REPOSITORY_ROOT): Array<{ file: string; defines: string[] }> {
  return files.flatMap((file) => {
    const defines = [...readFileSync(join(root, file), 'utf8').matchAll(ROUTINE_OR_VIEW)].map((m) => m[0].replace(/\s+/g, ' '));
    return defines.length > 0 ? [{ file, defines }] : [];
  });
}

export interface LintResult {
  /** True when squawk found nothing. */
  ok: boolean;
  /** squawk's report (one `file:line:column: warning: rule message` line per finding). */
  report: string;
}

/** `.squawk.toml`'s `excluded_rules`: a command-line `--exclude` replaces that list, so runs with one repeat it. */
function configuredExclusions(): string[] {
  const list = /^excluded_rules\s*=\s*\[([^\]]*)\]/m.exec(readFileSync(SQUAWK_CONFIG, 'utf8'))?.[1] ?? '';
  return [...list.matchAll(/"([a-z-]+)"/g)].map((m) => m[1]!);
}

/**
 * Rules left out for repeatable SQL files, besides `.squawk.toml`'s:
 * `create or replace function` waits for no caller (a running call holds no lock on its
 * function), so a lock_timeout guards nothing there.
 */
export const notForFunctionFiles = (): string[] => [...configuredExclusions(), 'require-lock-timeout'];

/** Lints `files` (paths relative to `cwd`) with squawk and `.squawk.toml`, leaving out the rules `exclude` names. */
export function lintMigrationFiles(files: string[], cwd = REPOSITORY_ROOT, exclude: string[] = []): LintResult {
  if (files.length === 0) return { ok: true, report: '' };
  const res = spawnSync(SQUAWK, ['--config', SQUAWK_CONFIG, '--reporter', 'gcc', ...exclude.map((r) => `--exclude=${r}`), ...files], { cwd, encoding: 'utf8', timeout: 60_000 });
  if (res.error) throw res.error;
  // 0: clean; 1: findings; anything else (or a signal) is squawk failing to run.
  if (res.status !== 0 && res.status !== 1) throw new Error(`squawk exited ${res.status ?? res.signal}: ${res.stderr}`);
  return { ok: res.status === 0, report: `${res.stdout}${res.stderr}`.trim() };
}

function main(): void {
  const commit = previousRelease();
  const migrations = migrationsAddedSince(commit);
  const functionFiles = functionFilesChangedSince(commit);
  const files = [...migrations, ...functionFiles];
  for (const { file, defines } of routinesInMigrations(migrations)) {
    process.stderr.write(
      `${file}: ${defines.join('; ')}: migrations hold schema changes only; functions, procedures and views live in the service's functions/ folder (services/kit/db/sql-functions.ts)\n`,
    );
    process.exitCode = 1;
  }
  if (files.length === 0) {
    process.stdout.write(`lint:migrations: no migration or repeatable SQL file changed since the previous release ${commit.slice(0, 12)}; landed files are not linted again\n`);
    return;
  }
  const results = [lintMigrationFiles(migrations), lintMigrationFiles(functionFiles, REPOSITORY_ROOT, notForFunctionFiles())];
  const result = {
    ok: results.every((r) => r.ok),
    report: results
      .map((r) => r.report)
      .filter(Boolean)
      .join('\n'),
  };
  process.stdout.write(`lint:migrations: ${files.length} file(s) new or changed since ${commit.slice(0, 12)}: ${files.join(', ')}\n`);
  if (result.ok) return;
  process.stderr.write(`${result.report}\n`);
  process.stderr.write(
    'lint:migrations: fix the migration, or justify the exception in it: the reason, then `-- squawk-ignore <rule>` on the line right above the statement (docs/operations.md "Upgrades")\n',
  );
  process.exitCode = 1;
}

if (require.main === module) main();
