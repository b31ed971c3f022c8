/**
 * Baselines: `baseline.sql` beside a source's `migrations/` folder (services/<name>/
 * baseline.sql, services/kit/baseline.sql) is the schema, and the rows, that the landed
 * migrations it names leave, cut by `npm run migrations:baseline` (tools/migration-baseline.ts)
 * from the release its header names. Its header lists each migration it replaces with the
 * checksum its landed file has (services/migrations.manifest.json):
 *
 *   -- release: <40 hex digits>
 *   -- replaces: calendar/0001_calendar <sha256>
 *
 * A new schema runs the baseline instead of those migrations and records each of them
 * with that checksum, so a release that still reads their files (the previous one, beside
 * this one in a rolling upgrade) finds them applied. A schema that holds all of them skips
 * the baseline and never compares their checksums again: they are history, kept in the
 * tree because landed files are immutable, and the tests prove the baseline equals them.
 * A schema that holds only some of them predates the baseline's release and is refused.
 * The files replaced are never read here, and the shipped build does not embed them.
 */
import { dirname, join } from 'node:path';
import { loadMigrations, migrationChecksum, type MigrationFile, type MigrationSource } from './migration-files';
import { readSqlFile } from './sql-tree';

/** One baseline as migrate sees it. */
export interface Baseline {
  /** `<prefix>/baseline` */
  id: string;
  file: string;
  content: string;
  checksum: string;
  /** The commit of the release it was cut from. */
  release: string;
  /** Each migration id it replaces → the checksum of that migration's landed file. */
  replaces: ReadonlyMap<string, string>;
}

/** A source's migrations as migrate runs them: its baseline, if any, then the files after it. */
export interface MigrationStep {
  source: MigrationSource;
  baseline: Baseline | undefined;
  files: MigrationFile[];
}

const RELEASE_LINE = /^-- release: ([0-9a-f]{40})$/;
const REPLACES_LINE = /^-- replaces: (\S+) ([0-9a-f]{64})$/;

/** Where a source's baseline is: beside its `migrations/` folder. */
export function baselinePathOf(source: MigrationSource): string {
  return join(dirname(source.dir), 'baseline.sql');
}

/** The release and replaced ids a baseline's header names; throws when it names none or another prefix's. */
export function parseBaselineHeader(text: string, file: string, prefix: string): { release: string; replaces: Map<string, string> } {
  let release: string | undefined;
  const replaces = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('--')) break;
    release ??= RELEASE_LINE.exec(line)?.[1];
    const m = REPLACES_LINE.exec(line);
    if (!m) continue;
    if (!m[1]!.startsWith(`${prefix}/`)) throw new Error(`${file} replaces ${m[1]}, a migration of another folder than ${prefix}'s`);
    replaces.set(m[1]!, m[2]!);
  }
  if (!release || replaces.size === 0) throw new Error(`${file}: its header names no \`-- release:\` or no \`-- replaces:\` line (services/kit/db/migration-baseline.ts)`);
  return { release, replaces };
}

/** The baseline of `source`, or undefined when it has none. */
export function loadBaseline(source: MigrationSource): Baseline | undefined {
  const file = baselinePathOf(source);
  const bytes = readSqlFile(file);
  if (bytes === undefined) return undefined;
  const content = bytes.toString('utf8');
  return { id: `${source.prefix}/baseline`, file, content, checksum: migrationChecksum(bytes), ...parseBaselineHeader(content, file, source.prefix) };
}

/**
 * Each source's baseline and the migrations it does not replace, which must all come
 * after the ones it does (a later file numbered among them would never run on a new schema).
 */
export function migrationPlan(sources: MigrationSource[]): MigrationStep[] {
  const baselines = sources.map(loadBaseline);
  const replaced = (id: string) => baselines.some((b) => b?.replaces.has(id) ?? false);
  const files = loadMigrations(sources, replaced);
  return sources.map((source, i) => {
    const baseline = baselines[i];
    const own = files.filter((f) => f.id.startsWith(`${source.prefix}/`));
    const last = baseline ? [...baseline.replaces.keys()].sort().at(-1)! : '';
    const early = own.find((f) => f.id < last);
    if (early) throw new Error(`${early.file} is numbered before ${last}, the last migration ${baseline!.file} replaces, and is not replaced by it: number it after`);
    return { source, baseline, files: own };
  });
}

/**
 * What migrate does with `baseline` on a schema that recorded `recorded`: apply it where
 * none of its source's migrations ran, skip it where every one it replaces did (whichever
 * text each had then), and refuse a schema in between: it comes from a release older than
 * the baseline's, so the migrations it lacks are nowhere in this release.
 */
export function baselineStep(baseline: Baseline, recorded: ReadonlyMap<string, string>, schema: string): 'apply' | 'skip' {
  const missing = [...baseline.replaces.keys()].filter((id) => !recorded.has(id));
  if (missing.length === 0) return 'skip';
  const prefix = baseline.id.slice(0, baseline.id.indexOf('/'));
  if (![...recorded.keys()].some((id) => id.startsWith(`${prefix}/`))) return 'apply';
  throw new Error(
    `schema ${schema} lacks ${missing.length} of the ${baseline.replaces.size} ${prefix} migrations ${baseline.file} replaces (${missing.join(', ')}): ` +
      `it is older than release ${baseline.release}, which the baseline was cut from; upgrade it through that release first (run its migrate), then this one`,
  );
}
