/**
 * Baselines (services/kit/db/migration-files.ts, tools/migration-baseline.ts): a new
 * schema applies a folder's baseline and the migrations after it; a schema holding the
 * migrations it replaces goes on after it; a schema older than that is refused. And the
 * tree's baselines are the schema the previous release's migrations made: a database
 * created from this tree and one the previous release migrated, then this tree, are the
 * same schema, function for function. Real PostgreSQL when DATABASE_URL is set, else
 * embedded PGlite.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KIT_MIGRATIONS, loadMigrations, runMigrations, type MigrationSource, type Sql } from '../../services/kit/db';
import { identityModule } from '../../services/identity/module';
import { catalogModule } from '../../services/catalog/module';
import { calendarModule } from '../../services/calendar/module';
import { notificationsModule } from '../../services/notifications/module';
import { describeSchema } from '../support/schema-description';
import { previousReleaseSql, type ReleaseSql } from '../support/previous-release-sql';
import { startTestDatabase, type TestDatabase } from '../support/database';

const SERVICE_MODULES = [identityModule, catalogModule, calendarModule, notificationsModule];

let fixtures: string;
let folders = 0;
/** A migration folder of prefix `svc` holding `files`. */
function folder(files: Record<string, string>): MigrationSource {
  const dir = join(fixtures, `svc-${++folders}`);
  mkdirSync(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return { prefix: 'svc', dir };
}

async function recorded(sql: Sql, schema: string): Promise<string[]> {
  return (await sql<{ id: string }[]>`select id from ${sql(`${schema}.schema_migrations`)} order by id`).map((r) => r.id);
}

const FIRST = 'create table a (id int primary key);';
const SECOND = 'alter table a add column b text;';
const THIRD = 'create table c (id int primary key);';
const BASELINE = 'create table a (id int primary key, b text);';

let db: TestDatabase;
beforeAll(async () => {
  fixtures = mkdtempSync(join(tmpdir(), 'psync-baseline-'));
  db = await startTestDatabase();
}, 120_000);
afterAll(async () => {
  await db?.stop();
  if (fixtures) rmSync(fixtures, { recursive: true, force: true });
});

describe('a baseline at the head of a migration folder', () => {
  const after = () => folder({ '0002_baseline.sql': BASELINE, '0003_c.sql': THIRD });

  test('a new schema applies the baseline, records it, and goes on with the migrations after it', async () => {
    const { applied } = await runMigrations(db.sql, { schema: 'bl_fresh', sources: [after()] });
    expect(applied).toEqual(['svc/0002_baseline', 'svc/0003_c']);
    expect(await db.sql`select column_name from information_schema.columns where table_schema = 'bl_fresh' and table_name = 'a' order by ordinal_position`).toEqual([
      { column_name: 'id' },
      { column_name: 'b' },
    ]);
    expect((await runMigrations(db.sql, { schema: 'bl_fresh', sources: [after()] })).applied).toEqual([]);
  });

  test('a schema holding the migrations it replaces skips it, whichever text each had, and applies the ones after it', async () => {
    await runMigrations(db.sql, { schema: 'bl_past', sources: [folder({ '0001_a.sql': FIRST, '0002_b.sql': `${SECOND}\n-- another text of it\n` })] });
    const { applied } = await runMigrations(db.sql, { schema: 'bl_past', sources: [after()] });
    expect(applied).toEqual(['svc/0003_c']);
    expect(await recorded(db.sql, 'bl_past')).toEqual(['svc/0001_a', 'svc/0002_b', 'svc/0003_c']);
    expect((await runMigrations(db.sql, { schema: 'bl_past', sources: [after()] })).applied).toEqual([]);
  });

  test('a schema older than the baseline is refused, naming what it holds and what it needs, and nothing is applied', async () => {
    await runMigrations(db.sql, { schema: 'bl_old', sources: [folder({ '0001_a.sql': FIRST })] });
    await expect(runMigrations(db.sql, { schema: 'bl_old', sources: [after()] })).rejects.toThrow(
      /schema bl_old holds the svc migrations up to 0001, and .*0002_baseline\.sql replaces those up to 0002: upgrade it through the release the baseline was cut from first/,
    );
    expect(await recorded(db.sql, 'bl_old')).toEqual(['svc/0001_a']);
  });

  test('an applied baseline whose text changed is refused like any applied migration', async () => {
    await runMigrations(db.sql, { schema: 'bl_edited', sources: [folder({ '0002_baseline.sql': BASELINE })] });
    await expect(runMigrations(db.sql, { schema: 'bl_edited', sources: [folder({ '0002_baseline.sql': `${BASELINE}\n` })] })).rejects.toThrow(
      /migration svc\/0002_baseline .* was changed after it was applied to schema bl_edited/,
    );
  });

  test('a baseline stands first in its folder: a migration it would replace beside it fails loudly', () => {
    expect(() => loadMigrations([folder({ '0001_a.sql': FIRST, '0002_baseline.sql': BASELINE })])).toThrow(
      /0002_baseline\.sql replaces the migrations numbered up to 0002: it must be the first file/,
    );
    expect(loadMigrations([after()]).map((m) => [m.id, m.number, m.baseline])).toEqual([
      ['svc/0002_baseline', 2, true],
      ['svc/0003_c', 3, false],
    ]);
  });
});

describe("the tree's baselines are the previous release's schema", () => {
  let previous: ReleaseSql;
  let history: TestDatabase;
  beforeAll(async () => {
    previous = previousReleaseSql();
    history = await startTestDatabase();
  }, 120_000);
  afterAll(async () => {
    await history?.stop();
    previous?.remove();
  });

  test('every folder of the tree starts with a baseline', () => {
    for (const m of SERVICE_MODULES) expect(loadMigrations([m.migrations])[0]!.baseline).toBe(true);
    expect(loadMigrations([KIT_MIGRATIONS])[0]!.baseline).toBe(true);
  });

  test.each(SERVICE_MODULES.map((m) => [m.name, m] as const))('%s: a new schema and one upgraded from the previous release are the same', async (name, m) => {
    const tree = [KIT_MIGRATIONS, m.migrations];
    const fresh = await runMigrations(db.sql, { schema: name, sources: tree });
    expect(fresh.applied.filter((id) => id.endsWith('_baseline'))).toEqual(tree.map((s) => loadMigrations([s])[0]!.id));

    await runMigrations(history.sql, { schema: name, sources: previous.sourcesFor(name) });
    const upgrade = await runMigrations(history.sql, { schema: name, sources: tree });
    expect(upgrade.applied.filter((id) => id.endsWith('_baseline'))).toEqual([]);
    expect((await recorded(history.sql, name)).filter((id) => id.endsWith('_baseline'))).toEqual([]);

    expect(await describeSchema(db.sql, name)).toEqual(await describeSchema(history.sql, name));
    for (const sql of [db.sql, history.sql]) expect(await runMigrations(sql, { schema: name, sources: tree })).toEqual({ schema: name, applied: [], functions: [] });
  });
});
