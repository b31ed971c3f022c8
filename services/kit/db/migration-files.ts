/**
 * Migration files on disk: where they are (one `migrations/` folder per service, plus
 * the kit's, applied first into every schema), how they are named (`0001_name.sql`, and
 * one `NNNN_baseline.sql` at the head of a folder), their ids (`<prefix>/<name>`) and
 * checksums. migrate.ts applies them; the manifest (tools/migration-manifest.ts) pins
 * them; sql-functions.ts reads the repeatable files kept beside them.
 *
 * A baseline is the schema as the source's migrations numbered up to its own number left
 * it, cut at a release (tools/migration-baseline.ts); those migrations then leave the
 * tree, and git history keeps them. A new schema applies the baseline and the migrations
 * after it; a schema that already holds the migrations it replaces goes on with the ones
 * after it (baselineStep).
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { readSqlDir, treePath } from './sql-tree';

/** A folder of migration files and the label its ids carry. */
export interface MigrationSource {
  /** label used in ids, e.g. 'kit' or 'service' */
  prefix: string;
  dir: string;
}

/** The kit's own migrations (outbox, processed_events), applied first by every service. */
export const KIT_MIGRATIONS: MigrationSource = { prefix: 'kit', dir: treePath('services/kit/migrations') };

const PREFIX_NAME = /^[a-z][a-z0-9_-]*$/;
/** `NNNN_name.sql`: four digits (the order), an underscore, a lower-case name. */
const FILE_NAME = /^(\d{4})_[a-z0-9_]+\.sql$/;
/** The name a baseline has: the number of the last migration it replaces. */
const BASELINE_NAME = /^\d{4}_baseline\.sql$/;

/** One migration file as runMigrations sees it. */
export interface MigrationFile {
  /** `<prefix>/<file name without .sql>` */
  id: string;
  file: string;
  content: string;
  checksum: string;
  /** The four digits of its name. */
  number: number;
  /** True for `NNNN_baseline.sql`: it replaces the migrations numbered up to `number`. */
  baseline: boolean;
}

/** The sha256 (hex) of a migration file's bytes, as recorded in `schema_migrations`. */
export function migrationChecksum(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Reads and orders the files of every source; malformed names fail loudly (a typo would otherwise be skipped forever). */
export function loadMigrations(sources: MigrationSource[]): MigrationFile[] {
  const prefixes = new Set<string>();
  const files: MigrationFile[] = [];
  for (const source of sources) {
    if (!PREFIX_NAME.test(source.prefix)) throw new Error(`invalid migration prefix ${JSON.stringify(source.prefix)}: expected ${PREFIX_NAME}`);
    if (prefixes.has(source.prefix)) throw new Error(`migration prefix ${JSON.stringify(source.prefix)} is used by two sources`);
    prefixes.add(source.prefix);
    const entries = readSqlDir(source.dir).filter((e) => e.name.endsWith('.sql'));
    const numbers = new Map<string, string>();
    for (const { name, bytes } of entries) {
      const m = FILE_NAME.exec(name);
      if (!m) throw new Error(`migration file ${join(source.dir, name)} is not named NNNN_name.sql (lower-case name)`);
      const other = numbers.get(m[1]!);
      if (other) throw new Error(`migration files ${other} and ${name} in ${source.dir} share the number ${m[1]}`);
      numbers.set(m[1]!, name);
      const baseline = BASELINE_NAME.test(name);
      if (baseline && numbers.size > 1) throw new Error(`${join(source.dir, name)} replaces the migrations numbered up to ${m[1]}: it must be the first file of ${source.dir}`);
      const file = join(source.dir, name);
      files.push({
        id: `${source.prefix}/${name.slice(0, -'.sql'.length)}`,
        file,
        content: bytes.toString('utf8'),
        checksum: migrationChecksum(bytes),
        number: Number(m[1]),
        baseline,
      });
    }
  }
  return files;
}

/** The number of a recorded migration id of `prefix` (`<prefix>/NNNN_name`), or undefined for another prefix. */
function numberOf(prefix: string, id: string): number | undefined {
  const m = /^(\d{4})_/.exec(id.slice(prefix.length + 1));
  return id.startsWith(`${prefix}/`) && m ? Number(m[1]) : undefined;
}

/**
 * What a schema that has not recorded `baseline` does with it, from the ids it has
 * recorded: a schema holding none of the source's migrations applies it; one holding the
 * last migration it replaces (migrations run in order, all or nothing, so it holds every
 * earlier one too, whichever text each had) skips it and goes on with the next; one in
 * between comes from a release older than the baseline's and is refused, naming what
 * it lacks.
 */
export function baselineStep(baseline: MigrationFile, recorded: Iterable<string>, schema: string): 'apply' | 'skip' {
  const prefix = baseline.id.slice(0, baseline.id.indexOf('/'));
  const numbers = [...recorded].map((id) => numberOf(prefix, id)).filter((n): n is number => n !== undefined);
  if (numbers.length === 0) return 'apply';
  const highest = Math.max(...numbers);
  if (highest >= baseline.number) return 'skip';
  const pad = (n: number) => String(n).padStart(4, '0');
  throw new Error(
    `schema ${schema} holds the ${prefix} migrations up to ${pad(highest)}, and ${baseline.file} replaces those up to ${pad(baseline.number)}: ` +
      `upgrade it through the release the baseline was cut from first (its header names it); this release upgrades only a schema at that release or later`,
  );
}
