/**
 * Repeatable SQL (services/kit/db/sql-functions.ts) against a real database: PostgreSQL
 * when DATABASE_URL is set, the embedded PGlite server otherwise.
 *
 * - the version rule: a new or higher version is applied after the schema migrations,
 *   the same version is left alone, an edit without a higher version refuses to
 *   migrate (nothing of the run is applied), and an older release's lower version
 *   leaves the newer text in place with a warning;
 * - the repository's own files: every function of the four services' schemas is
 *   defined by exactly one repeatable file, and no repeatable file defines a function
 *   the schemas do not end up with.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import pino from 'pino';
import type { Sql } from '../../services/kit/db';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS, type MigrationSource } from '../../services/kit/db';
import { currentFunctionFiles } from '../../tools/migration-manifest';
import { loadFunctionFiles } from '../../services/kit/db';
import { identityModule } from '../../services/identity/module';
import { catalogModule } from '../../services/catalog/module';
import { calendarModule } from '../../services/calendar/module';
import { notificationsModule } from '../../services/notifications/module';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { ROOT } from '../support/process';
import { logEvents } from '../support/log-events';

let db: TestDatabase;
let sql: Sql;
let fixtures: string;

beforeAll(async () => {
  db = await startTestDatabase();
  sql = db.sql;
  fixtures = mkdtempSync(join(tmpdir(), 'psync-sql-functions-'));
});

afterAll(async () => {
  await db?.stop();
  if (fixtures) rmSync(fixtures, { recursive: true, force: true });
});

/** A service folder `<fixtures>/<name>` with `migrations/` and `functions/` holding the given files. */
function service(name: string, migrations: Record<string, string>, functions: Record<string, string>): MigrationSource {
  const root = join(fixtures, name);
  for (const [folder, files] of [
    ['migrations', migrations],
    ['functions', functions],
  ] as const) {
    mkdirSync(join(root, folder), { recursive: true });
    for (const [file, content] of Object.entries(files)) writeFileSync(join(root, folder, file), content);
  }
  return { prefix: name, dir: join(root, 'migrations') };
}

const answer = (version: number, value: number) =>
  `-- version: ${version}\ncreate or replace function answer() returns integer language plpgsql as $$ begin return ${value}; end $$;\n`;

async function call(schema: string, fn: string): Promise<unknown> {
  const [row] = await sql.unsafe(`select ${schema}.${fn}() as v`);
  return (row as unknown as { v: unknown }).v;
}

