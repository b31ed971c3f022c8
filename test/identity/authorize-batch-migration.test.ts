/**
 * identity/0002_authorize_batch was edited after it landed. The file holds the text
 * that first landed; the edited text (test/identity/fixtures/0002_authorize_batch.edited.sql)
 * is a checksum migrate.ts still accepts for that file (KNOWN_EDITS), and
 * identity/0004 brings either body to the current one (identity/0005 then replaces it
 * with the body that counts through count_requests).
 *
 * Three databases: one that applied 0001 and the first-landed 0002, one that applied
 * 0001 and the edited 0002, and a fresh one. All three migrate to the same function
 * and answer the same Authorize batches the same way. Real PostgreSQL when
 * DATABASE_URL is set, else embedded PGlite.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { identityModule } from '../../services/identity/module';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS, loadMigrations, type MigrationSource } from '../../services/kit/db';
import type { Sql } from '../../services/kit/db';
import { authorizeBatch, insertKey, insertWorkspace, revokeKey, type AuthorizeInput, type AuthorizeRow } from '../../services/identity/queries';
import { mintApiKey } from '../../services/identity/api-keys';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { awayFromWindowEdge } from './helpers';

const IDENTITY = identityModule.migrations;
/** Every identity migration after 0002, as the files stand (later ones too). */
const AFTER_0002 = loadMigrations([IDENTITY])
  .map((m) => m.id)
  .filter((id) => id > 'identity/0002_z');
const EDITED_0002 = join(__dirname, 'fixtures', '0002_authorize_batch.edited.sql');
const FIRST_LANDED_SUM = '2460892e2ad6460cbccd94fa8eaf9cf9f5d40cb3f9f38c45aa39224cb8fab331';
const EDITED_SUM = '52f1515654f5a67fe64e1903530e46c92fdeab3eebccafeaec2fe84b7fe60611';

let fixtures: string;
const dbs: Record<'firstLanded' | 'edited' | 'fresh', TestDatabase> = {} as never;

/** A migration folder of the identity prefix holding 0001 and the given 0002 text. */
function identityUpTo0002(name: string, text: Buffer | string): MigrationSource {
  const dir = join(fixtures, name);
  mkdirSync(dir);
  copyFileSync(join(IDENTITY.dir, '0001_identity.sql'), join(dir, '0001_identity.sql'));
  writeFileSync(join(dir, '0002_authorize_batch.sql'), text);
  return { prefix: IDENTITY.prefix, dir };
}

async function recorded(sql: Sql, schema = 'identity'): Promise<Record<string, string>> {
  const rows = await sql<{ id: string; checksum: string }[]>`select id, checksum from ${sql(`${schema}.schema_migrations`)}`;
  return Object.fromEntries(rows.map((r) => [r.id, r.checksum]));
}

async function functionDefinition(sql: Sql): Promise<string> {
  const [row] = await sql<{ def: string }[]>`select pg_get_functiondef('identity.authorize_batch'::regproc) as def`;
  return row!.def;
}

beforeAll(async () => {
  fixtures = mkdtempSync(join(tmpdir(), 'psync-identity-history-'));
  dbs.firstLanded = await startTestDatabase();
  dbs.edited = await startTestDatabase();
  dbs.fresh = await startTestDatabase();
  await runMigrations(dbs.firstLanded.sql, {
    schema: 'identity',
    sources: [KIT_MIGRATIONS, identityUpTo0002('first-landed', readFileSync(join(IDENTITY.dir, '0002_authorize_batch.sql')))],
  });
  await runMigrations(dbs.edited.sql, { schema: 'identity', sources: [KIT_MIGRATIONS, identityUpTo0002('edited', readFileSync(EDITED_0002))] });
}, 180_000);

afterAll(async () => {
  await Promise.all(Object.values(dbs).map((d) => d?.stop()));
  if (fixtures) rmSync(fixtures, { recursive: true, force: true });
});

beforeEach(() => awayFromWindowEdge(), 30_000);

test('each history recorded its own 0002 checksum', async () => {
  expect((await recorded(dbs.firstLanded.sql))['identity/0002_authorize_batch']).toBe(FIRST_LANDED_SUM);
  expect((await recorded(dbs.edited.sql))['identity/0002_authorize_batch']).toBe(EDITED_SUM);
});

test('both histories and a fresh database migrate to the current state: 0003 onwards applied, the edited checksum accepted at every start', async () => {
  for (const db of [dbs.firstLanded, dbs.edited]) {
    const { applied } = await runMigrations(db.sql, { schema: 'identity', sources: [KIT_MIGRATIONS, IDENTITY] });
    expect(applied.slice(0, 3)).toEqual(['identity/0003_internal_clients', 'identity/0004_authorize_batch_insert_first', 'identity/0005_rate_window_and_counting']);
    expect(applied).toEqual(AFTER_0002);
    // The next start applies nothing and refuses nothing.
    expect((await runMigrations(db.sql, { schema: 'identity', sources: [KIT_MIGRATIONS, IDENTITY] })).applied).toEqual([]);
  }
  const fresh = await runMigrations(dbs.fresh.sql, { schema: 'identity', sources: [KIT_MIGRATIONS, IDENTITY] });
  expect(fresh.applied.filter((id) => id.startsWith('identity/'))).toEqual(['identity/0001_identity', 'identity/0002_authorize_batch', ...AFTER_0002]);
  // The record keeps what each database applied.
  expect((await recorded(dbs.edited.sql))['identity/0002_authorize_batch']).toBe(EDITED_SUM);
  expect((await recorded(dbs.fresh.sql))['identity/0002_authorize_batch']).toBe(FIRST_LANDED_SUM);

  const current = await functionDefinition(dbs.fresh.sql);
  expect(current).toContain('identity.count_requests('); // 0005's body: counts through the one counting function
  expect(await functionDefinition(dbs.firstLanded.sql)).toBe(current);
  expect(await functionDefinition(dbs.edited.sql)).toBe(current);
});

