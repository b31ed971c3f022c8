/**
 * Migration files on disk: where they are (one `migrations/` folder per service, plus
 * the kit's, applied first into every schema), how they are named (`0001_name.sql`),
 * their ids (`<prefix>/<name>`) and checksums. migrate.ts applies them; the manifest
 * (tools/migration-manifest.ts) pins them; sql-functions.ts reads the repeatable files
 * kept beside them; migration-baseline.ts reads the baseline that replaces the landed ones.
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
/**
 * `NNNN_baseline.sql` in a `migrations/` folder: a baseline cut into the folder itself
 * (from release 91d5bee) and withdrawn before any database ran it; the baselines migrate
 * runs live beside the folder (migration-baseline.ts). The landing gate keeps every
 * migration file a landed history held, so these stay, byte for byte, and are never read.
 */
const WITHDRAWN_BASELINE = /^\d{4}_baseline\.sql$/;
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

/**
 * Reads and orders the files of every source; malformed names fail loudly (a typo would
 * otherwise be skipped forever). `skip` leaves out ids (a baseline's) without reading them.
 */
export function loadMigrations(sources: MigrationSource[], skip: (id: string) => boolean = () => false): MigrationFile[] {
  const prefixes = new Set<string>();
  const files: MigrationFile[] = [];
  for (const source of sources) {
    if (!PREFIX_NAME.test(source.prefix)) throw new Error(`invalid migration prefix ${JSON.stringify(source.prefix)}: expected ${PREFIX_NAME}`);
    if (prefixes.has(source.prefix)) throw new Error(`migration prefix ${JSON.stringify(source.prefix)} is used by two sources`);
    prefixes.add(source.prefix);
    const idOf = (name: string) => `${source.prefix}/${name.slice(0, -'.sql'.length)}`;
    const entries = readSqlDir(source.dir, (name) => name.endsWith('.sql') && !WITHDRAWN_BASELINE.test(name) && !skip(idOf(name)));
    const numbers = new Map<string, string>();
    for (const { name, bytes } of entries) {
      const m = FILE_NAME.exec(name);
      if (!m) throw new Error(`migration file ${join(source.dir, name)} is not named NNNN_name.sql (lower-case name)`);
      const other = numbers.get(m[1]!);
      if (other) throw new Error(`migration files ${other} and ${name} in ${source.dir} share the number ${m[1]}`);
      numbers.set(m[1]!, name);
      const file = join(source.dir, name);
      files.push({
        id: idOf(name),
        file,
        content: bytes.toString('utf8'),
        checksum: migrationChecksum(bytes),
      });
    }
  }
  return files;
}