describe('the version rule', () => {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });

  test('a new file is applied after the schema migrations, and recorded with its version', async () => {
    const src = service(
      'rep',
      { '0001_t.sql': 'create table t (v integer);' },
      { 'answer.sql': answer(1, 1), 'reads_t.sql': '-- version: 1\ncreate or replace function reads_t() returns bigint language sql return (select count(*) from t);\n' },
    );
    const result = await runMigrations(sql, { schema: 'rep', sources: [src], log });
    expect(result).toEqual({ schema: 'rep', applied: ['rep/0001_t'], functions: ['rep/answer', 'rep/reads_t'] });
    expect(await call('rep', 'answer')).toBe(1);
    expect(await call('rep', 'reads_t')).toBe('0');
    expect(await sql`select id, version from rep.schema_functions order by id`).toEqual([
      { id: 'rep/answer', version: 1 },
      { id: 'rep/reads_t', version: 1 },
    ]);
    expect(logEvents(lines, 'sql_function.applied').map((l) => l.function)).toEqual(['rep/answer', 'rep/reads_t']);
  });

  test('the same version again is left alone', async () => {
    const result = await runMigrations(sql, { schema: 'rep', sources: [{ prefix: 'rep', dir: join(fixtures, 'rep', 'migrations') }], log });
    expect(result.functions).toEqual([]);
  });

  test('an edit without a higher version refuses to migrate, and nothing of the run is applied', async () => {
    writeFileSync(join(fixtures, 'rep', 'functions', 'answer.sql'), answer(1, 5));
    writeFileSync(join(fixtures, 'rep', 'migrations', '0002_u.sql'), 'create table u (v integer);');
    await expect(runMigrations(sql, { schema: 'rep', sources: [{ prefix: 'rep', dir: join(fixtures, 'rep', 'migrations') }] })).rejects.toThrow(
      /answer\.sql changed without raising its version: schema rep holds version 1 .*raise the `-- version:` line/,
    );
    expect(await call('rep', 'answer')).toBe(1);
    const [u] = await sql<{ t: string | null }[]>`select to_regclass('rep.u')::text as t`;
    expect(u!.t).toBeNull();
  });

  test('a higher version is applied', async () => {
    writeFileSync(join(fixtures, 'rep', 'functions', 'answer.sql'), answer(2, 2));
    const result = await runMigrations(sql, { schema: 'rep', sources: [{ prefix: 'rep', dir: join(fixtures, 'rep', 'migrations') }] });
    expect(result).toEqual({ schema: 'rep', applied: ['rep/0002_u'], functions: ['rep/answer'] });
    expect(await call('rep', 'answer')).toBe(2);
  });

  test("an older release's lower version leaves the newer text in place, with a warning", async () => {
    lines.length = 0;
    const older = service('rep-old', {}, { 'answer.sql': answer(1, 1) });
    const result = await runMigrations(sql, { schema: 'rep', sources: [{ prefix: 'rep', dir: older.dir }], log });
    expect(result.functions).toEqual([]);
    expect(await call('rep', 'answer')).toBe(2);
    expect(logEvents(lines, 'sql_function.kept_newer').map((l) => [l.level, l.function, l.database, l.release])).toEqual([[40, 'rep/answer', 2, 1]]);
  });

  test('files may call each other in any order: bodies are checked when they run', async () => {
    const src = service(
      'order',
      {},
      {
        'a_caller.sql': '-- version: 1\ncreate or replace function a_caller() returns integer language plpgsql as $$ begin return callers.z_callee() + 1; end $$;\n',
        'z_callee.sql': '-- version: 1\ncreate or replace function z_callee() returns integer language plpgsql as $$ begin return 41; end $$;\n',
      },
    );
    await runMigrations(sql, { schema: 'callers', sources: [src] });
    expect(await call('callers', 'a_caller')).toBe(42);
  });

  test('a file without its version line, or misnamed, fails loudly', () => {
    const src = service('bad', {}, { 'f.sql': 'create or replace function f() returns integer language sql return 1;\n' });
    expect(() => loadFunctionFiles([src])).toThrow(/f\.sql does not start with a `-- version: N` line/);
    const named = service('bad-name', {}, { 'F-1.sql': '-- version: 1\n' });
    expect(() => loadFunctionFiles([named])).toThrow(/F-1\.sql is not named name\.sql/);
  });
});

/** `create or replace function <name>(` in a repeatable file (the kit's is inside a format() string). */
const DEFINES = /create\s+or\s+replace\s+function\s+([a-z_][a-z0-9_]*)\s*\(/gi;

describe("the repository's repeatable files", () => {
  const modules = [identityModule, catalogModule, calendarModule, notificationsModule];

  test('define every function of the four schemas, each in exactly one file', async () => {
    for (const m of modules) await runMigrations(sql, { schema: m.name, sources: [KIT_MIGRATIONS, m.migrations] });
    const definedBy = new Map<string, string[]>();
    for (const f of currentFunctionFiles()) {
      for (const [, name] of readFileSync(f.file, 'utf8').matchAll(DEFINES)) {
        const prefix = f.id.split('/')[0]!;
        const key = `${prefix}.${name!.toLowerCase()}`;
        definedBy.set(key, [...(definedBy.get(key) ?? []), relative(ROOT, f.file)]);
      }
    }
    expect([...definedBy].filter(([, files]) => files.length > 1)).toEqual([]);

    const rows = await sql<{ schema: string; name: string }[]>`
      select n.nspname as schema, p.proname as name
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname in ('identity', 'catalog', 'calendar', 'notifications')
        and not exists (select 1 from pg_depend d where d.objid = p.oid and d.deptype = 'e')
      order by 1, 2`;
    // A function of the kit's files is in every schema; a service's only in its own.
    const expected = (schema: string, name: string) => definedBy.has(`${schema}.${name}`) || definedBy.has(`kit.${name}`);
    expect(rows.filter((r) => !expected(r.schema, r.name)).map((r) => `${r.schema}.${r.name} is defined by no file of services/*/functions`)).toEqual([]);
    const present = new Set(rows.map((r) => `${r.schema}.${r.name}`));
    const missing = [...definedBy.keys()].filter((k) => !k.startsWith('kit.') && !present.has(k));
    expect(missing).toEqual([]);
  });
});