test('the three databases answer the same Authorize batches identically', async () => {
  const outcome = (r: AuthorizeRow) => ({ key_live: r.key_live, environment: r.environment, counted: r.counted, previous: r.previous });
  const answers = await Promise.all(
    [dbs.firstLanded, dbs.edited, dbs.fresh].map(async ({ sql }) => {
      const ws = (await insertWorkspace(sql, { name: 'history', environment: 'sandbox' })).workspace_id;
      const prod = (await insertWorkspace(sql, { name: 'history', environment: 'production' })).workspace_id;
      const key = async (revoked = false) => {
        const { keyId, secretHash } = mintApiKey();
        await insertKey(sql, { keyId, workspaceId: ws, secretHash });
        if (revoked) await revokeKey(sql, keyId);
        return keyId;
      };
      const [a, b, r] = [await key(), await key(), await key(true)];
      const batch: AuthorizeInput[] = [
        { keyId: a, tokenWorkspaceId: ws, addressedWorkspaceId: ws, count: true },
        { keyId: b, tokenWorkspaceId: ws, addressedWorkspaceId: prod, count: true },
        { keyId: r, tokenWorkspaceId: ws, addressedWorkspaceId: ws, count: true },
        { keyId: a, tokenWorkspaceId: prod, addressedWorkspaceId: prod, count: true },
        { keyId: a, tokenWorkspaceId: ws, addressedWorkspaceId: ws, count: false },
        { keyId: a, tokenWorkspaceId: ws, addressedWorkspaceId: null, count: true },
        { keyId: a, tokenWorkspaceId: ws, addressedWorkspaceId: ws, count: true },
      ];
      // The first batch creates the window's rows, the next ones lock and add to them, the last ones meet the limit.
      const rounds: unknown[] = [];
      for (let i = 0; i < 3; i++) rounds.push((await authorizeBatch(sql, batch, 7)).map(outcome));
      return rounds;
    }),
  );
  expect(answers[0]).toEqual([
    [
      { key_live: true, environment: 'sandbox', counted: 1, previous: 0 },
      { key_live: true, environment: 'production', counted: 1, previous: 0 },
      { key_live: false, environment: 'sandbox', counted: null, previous: 0 },
      { key_live: false, environment: 'production', counted: null, previous: 1 },
      { key_live: true, environment: 'sandbox', counted: null, previous: 1 },
      { key_live: true, environment: null, counted: 2, previous: 1 },
      { key_live: true, environment: 'sandbox', counted: 3, previous: 2 },
    ],
    [
      { key_live: true, environment: 'sandbox', counted: 4, previous: 3 },
      { key_live: true, environment: 'production', counted: 2, previous: 1 },
      { key_live: false, environment: 'sandbox', counted: null, previous: 0 },
      { key_live: false, environment: 'production', counted: null, previous: 4 },
      { key_live: true, environment: 'sandbox', counted: null, previous: 4 },
      { key_live: true, environment: null, counted: 5, previous: 4 },
      { key_live: true, environment: 'sandbox', counted: 6, previous: 5 },
    ],
    [
      { key_live: true, environment: 'sandbox', counted: 7, previous: 6 },
      { key_live: true, environment: 'production', counted: 3, previous: 2 },
      { key_live: false, environment: 'sandbox', counted: null, previous: 0 },
      { key_live: false, environment: 'production', counted: null, previous: 7 },
      { key_live: true, environment: 'sandbox', counted: null, previous: 7 },
      { key_live: true, environment: null, counted: null, previous: 7 },
      { key_live: true, environment: 'sandbox', counted: null, previous: 7 },
    ],
  ]);
  expect(answers[1]).toEqual(answers[0]);
  expect(answers[2]).toEqual(answers[0]);
});

test('any other text recorded for 0002 is still refused: the accepted edit is that one checksum of that one file', async () => {
  const sql = dbs.fresh.sql;
  const other = identityUpTo0002('other-edit', `${readFileSync(join(IDENTITY.dir, '0002_authorize_batch.sql'), 'utf8')}\n-- another edit\n`);
  await runMigrations(sql, { schema: 'identity_other', sources: [other] });
  await expect(runMigrations(sql, { schema: 'identity_other', sources: [IDENTITY] })).rejects.toThrow(
    /migration identity\/0002_authorize_batch .* was changed after it was applied to schema identity_other/,
  );
  expect(Object.keys(await recorded(sql, 'identity_other')).sort()).toEqual(['identity/0001_identity', 'identity/0002_authorize_batch']);
});
