/**
 * Landed migrations are immutable (docs/operations.md "Migrate"): every migration file
 * is pinned in services/migrations.manifest.json with the sha256 migrate.ts records,
 * and this test fails when a listed file changes or disappears, or when a file is not
 * listed (the message says how to add it). A baseline's header names the migrations it
 * replaces with the checksums listed here; their files and entries stay.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { migrationChecksum } from '../../services/kit/db';
import {
  MANIFEST_PATH,
  allMigrationSources,
  checkManifest,
  currentBaselines,
  currentFunctionFiles,
  currentMigrations,
  functionKey,
  formatManifest,
  readManifest,
  withNewEntries,
  type Manifest,
} from '../../tools/migration-manifest';
import { identityModule } from '../../services/identity/module';
import { catalogModule } from '../../services/catalog/module';
import { calendarModule } from '../../services/calendar/module';
import { notificationsModule } from '../../services/notifications/module';
import { ROOT } from '../support/process';

const manifest = readManifest();
const files = currentMigrations();
const functionFiles = currentFunctionFiles();
const check = checkManifest(manifest, files, functionFiles, currentBaselines());
const where = relative(ROOT, MANIFEST_PATH);

describe('the checked-in manifest', () => {
  test('no listed migration changed: a landed migration is never edited', () => {
    expect(
      check.changed.map(
        (c) => `${relative(ROOT, c.file)} changed after it landed (sha256 ${c.listed} in ${where}, ${c.current} on disk): ` + 'restore it and put the change in a new migration',
      ),
    ).toEqual([]);
  });

  test('no listed migration disappeared', () => {
    expect(check.missing.map((id) => `${id} is listed in ${where} but has no file: restore it`)).toEqual([]);
  });

  test('every migration file is listed', () => {
    expect(check.unlisted.map((f) => `${relative(ROOT, f.file)} is not in ${where}: run \`npm run migrations:manifest\` to add it`)).toEqual([]);
  });

  test('every repeatable SQL file is listed at its version with its content: a landed version is never edited', () => {
    expect(check.changedFunctions.map((c) => `${relative(ROOT, c.file)} changed without raising its version (${c.key} in ${where}): raise its \`-- version:\` line`)).toEqual([]);
    expect(check.unlistedFunctions.map((f) => `${relative(ROOT, f.file)} version ${f.version} is not in ${where}: run \`npm run migrations:manifest\` to add it`)).toEqual([]);
  });

  test('is in the form the generator writes (sorted ids), so adding an entry never rewrites the others', () => {
    expect(readFileSync(MANIFEST_PATH, 'utf8')).toBe(formatManifest(manifest));
  });

  test('covers the folders every service module migrates from', () => {
    const sources = allMigrationSources().map((s) => [s.prefix, relative(ROOT, s.dir)]);
    for (const m of [identityModule, catalogModule, calendarModule, notificationsModule]) {
      expect(sources).toContainEqual([m.migrations.prefix, relative(ROOT, m.migrations.dir)]);
    }
    expect(sources[0]).toEqual(['kit', 'services/kit/migrations']);
  });

  test('each baseline names the migrations it replaces with the checksums they landed with, and their files stay', () => {
    expect(currentBaselines()).toHaveLength(5);
    expect(check.unfoundedBaselines.map((b) => `${relative(ROOT, b.file)} replaces ${b.id} as ${b.named}, listed as ${b.listed ?? 'nothing'}: cut it again`)).toEqual([]);
  });

  test('identity/0002 is the text that first landed; the text it was once edited to is accepted nowhere, it is history a baseline replaced', () => {
    const editedSum = migrationChecksum(readFileSync(join(__dirname, '../identity/fixtures/0002_authorize_batch.edited.sql')));
    expect(manifest.migrations['identity/0002_authorize_batch']).toBe('2460892e2ad6460cbccd94fa8eaf9cf9f5d40cb3f9f38c45aa39224cb8fab331');
    expect(files.find((f) => f.id === 'identity/0002_authorize_batch')!.checksum).toBe(manifest.migrations['identity/0002_authorize_batch']);
    const identity = currentBaselines().find((b) => b.id === 'identity/baseline')!;
    expect(identity.replaces.get('identity/0002_authorize_batch')).toBe(manifest.migrations['identity/0002_authorize_batch']);
    expect(Object.values(manifest.migrations)).not.toContain(editedSum);
  });
});

describe('checkManifest and withNewEntries', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'psync-manifest-'));
    for (const folder of ['kit', 'alpha']) mkdirSync(join(dir, folder, 'migrations'), { recursive: true });
    mkdirSync(join(dir, 'no-migrations'));
    writeFileSync(join(dir, 'kit', 'migrations', '0001_base.sql'), 'create table base (id int);');
    writeFileSync(join(dir, 'alpha', 'migrations', '0001_a.sql'), 'create table a (id int);');
    writeFileSync(join(dir, 'alpha', 'migrations', '0002_b.sql'), 'create table b (id int);');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('reports changed, missing and unlisted files; adding new entries keeps every existing one as it is', () => {
    const sum = (s: string) => migrationChecksum(Buffer.from(s));
    expect(allMigrationSources(dir).map((s) => s.prefix)).toEqual(['kit', 'alpha']);
    const listed: Manifest = {
      $comment: '',
      migrations: {
        'kit/0001_base': sum('create table base (id int);'),
        'alpha/0001_a': sum('create table a (id integer);'), // the file differs
        'alpha/0000_gone': sum('select 1;'),
      },
      functions: {},
    };
    const onDisk = currentMigrations(dir);
    const result = checkManifest(listed, onDisk);
    expect(result.changed.map((c) => [c.id, c.listed, c.current])).toEqual([['alpha/0001_a', sum('create table a (id integer);'), sum('create table a (id int);')]]);
    expect(result.missing).toEqual(['alpha/0000_gone']);
    expect(result.unlisted.map((f) => f.id)).toEqual(['alpha/0002_b']);

    const next = withNewEntries(listed, onDisk);
    expect(next.migrations).toEqual({ ...listed.migrations, 'alpha/0002_b': sum('create table b (id int);') });
    expect(Object.keys(JSON.parse(formatManifest(next)).migrations)).toEqual(['alpha/0000_gone', 'alpha/0001_a', 'alpha/0002_b', 'kit/0001_base']);
  });

  test('a baseline naming a migration with another checksum than the listed one, or one without a file, is reported', () => {
    const sum = (s: string) => migrationChecksum(Buffer.from(s));
    const listed: Manifest = { $comment: '', migrations: { 'alpha/0001_a': sum('create table a (id int);'), 'alpha/0002_b': sum('create table b (id int);') }, functions: {} };
    const baseline = {
      id: 'alpha/baseline',
      file: join(dir, 'alpha', 'baseline.sql'),
      content: '',
      checksum: '',
      release: 'a'.repeat(40),
      replaces: new Map([
        ['alpha/0001_a', sum('create table a (id int);')],
        ['alpha/0002_b', sum('another text')],
        ['alpha/0003_c', sum('no such file')],
      ]),
    };
    const result = checkManifest(listed, currentMigrations(dir), [], [baseline]);
    expect(result.unfoundedBaselines.map((b) => [b.id, b.listed])).toEqual([
      ['alpha/0002_b', sum('create table b (id int);')],
      ['alpha/0003_c', undefined],
    ]);
  });

  test('pins each landed version of a repeatable file: an edit without a higher version is reported, a new version is added beside the old', () => {
    const sum = (s: string) => migrationChecksum(Buffer.from(s));
    const v1 = '-- version: 1\ncreate or replace function f() returns int language sql return 1;\n';
    const v2 = '-- version: 2\ncreate or replace function f() returns int language sql return 2;\n';
    mkdirSync(join(dir, 'alpha', 'functions'), { recursive: true });
    writeFileSync(join(dir, 'alpha', 'functions', 'f.sql'), v1.replace('return 1', 'return 3'));
    const listed: Manifest = { $comment: '', migrations: {}, functions: { 'alpha/f@1': sum(v1) } };
    const edited = checkManifest(listed, [], currentFunctionFiles(dir));
    expect(edited.changedFunctions.map((c) => c.key)).toEqual(['alpha/f@1']);
    expect(edited.unlistedFunctions).toEqual([]);

    writeFileSync(join(dir, 'alpha', 'functions', 'f.sql'), v2);
    const raised = checkManifest(listed, [], currentFunctionFiles(dir));
    expect(raised.changedFunctions).toEqual([]);
    expect(raised.unlistedFunctions.map(functionKey)).toEqual(['alpha/f@2']);
    expect(withNewEntries(listed, [], currentFunctionFiles(dir)).functions).toEqual({ 'alpha/f@1': sum(v1), 'alpha/f@2': sum(v2) });
  });
});
