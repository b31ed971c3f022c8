/**
 * Repeatable SQL: the functions a service's code calls live in `<service>/functions/`,
 * one file per object or small family (`put_block.sql`, `events.sql`), never in a
 * migration (docs/operations.md "Migrate"). Migrations hold schema changes only: tables,
 * columns, constraints, indexes, types, triggers.
 *
 * A file starts with `-- version: N`. `migrate` (migrate.ts runMigrations) applies the
 * files after the schema migrations, in the same transaction, and records each file's
 * version and checksum in `<schema>.schema_functions`:
 * - not recorded yet, or recorded with a lower version → applied (`create or replace`);
 * - recorded with the same version → nothing, when the text is the same; a failure
 *   when it differs: the file changed without raising its version;
 * - recorded with a higher version → nothing: the database already holds what a newer
 *   release wrote, and an older release starting beside it (a rolling upgrade, a
 *   rollback; every process migrates at start-up) must not put its older text back.
 *   The newer text serves both releases: a new version keeps the arguments and results
 *   the previous release calls it with (docs/operations.md "Upgrades").
 * So a change to a function is an edit of its file plus a higher version, and the
 * manifest (migration-manifest.ts) pins each landed version's checksum as it pins the
 * migrations'.
 *
 * Files run with `check_function_bodies` off (as pg_dump's output does), so they may
 * name each other in any order; PL/pgSQL bodies are checked when they first run, and
 * every one runs in the tests. A SQL-standard body (`return …`) is still parsed at once,
 * so one calling a function of another file needs that file earlier in name order.
 * Removing a function is a schema change: a migration drops it, and its file goes.
 */
import { dirname, join } from 'node:path';
import type { Tx } from './database';
import { logEvent, type Logger } from '../base';
import { migrationChecksum, type MigrationSource } from './migration-files';
import { readSqlDir, sqlDirExists } from './sql-tree';

/** `name.sql`: a lower-case name. */
const FILE_NAME = /^[a-z][a-z0-9_]*\.sql$/;
/** The first line of every file. */
const VERSION_LINE = /^-- version: ([1-9][0-9]*)\n/;

/** One repeatable file as migrate sees it. */
export interface FunctionFile {
  /** `<prefix>/<file name without .sql>` */
  id: string;
  file: string;
  version: number;
  content: string;
  checksum: string;
}

/** The `functions/` folder beside a source's `migrations/` folder. */
export function functionsDirOf(source: MigrationSource): string {
  return join(dirname(source.dir), 'functions');
}

/** The repeatable files of every source (a source may have none), each source's in name order. */
export function loadFunctionFiles(sources: MigrationSource[]): FunctionFile[] {
  const files: FunctionFile[] = [];
  for (const source of sources) {
    const dir = functionsDirOf(source);
    if (!sqlDirExists(dir)) continue;
    for (const { name, bytes } of readSqlDir(dir)) {
      const file = join(dir, name);
      if (!FILE_NAME.test(name)) throw new Error(`${file} is not named name.sql (lower-case name); ${dir} holds only repeatable SQL files`);
      const content = bytes.toString('utf8');
      const m = VERSION_LINE.exec(content);
      if (!m) throw new Error(`${file} does not start with a \`-- version: N\` line (services/kit/db/sql-functions.ts)`);
      files.push({ id: `${source.prefix}/${name.slice(0, -'.sql'.length)}`, file, version: Number(m[1]), content, checksum: migrationChecksum(bytes) });
    }
  }
  return files;
}

/**
 * Applies `files` to `schema` inside `tx` (which holds the migration lock and has
 * run the schema migrations) as the header says. Returns the ids applied.
 */
export async function applyFunctionFiles(tx: Tx, schema: string, files: FunctionFile[], log?: Logger): Promise<string[]> {
  const table = `${schema}.schema_functions`;
  await tx`
    create table if not exists ${tx(table)} (
      id text primary key,
      version integer not null,
      checksum text not null,
      applied_at timestamptz not null default now()
    )`;
  const rows = await tx<{ id: string; version: number; checksum: string }[]>`select id, version, checksum from ${tx(table)}`;
  const recorded = new Map(rows.map((r) => [r.id, r]));
  const applied: string[] = [];
  for (const f of files) {
    const had = recorded.get(f.id);
    if (had && had.version > f.version) {
      log?.warn(
        { event: logEvent('sql_function.kept_newer'), schema, function: f.id, database: had.version, release: f.version },
        'repeatable SQL left as is: the database holds a newer version (a newer release migrated it)',
      );
      continue;
    }
    if (had && had.version === f.version) {
      if (had.checksum === f.checksum) continue;
      throw new Error(
        `${f.file} changed without raising its version: schema ${schema} holds version ${f.version} with checksum ${had.checksum}, ` +
          `the file has ${f.checksum}; raise the \`-- version:\` line and run \`npm run migrations:manifest\``,
      );
    }
    // Set before every file: a previous file may have changed them.
    await tx`set local search_path to ${tx(schema)}, public`;
    await tx`set local check_function_bodies = off`;
    try {
      await tx.unsafe(f.content);
    } catch (err) {
      throw new Error(`repeatable SQL ${f.id} (${f.file}) failed on schema ${schema}: ${(err as Error).message}`, { cause: err });
    }
    await tx`
      insert into ${tx(table)} (id, version, checksum) values (${f.id}, ${f.version}, ${f.checksum})
      on conflict (id) do update set version = excluded.version, checksum = excluded.checksum, applied_at = now()`;
    applied.push(f.id);
  }
  return applied;
}
