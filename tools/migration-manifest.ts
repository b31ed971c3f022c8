/**
 * The checked-in manifest of landed migrations: `services/migrations.manifest.json`
 * maps every migration id (`<prefix>/<file name without .sql>`, as in
 * `schema_migrations`) to the sha256 runMigrations records for it (migrate.ts).
 *
 * Migrations are immutable once landed (docs/operations.md "Migrate"): the test
 * test/kit/migration-manifest.test.ts fails when a listed file changed or disappeared,
 * and when a file is not listed yet. `npm run migrations:manifest` (this file run
 * directly) adds the entries of new files and never rewrites an existing one. A file a
 * baseline replaces (services/kit/db/migration-baseline.ts) stays, as history, and so
 * does its entry: the baseline's header must name each replaced migration with the
 * checksum listed here, which migrate records for it on a new schema.
 *
 * Repeatable SQL files (sql-functions.ts) change by raising their version, so the
 * manifest's `functions` pins each landed version, `<prefix>/<name>@<version>` → sha256:
 * a file changed without a higher version fails the same test.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type Baseline, KIT_MIGRATIONS, loadBaseline, loadMigrations, type MigrationFile, type MigrationSource } from '../services/kit/db';
import { loadFunctionFiles, type FunctionFile } from '../services/kit/db';

/** The folder holding `kit/` and one folder per service. */
const SERVICES_DIR = join(__dirname, '..', 'services');

/** Where the manifest lives. */
export const MANIFEST_PATH = join(SERVICES_DIR, 'migrations.manifest.json');

/** The manifest's fixed explanation, kept in the file for whoever opens it. */
const MANIFEST_COMMENT =
  'sha256 of every landed migration (tools/migration-manifest.ts). Never edit an entry: ' +
  'change a landed migration by adding a new one; `npm run migrations:manifest` adds the entries of new files.';

export interface Manifest {
  $comment: string;
  /** migration id → sha256 hex */
  migrations: Record<string, string>;
  /** `<repeatable file id>@<version>` → sha256 hex */
  functions: Record<string, string>;
}

/**
 * Every migration folder: the kit's, then `<services>/<name>/migrations` of each
 * service, prefixed with the folder's name as each service module declares it.
 */
export function allMigrationSources(servicesDir = SERVICES_DIR): MigrationSource[] {
  const services = readdirSync(servicesDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== 'kit' && existsSync(join(servicesDir, d.name, 'migrations')))
    .map((d) => d.name)
    .sort();
  return [
    { prefix: KIT_MIGRATIONS.prefix, dir: join(servicesDir, 'kit', 'migrations') },
    ...services.map((name) => ({ prefix: name, dir: join(servicesDir, name, 'migrations') })),
  ];
}

/** Every migration file on disk, read and checksummed exactly as runMigrations does. */
export function currentMigrations(servicesDir = SERVICES_DIR): MigrationFile[] {
  return loadMigrations(allMigrationSources(servicesDir));
}

/** Every baseline on disk (a folder may have none). */
export function currentBaselines(servicesDir = SERVICES_DIR): Baseline[] {
  return allMigrationSources(servicesDir).flatMap((s) => loadBaseline(s) ?? []);
}

/** Every repeatable SQL file on disk, as runMigrations reads them. */
export function currentFunctionFiles(servicesDir = SERVICES_DIR): FunctionFile[] {
  return loadFunctionFiles(allMigrationSources(servicesDir));
}

/** A repeatable file's manifest key. */
export const functionKey = (f: Pick<FunctionFile, 'id' | 'version'>): string => `${f.id}@${f.version}`;

export function readManifest(path = MANIFEST_PATH): Manifest {
  const m = JSON.parse(readFileSync(path, 'utf8')) as Partial<Manifest>;
  return { $comment: MANIFEST_COMMENT, migrations: m.migrations ?? {}, functions: m.functions ?? {} };
}

