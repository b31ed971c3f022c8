/**
 * Baselines (services/kit/db/migration-baseline.ts, tools/migration-baseline.ts): a new
 * schema runs a folder's baseline instead of the landed migrations it replaces, records
 * them with their landed checksums and goes on with the migrations after them; a schema
 * holding them skips it without comparing their checksums; a schema older than that is
 * refused; the previous release's binary (which reads the landed files, no baseline)
 * finds a baseline-made schema fully migrated. And the tree's baselines are their
 * history: a database created from the tree and one that replayed the landed files,
 * then migrated from the tree, are the same schema, function for function and row for
 * row, with the same record. Real PostgreSQL when DATABASE_URL is set, else embedded PGlite.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { KIT_MIGRATIONS, loadBaseline, loadMigrations, migrationChecksum, migrationPlan, runMigrations, type MigrationSource, type Sql } from '../../services/kit/db';
import { identityModule } from '../../services/identity/module';
import { catalogModule } from '../../services/catalog/module';
import { calendarModule } from '../../services/calendar/module';
import { notificationsModule } from '../../services/notifications/module';
import { baselineHeader } from '../../tools/migration-baseline';
import { git, REPOSITORY_ROOT, requireCommit } from '../../tools/previous-release';
import { describeSchema } from '../support/schema-description';
import { historySource } from '../support/migration-history';
import { startTestDatabase, type TestDatabase } from '../support/database';

jest.setTimeout(180_000);

const SERVICE_MODULES = [identityModule, catalogModule, calendarModule, notificationsModule];
const RELEASE = 'a'.repeat(40);

let fixtures: string;
let folders = 0;

const FIRST = 'create table a (id int primary key);';
const SECOND = 'alter table a add column b text;';
const THIRD = 'create table c (id int primary key);';
const BASELINE_BODY = 'create table a (id int primary key, b text);';

/**
 * A service folder of prefix `svc`: `migrations/` holding `files`, and a baseline
 * replacing `replaces` (names of those files) when given.
 */
function folder(files: Record<string, string>, replaces?: string[], body = BASELINE_BODY): MigrationSource {
  const root = join(fixtures, `svc-${++folders}`);
  const dir = join(root, 'migrations');
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  if (replaces) {
    const named = replaces.map((n) => ({ id: `svc/${n}`, checksum: migrationChecksum(Buffer.from(files[`${n}.sql`] ?? '')) }));
    writeFileSync(
      join(root, 'baseline.sql'),
      `${baselineHeader('svc', RELEASE, named)
        .map((l) => `-- ${l}`)
        .join('\n')}\n\n${body}\n`,
    );
  }
  return { prefix: 'svc', dir };
}

async function recorded(sql: Sql, schema: string): Promise<Record<string, string>> {
  const rows = await sql<{ id: string; checksum: string }[]>`select id, checksum from ${sql(`${schema}.schema_migrations`)} order by id`;
  return Object.fromEntries(rows.map((r) => [r.id, r.checksum]));
}

let db: TestDatabase;
beforeAll(async () => {
  fixtures = mkdtempSync(join(tmpdir(), 'psync-baseline-'));
  db = await startTestDatabase();
}, 120_000);
afterAll(async () => {
  await db?.stop();
  if (fixtures) rmSync(fixtures, { recursive: true, force: true });
});

