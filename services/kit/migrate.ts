/**
 * Forward-only SQL migrations, one PostgreSQL schema per service.
 *
 * Each service owns a `migrations/` folder of numbered files (`0001_name.sql`); the
 * kit owns a few more (the transactional outbox, consumer-side dedupe) that every
 * service applies into its own schema before its own files. Applied files are
 * recorded in `<schema>.schema_migrations` with their sha256, so an edited applied
 * migration is refused instead of silently diverging: the fix is a new file. The
 * checked-in manifest (migration-manifest.ts) pins every landed file's sha256, so an
 * edit fails the tests before it reaches a database; `KNOWN_EDITS` lists the few
 * superseded checksums still accepted.
 *
 * Several replicas may start at once: everything runs in ONE transaction that first
 * takes a global transaction-scoped advisory lock, so runs serialize (CREATE SCHEMA
 * and CREATE EXTENSION never race) and a failing file leaves nothing half-applied.
 * Consequence: a file cannot contain statements that refuse to run inside a
 * transaction (`CREATE INDEX CONCURRENTLY`, `VACUUM`, its own `BEGIN`/`COMMIT`).
 *
 * Files run with `search_path` = `<schema>, public`. Extensions are database-wide, so
 * create them `with schema public` (`create extension if not exists btree_gist with
 * schema public`): otherwise the first service to run would own the extension's
 * objects in its schema, out of every other service's search_path.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sql, Tx } from './database';
import type { Logger } from './logger';

/** A folder of migration files and the label its ids carry. */
export interface MigrationSource {
  /** label used in ids, e.g. 'kit' or 'service' */
  prefix: string;
  dir: string;
}

/** The kit's own migrations (outbox, processed_events), applied first by every service. */
export const KIT_MIGRATIONS: MigrationSource = { prefix: 'kit', dir: join(__dirname, 'migrations') };

/**
 * Key of the advisory lock every migration run takes (ASCII "psyncmig"). Global on
 * purpose, not per schema: extensions are database-wide.
 */
const MIGRATION_LOCK_KEY = '8102953669591132519';

/**
 * Takes the migration lock for the rest of `tx`. Advisory locks belong to the
 * database, not to a role: a service role's migrations and the administrator's role
 * set-up (database-roles.ts) serialize on the same key.
 */
export async function takeMigrationLock(tx: Tx): Promise<void> {
  await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY}::bigint)`;
}

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

/** Schema names are interpolated as identifiers, so they are kept to a plain shape. */
const SCHEMA_NAME = /^[a-z][a-z0-9_]*$/;
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
    const names = readdirSync(source.dir)
      .filter((n) => n.endsWith('.sql'))
      .sort();
    const numbers = new Map<string, string>();
    for (const name of names) {
      const m = FILE_NAME.exec(name);
      if (!m) throw new Error(`migration file ${join(source.dir, name)} is not named NNNN_name.sql (lower-case name)`);
      const other = numbers.get(m[1]!);
      if (other) throw new Error(`migration files ${other} and ${name} in ${source.dir} share the number ${m[1]}`);
      numbers.set(m[1]!, name);
      const file = join(source.dir, name);
      const bytes = readFileSync(file);
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

/**
 * Applies the pending migrations of `sources` (in the given order, files sorted by
 * name) to `schema`, creating the schema and its `schema_migrations` table if needed.
 * Files run with `search_path` = `<schema>, public`, so they use unqualified names.
 *
 * Throws, applying nothing, when an applied file's checksum changed (unless the
 * recorded one is in `KNOWN_EDITS` for that file) or a file fails.
 * Returns the ids applied by this call (empty when up to date).
 */
export async function runMigrations(sql: Sql, opts: { schema: string; sources: MigrationSource[]; log?: Logger }): Promise<{ schema: string; applied: string[] }> {
  const { schema, log } = opts;
  if (!SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name ${JSON.stringify(schema)}: expected ${SCHEMA_NAME}`);
  const files = loadMigrations(opts.sources);
  const table = `${schema}.schema_migrations`;

  const applied = await sql.begin(async (tx: Tx) => {
    await takeMigrationLock(tx);
    // Not `create schema if not exists`: that checks CREATE on the database first, which
    // a service role owning its schema does not have (database-roles.ts).
    const [existing] = await tx`select 1 from pg_namespace where nspname = ${schema}`;
    if (!existing) await tx`create schema ${tx(schema)}`;
    await tx`
      create table if not exists ${tx(table)} (
        id text primary key,
        checksum text not null,
        applied_at timestamptz not null default now()
      )`;
    const rows = await tx<{ id: string; checksum: string }[]>`select id, checksum from ${tx(table)}`;
    const known = new Map(rows.map((r) => [r.id, r.checksum]));

    const done: string[] = [];
    for (const m of files) {
      const recorded = known.get(m.id);
      if (recorded !== undefined) {
        if (!acceptsChecksum(m.id, m.checksum, recorded)) {
          throw new Error(
            `migration ${m.id} (${m.file}) was changed after it was applied to schema ${schema} ` +
              `(checksum ${recorded} recorded, ${m.checksum} on disk); migrations are forward-only: add a new file instead`,
          );
        }
        continue;
      }
      // Set before every file: a previous file may have changed search_path.
      await tx`set local search_path to ${tx(schema)}, public`;
      try {
        await tx.unsafe(m.content);
      } catch (err) {
        throw new Error(`migration ${m.id} (${m.file}) failed on schema ${schema}: ${(err as Error).message}`, { cause: err });
      }
      await tx`insert into ${tx(table)} (id, checksum) values (${m.id}, ${m.checksum})`;
      done.push(m.id);
    }
    return done;
  });
  // Logged after the commit: a later failing file rolls the earlier ones back too.
  for (const id of applied) log?.info({ schema, migration: id }, 'migration applied');
  return { schema, applied: [...applied] };
}
