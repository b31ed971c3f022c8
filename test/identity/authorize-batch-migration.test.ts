/**
 * identity/0002_authorize_batch landed with two texts over time: databases recorded
 * either checksum (the file holds the text that first landed; the other is
 * test/identity/fixtures/0002_authorize_batch.edited.sql), and identity/0004 brought
 * either body to one (identity/0005 then replaced it with the body that counts through
 * count_requests). The identity baseline (services/identity/baseline.sql) replaces
 * 0001–0006: a schema holding them skips it and their checksums are no longer compared,
 * so no checksum besides a file's own is accepted anywhere.
 *
 * Three databases: one that replayed the landed files with the first 0002 text, one with
 * the other (both as the previous release left them), and a fresh one. All three start on
 * this tree (the first two skip the baseline, keeping their record of what ran; the third
 * runs it), end as the same schema and answer the same Authorize batches the same way. A
 * database from before the baseline's release, whichever 0002 it holds, is refused with
 * the release to upgrade through. Real PostgreSQL when DATABASE_URL is set, else
 * embedded PGlite.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { identityModule } from '../../services/identity/module';
import { KIT_MIGRATIONS, loadBaseline, runMigrations, type MigrationSource, type Sql } from '../../services/kit/db';
import { authorizeBatch, insertKey, insertWorkspace, revokeKey, type AuthorizeInput, type AuthorizeRow } from '../../services/identity/queries';
import { mintApiKey } from '../../services/identity/api-keys';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { historySource } from '../support/migration-history';
import { describeSchema } from '../support/schema-description';
import { awayFromWindowEdge } from './helpers';

const IDENTITY = identityModule.migrations;
const TREE = [KIT_MIGRATIONS, IDENTITY];
const FIRST_LANDED = readFileSync(join(IDENTITY.dir, '0002_authorize_batch.sql'));
const EDITED = readFileSync(join(__dirname, 'fixtures', '0002_authorize_batch.edited.sql'));
const FIRST_LANDED_SUM = '2460892e2ad6460cbccd94fa8eaf9cf9f5d40cb3f9f38c45aa39224cb8fab331';
const EDITED_SUM = '52f1515654f5a67fe64e1903530e46c92fdeab3eebccafeaec2fe84b7fe60611';

let fixtures: string;
const dbs: Record<'firstLanded' | 'edited' | 'fresh', TestDatabase> = {} as never;

/** The landed kit and identity folders (no baseline), identity's 0002 with `text`, and its files up to `last` when given. */
function history(name: string, text: Buffer, last?: string): MigrationSource[] {
  const root = join(fixtures, name);
  const identity = historySource(root, IDENTITY, { last, functions: last === undefined });
  writeFileSync(join(identity.dir, '0002_authorize_batch.sql'), text);
  return [historySource(root, KIT_MIGRATIONS, { functions: last === undefined }), identity];
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
  await runMigrations(dbs.firstLanded.sql, { schema: 'identity', sources: history('first-landed', FIRST_LANDED) });
  await runMigrations(dbs.edited.sql, { schema: 'identity', sources: history('edited', EDITED) });
}, 180_000);

afterAll(async () => {
  await Promise.all(Object.values(dbs).map((d) => d?.stop()));
  if (fixtures) rmSync(fixtures, { recursive: true, force: true });
});

beforeEach(() => awayFromWindowEdge(), 30_000);

test('each history recorded its own 0002 checksum, and every migration the baseline replaces', async () => {
  expect((await recorded(dbs.firstLanded.sql))['identity/0002_authorize_batch']).toBe(FIRST_LANDED_SUM);
  expect((await recorded(dbs.edited.sql))['identity/0002_authorize_batch']).toBe(EDITED_SUM);
  const replaced = [...loadBaseline(IDENTITY)!.replaces.keys()];
  expect(replaced).toContain('identity/0002_authorize_batch');
  for (const db of [dbs.firstLanded, dbs.edited]) expect(Object.keys(await recorded(db.sql))).toEqual(expect.arrayContaining(replaced));
});

test('both histories and a fresh database start on this tree and end as one schema; each record keeps what ran', async () => {
  for (const db of [dbs.firstLanded, dbs.edited]) {
    // The baseline is skipped and the replaced checksums are not compared: the edited 0002 starts.
    expect((await runMigrations(db.sql, { schema: 'identity', sources: TREE })).applied).toEqual([]);
    // The next start applies nothing and refuses nothing.
    expect((await runMigrations(db.sql, { schema: 'identity', sources: TREE })).applied).toEqual([]);
  }
  const fresh = await runMigrations(dbs.fresh.sql, { schema: 'identity', sources: TREE });
  expect(fresh.applied).toEqual(['kit/baseline', 'identity/baseline']);
  // The record keeps what each database applied; a fresh one records the text that landed.
  expect((await recorded(dbs.firstLanded.sql))['identity/0002_authorize_batch']).toBe(FIRST_LANDED_SUM);
  expect((await recorded(dbs.edited.sql))['identity/0002_authorize_batch']).toBe(EDITED_SUM);
  expect((await recorded(dbs.fresh.sql))['identity/0002_authorize_batch']).toBe(FIRST_LANDED_SUM);

  const current = await functionDefinition(dbs.fresh.sql);
  expect(current).toContain('identity.count_requests('); // counts through the one counting function
  expect(await functionDefinition(dbs.firstLanded.sql)).toBe(current);
  expect(await functionDefinition(dbs.edited.sql)).toBe(current);
  const schema = await describeSchema(dbs.fresh.sql, 'identity');
  expect(await describeSchema(dbs.firstLanded.sql, 'identity')).toEqual(schema);
  expect(await describeSchema(dbs.edited.sql, 'identity')).toEqual(schema);
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

test('a database from before the baseline release is refused, whichever 0002 it holds, naming the release to upgrade through', async () => {
  const sql = dbs.fresh.sql;
  const release = loadBaseline(IDENTITY)!.release;
  for (const [schema, text] of [
    ['identity_early', FIRST_LANDED],
    ['identity_early_edited', EDITED],
  ] as const) {
    await runMigrations(sql, { schema, sources: [history(schema, text, '0002_authorize_batch.sql')[1]!] });
    expect(Object.keys(await recorded(sql, schema)).sort()).toEqual(['identity/0001_identity', 'identity/0002_authorize_batch']);
    await expect(runMigrations(sql, { schema, sources: [IDENTITY] })).rejects.toThrow(
      new RegExp(
        `schema ${schema} lacks 4 of the 6 identity migrations .*baseline\\.sql replaces .*: it is older than release ${release}, .* upgrade it through that release first`,
      ),
    );
    expect(Object.keys(await recorded(sql, schema)).sort()).toEqual(['identity/0001_identity', 'identity/0002_authorize_batch']);
  }
});