describe('a baseline beside a migration folder', () => {
  const files = { '0001_a.sql': FIRST, '0002_b.sql': SECOND, '0003_c.sql': THIRD };
  const withBaseline = () => folder(files, ['0001_a', '0002_b']);

  test('a new schema runs the baseline, records the migrations it replaces with their landed checksums, then applies the ones after', async () => {
    const { applied } = await runMigrations(db.sql, { schema: 'bl_fresh', sources: [withBaseline()] });
    expect(applied).toEqual(['svc/baseline', 'svc/0003_c']);
    expect(await recorded(db.sql, 'bl_fresh')).toEqual({
      'svc/0001_a': migrationChecksum(Buffer.from(FIRST)),
      'svc/0002_b': migrationChecksum(Buffer.from(SECOND)),
      'svc/0003_c': migrationChecksum(Buffer.from(THIRD)),
    });
    expect(await db.sql`select column_name from information_schema.columns where table_schema = 'bl_fresh' and table_name = 'a' order by ordinal_position`).toEqual([
      { column_name: 'id' },
      { column_name: 'b' },
    ]);
    expect((await runMigrations(db.sql, { schema: 'bl_fresh', sources: [withBaseline()] })).applied).toEqual([]);
  });

  test("the previous release's binary, reading the landed files and no baseline, finds a baseline-made schema fully migrated", async () => {
    await runMigrations(db.sql, { schema: 'bl_rolling', sources: [withBaseline()] });
    const history = historySource(join(fixtures, 'rolling'), withBaseline());
    expect(await runMigrations(db.sql, { schema: 'bl_rolling', sources: [history] })).toEqual({ schema: 'bl_rolling', applied: [], functions: [] });
  });

  test('a schema holding the migrations it replaces skips it, whichever text each had, and applies the ones after it', async () => {
    await runMigrations(db.sql, { schema: 'bl_past', sources: [folder({ '0001_a.sql': FIRST, '0002_b.sql': `${SECOND}\n-- another text of it\n` })] });
    const { applied } = await runMigrations(db.sql, { schema: 'bl_past', sources: [withBaseline()] });
    expect(applied).toEqual(['svc/0003_c']);
    expect(Object.keys(await recorded(db.sql, 'bl_past'))).toEqual(['svc/0001_a', 'svc/0002_b', 'svc/0003_c']);
    expect((await recorded(db.sql, 'bl_past'))['svc/0002_b']).toBe(migrationChecksum(Buffer.from(`${SECOND}\n-- another text of it\n`)));
    expect((await runMigrations(db.sql, { schema: 'bl_past', sources: [withBaseline()] })).applied).toEqual([]);
  });

  test('a schema older than the baseline is refused, naming what it lacks and the release to upgrade through, and nothing is applied', async () => {
    await runMigrations(db.sql, { schema: 'bl_old', sources: [folder({ '0001_a.sql': FIRST })] });
    await expect(runMigrations(db.sql, { schema: 'bl_old', sources: [withBaseline()] })).rejects.toThrow(
      new RegExp(
        `schema bl_old lacks 1 of the 2 svc migrations .*baseline\\.sql replaces \\(svc/0002_b\\): it is older than release ${RELEASE}.*upgrade it through that release first`,
      ),
    );
    expect(Object.keys(await recorded(db.sql, 'bl_old'))).toEqual(['svc/0001_a']);
  });

  test('the files a baseline replaces are not read: migrate never sees their text', () => {
    const source = folder({ '0001_a.sql': 'not sql at all', '0002_b.sql': SECOND, '0003_c.sql': THIRD }, ['0001_a', '0002_b']);
    const [step] = migrationPlan([source]);
    expect(step!.files.map((f) => f.id)).toEqual(['svc/0003_c']);
    expect(step!.baseline!.replaces.size).toBe(2);
    // The folder itself still holds every file: they are history.
    expect(loadMigrations([source]).map((f) => f.id)).toEqual(['svc/0001_a', 'svc/0002_b', 'svc/0003_c']);
  });

  test('a migration numbered among the replaced ones but not replaced, or a header naming nothing, fails loudly', () => {
    expect(() => migrationPlan([folder(files, ['0001_a', '0003_c'])])).toThrow(/0002_b\.sql is numbered before svc\/0003_c, the last migration .*baseline\.sql replaces/);
    const root = join(fixtures, 'headless');
    mkdirSync(join(root, 'migrations'), { recursive: true });
    writeFileSync(join(root, 'baseline.sql'), `-- a baseline\n${BASELINE_BODY}\n`);
    expect(() => migrationPlan([{ prefix: 'svc', dir: join(root, 'migrations') }])).toThrow(/its header names no `-- release:` or no `-- replaces:` line/);
  });
});

describe("the tree's baselines are their history", () => {
  let history: TestDatabase;
  beforeAll(async () => {
    history = await startTestDatabase();
  }, 120_000);
  afterAll(async () => {
    await history?.stop();
  });

  test('every folder has a baseline; it replaces the first files of its folder, each as the release it names landed it', () => {
    for (const source of [KIT_MIGRATIONS, ...SERVICE_MODULES.map((m) => m.migrations)]) {
      const baseline = loadBaseline(source)!;
      expect(baseline).toBeDefined();
      const files = loadMigrations([source]);
      expect([...baseline.replaces]).toEqual(files.slice(0, baseline.replaces.size).map((f) => [f.id, f.checksum]));
      requireCommit(baseline.release);
      for (const f of files.slice(0, baseline.replaces.size)) {
        expect([f.id, migrationChecksum(Buffer.from(git(['show', `${baseline.release}:${relative(REPOSITORY_ROOT, f.file)}`])))]).toEqual([f.id, f.checksum]);
      }
    }
  });

  test.each(SERVICE_MODULES.map((m) => [m.name, m] as const))(
    '%s: a new schema and one that replayed the landed files are the same, and each release reads the other',
    async (name, m) => {
      const tree = [KIT_MIGRATIONS, m.migrations];
      const root = join(fixtures, `history-${name}`);
      const landed = tree.map((s) => historySource(root, s, { functions: true }));

      const fresh = await runMigrations(db.sql, { schema: name, sources: tree });
      expect(fresh.applied).toEqual(['kit/baseline', `${name}/baseline`]);

      await runMigrations(history.sql, { schema: name, sources: landed });
      expect((await runMigrations(history.sql, { schema: name, sources: tree })).applied).toEqual([]);

      expect(await describeSchema(db.sql, name)).toEqual(await describeSchema(history.sql, name));
      expect(await recorded(db.sql, name)).toEqual(await recorded(history.sql, name));
      // Either binary, on either database, finds nothing to do.
      for (const sql of [db.sql, history.sql]) {
        for (const sources of [tree, landed]) expect(await runMigrations(sql, { schema: name, sources })).toEqual({ schema: name, applied: [], functions: [] });
      }
    },
  );
});

test('the withdrawn baselines in the migration folders (NNNN_baseline.sql) stay on disk and are never read as migrations', () => {
  const sources = [KIT_MIGRATIONS, identityModule.migrations, catalogModule.migrations, calendarModule.migrations, notificationsModule.migrations];
  const withdrawn = sources.flatMap((s) => readdirSync(s.dir).filter((name) => /^\d{4}_baseline\.sql$/.test(name)));
  expect(withdrawn.sort()).toEqual(['0002_baseline.sql', '0004_baseline.sql', '0006_baseline.sql', '0009_baseline.sql', '0013_baseline.sql']);
  expect(loadMigrations(sources).filter((m) => m.id.endsWith('_baseline'))).toEqual([]);
});
