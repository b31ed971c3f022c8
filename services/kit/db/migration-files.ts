/**
 * Migration files on disk: where they are (one `migrations/` folder per service, plus
 * the kit's, applied first into every schema), how they are named (`0001_name.sql`),
 * their ids (`<prefix>/<name>`) and checksums. migrate.ts applies them; the manifest
 * (migration-manifest.ts) pins them; sql-functions.ts reads the repeatable files kept
 * beside them.
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

/**
 * Checksums a landed migration had before it was edited in place, accepted for that
 * file (and only that file) as if they were its current one: databases that applied
 * the edited text must still start. Each entry needs its reason; the file on disk is
 * the text that first landed, and the edit's effect lives in a later migration.
 * Never add an entry to allow a new edit: write a new migration instead.
 */
export const KNOWN_EDITS: Readonly<Record<string, readonly string[]>> = {
  // Edited after it landed (authorize_batch's counter loop without a retry); the edit's
  // body is identity/0004_authorize_batch_insert_first, which every database applies.
  'identity/0002_authorize_batch': ['52f1515654f5a67fe64e1903530e46c92fdeab3eebccafeaec2fe84b7fe60611'],
};

/** Whether `recorded`, the checksum a database holds for `id`, matches the file's `checksum` or a known superseded one. */
export function acceptsChecksum(id: string, checksum: string, recorded: string): boolean {
  return recorded === checksum || (KNOWN_EDITS[id]?.includes(recorded) ?? false);
}

const PREFIX_NAME = /^[a-z][a-z0-9_-]*$/;
/** `NNNN_name.sql`: four digits (the order), an underscore, a lower-case name. */
const FILE_NAME = /^(\d{4})_[a-z0-9_]+\.sql$/;

/** One migration file as runMigrations sees it. */
export interface MigrationFile {
  /** `<prefix>/<file name without .sql>` */
  id: string;
  file: string;
  content: string;
  checksum: string;
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
      const file = join(source.dir, name);
      files.push({
        id: `${source.prefix}/${name.slice(0, -'.sql'.length)}`,
        file,
        content: bytes.toString('utf8'),
        checksum: migrationChecksum(bytes),
      });
    }
  }
  return files;
}
