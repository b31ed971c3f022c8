/**
 * Forward-only SQL migrations, one PostgreSQL schema per service.
 *
 * Each service owns a `migrations/` folder of numbered files (`0001_name.sql`); the
 * kit owns a few more (the transactional outbox, consumer-side dedupe) that every
 * service applies into its own schema before its own files. Applied files are
 * recorded in `<schema>.schema_migrations` with their sha256, so an edited applied
 * migration is refused instead of silently diverging: the fix is a new file. The
 * checked-in manifest (tools/migration-manifest.ts) pins every landed file's sha256, so
 * an edit fails the tests before it reaches a database.
 *
 * A source may have a baseline (migration-baseline.ts): a new schema runs it in place of
 * the landed migrations it replaces and records them; a schema holding them skips it and
 * no longer compares their checksums; an older schema is refused.
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
import type { Sql, Tx } from './database';
import { logEvent, type Logger } from '../base';
import type { MigrationSource } from './migration-files';
import { baselineStep, migrationPlan } from './migration-baseline';
import { applyFunctionFiles, loadFunctionFiles } from './sql-functions';

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

/** Schema names are interpolated as identifiers, so they are kept to a plain shape. */
const SCHEMA_NAME = /^[a-z][a-z0-9_]*$/;

/**
 * Applies the pending migrations of `sources` (in the given order, files sorted by
 * name) to `schema`, creating the schema and its `schema_migrations` table if needed,
 * then the sources' repeatable SQL files (sql-functions.ts: functions/ beside each
 * migrations/ folder). Files run with `search_path` = `<schema>, public`, so they use
 * unqualified names.
 *
 * Throws, applying nothing, when an applied file's checksum changed, a file fails, or
 * the schema predates a baseline (migration-baseline.ts baselineStep).
 * Returns the ids applied by this call (empty when up to date): baselines
 * (`<prefix>/baseline`) and migrations in `applied`, repeatable files in `functions`.
 */
export async function runMigrations(
  sql: Sql,
  opts: { schema: string; sources: MigrationSource[]; log?: Logger },
): Promise<{ schema: string; applied: string[]; functions: string[] }> {
  const { schema, log } = opts;
  if (!SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name ${JSON.stringify(schema)}: expected ${SCHEMA_NAME}`);
  const steps = migrationPlan(opts.sources);
  const functions = loadFunctionFiles(opts.sources);
  const table = `${schema}.schema_migrations`;

  const result = await sql.begin(async (tx: Tx) => {
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
    /** Runs `content` as the file `id`; search_path set before each: an earlier file may have changed it. */
    const run = async (id: string, file: string, content: string) => {
      await tx`set local search_path to ${tx(schema)}, public`;
      try {
        await tx.unsafe(content);
      } catch (err) {
        throw new Error(`migration ${id} (${file}) failed on schema ${schema}: ${(err as Error).message}`, { cause: err });
      }
      done.push(id);
    };
    for (const { baseline, files } of steps) {
      if (baseline && baselineStep(baseline, known, schema) === 'apply') {
        await run(baseline.id, baseline.file, baseline.content);
        for (const [id, checksum] of baseline.replaces) {
          await tx`insert into ${tx(table)} (id, checksum) values (${id}, ${checksum})`;
          known.set(id, checksum);
        }
      }
      for (const m of files) {
        const recorded = known.get(m.id);
        if (recorded !== undefined) {
          if (recorded !== m.checksum) {
            throw new Error(
              `migration ${m.id} (${m.file}) was changed after it was applied to schema ${schema} ` +
                `(checksum ${recorded} recorded, ${m.checksum} on disk); migrations are forward-only: add a new file instead`,
            );
          }
          continue;
        }
        await run(m.id, m.file, m.content);
        await tx`insert into ${tx(table)} (id, checksum) values (${m.id}, ${m.checksum})`;
      }
    }
    return { done, functions: await applyFunctionFiles(tx, schema, functions, log) };
  });
  // Logged after the commit: a later failing file rolls the earlier ones back too.
  for (const id of result.done) log?.info({ event: logEvent('migration.applied'), schema, migration: id }, 'migration applied');
  for (const id of result.functions) log?.info({ event: logEvent('sql_function.applied'), schema, function: id }, 'repeatable SQL applied');
  return { schema, applied: [...result.done], functions: [...result.functions] };
}