const sorted = (r: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/** Sorted ids, two-space indentation, a final newline: regenerating it never reorders the file. */
export function formatManifest(manifest: Manifest): string {
  return `${JSON.stringify({ $comment: MANIFEST_COMMENT, migrations: sorted(manifest.migrations), functions: sorted(manifest.functions) }, null, 2)}\n`;
}

export interface ManifestCheck {
  /** Listed files whose content changed. */
  changed: Array<{ id: string; file: string; listed: string; current: string }>;
  /** Listed ids with no file any more. */
  missing: string[];
  /** Files not listed yet. */
  unlisted: MigrationFile[];
  /** Migrations a baseline replaces with a checksum other than the manifest's, or without a listed file. */
  unfoundedBaselines: Array<{ file: string; id: string; named: string; listed: string | undefined }>;
  /** Repeatable files whose version is listed with other content: changed without raising the version. */
  changedFunctions: Array<{ key: string; file: string; listed: string; current: string }>;
  /** Repeatable files whose version is not listed yet. */
  unlistedFunctions: FunctionFile[];
}

/** Compares the manifest with the files. */
export function checkManifest(manifest: Manifest, files: MigrationFile[], functionFiles: FunctionFile[] = [], baselines: Baseline[] = []): ManifestCheck {
  const onDisk = new Map(files.map((f) => [f.id, f]));
  const changed: ManifestCheck['changed'] = [];
  const missing: string[] = [];
  for (const [id, listed] of Object.entries(manifest.migrations)) {
    const f = onDisk.get(id);
    if (!f) missing.push(id);
    else if (f.checksum !== listed) changed.push({ id, file: f.file, listed, current: f.checksum });
  }
  const unlisted = files.filter((f) => !(f.id in manifest.migrations));
  const unfoundedBaselines = baselines.flatMap((b) =>
    [...b.replaces]
      .filter(([id, named]) => manifest.migrations[id] !== named || !onDisk.has(id))
      .map(([id, named]) => ({ file: b.file, id, named, listed: manifest.migrations[id] })),
  );
  const changedFunctions: ManifestCheck['changedFunctions'] = [];
  const unlistedFunctions: FunctionFile[] = [];
  for (const f of functionFiles) {
    const listed = manifest.functions[functionKey(f)];
    if (listed === undefined) unlistedFunctions.push(f);
    else if (listed !== f.checksum) changedFunctions.push({ key: functionKey(f), file: f.file, listed, current: f.checksum });
  }
  return { changed, missing, unlisted, unfoundedBaselines, changedFunctions, unlistedFunctions };
}

/** The manifest with the unlisted files added; existing entries are kept as they are, changed or not. */
export function withNewEntries(manifest: Manifest, files: MigrationFile[], functionFiles: FunctionFile[] = []): Manifest {
  const check = checkManifest(manifest, files, functionFiles);
  const migrations = { ...manifest.migrations };
  for (const f of check.unlisted) migrations[f.id] = f.checksum;
  const functions = { ...manifest.functions };
  for (const f of check.unlistedFunctions) functions[functionKey(f)] = f.checksum;
  return { $comment: MANIFEST_COMMENT, migrations, functions };
}

/** `npm run migrations:manifest`: adds new files' entries; reports (never rewrites) changed or missing ones and exits 1 for them. */
function main(): void {
  const files = currentMigrations();
  const functionFiles = currentFunctionFiles();
  const manifest: Manifest = existsSync(MANIFEST_PATH) ? readManifest(MANIFEST_PATH) : { $comment: MANIFEST_COMMENT, migrations: {}, functions: {} };
  const check = checkManifest(manifest, files, functionFiles, currentBaselines());
  writeFileSync(MANIFEST_PATH, formatManifest(withNewEntries(manifest, files, functionFiles)));
  const where = relative(process.cwd(), MANIFEST_PATH);
  for (const f of check.unlisted) process.stdout.write(`added ${f.id} ${f.checksum} to ${where}\n`);
  for (const f of check.unlistedFunctions) process.stdout.write(`added ${functionKey(f)} ${f.checksum} to ${where}\n`);
  if (check.unlisted.length === 0 && check.unlistedFunctions.length === 0) process.stdout.write(`${where}: nothing new\n`);
  for (const c of check.changed) {
    process.stderr.write(`${c.id} (${c.file}) changed after it landed: restore it and put the change in a new migration\n`);
  }
  for (const id of check.missing) process.stderr.write(`${id} is listed but its file is gone: restore it\n`);
  for (const b of check.unfoundedBaselines) process.stderr.write(`${b.file} replaces ${b.id} as ${b.named}, but it landed as ${b.listed ?? 'nothing'}: cut it again\n`);
  for (const c of check.changedFunctions) process.stderr.write(`${c.file} changed without raising its version (${c.key} landed as ${c.listed}): raise its \`-- version:\` line\n`);
  if (check.changed.length > 0 || check.missing.length > 0 || check.unfoundedBaselines.length > 0 || check.changedFunctions.length > 0) process.exitCode = 1;
}

if (require.main === module) main();
