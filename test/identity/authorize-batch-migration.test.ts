/**
 * identity/0002_authorize_batch landed with two texts over time: databases recorded
 * either checksum (the second text is test/identity/fixtures/0002_authorize_batch.edited.sql),
 * and identity/0004 brought either body to one (identity/0005 then replaced it with the
 * body that counts through count_requests). The identity baseline replaces 0001–0006, so
 * no file carries either text now, and no checksum is accepted besides a file's own.
 *
 * Three databases: one at the release the baseline was cut from with the first 0002
 * text, one at that release with the other, and a fresh one. All three start on this
 * tree (the first two skip the baseline, keeping their record of what ran; the third
 * applies it), end as the same schema and answer the same Authorize batches the same
 * way. A database from before that release, whichever 0002 it holds, is refused with
 * the release to upgrade through. Real PostgreSQL when DATABASE_URL is set, else
 * embedded PGlite.
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { identityModule } from '../../services/identity/module';
import { KIT_MIGRATIONS, runMigrations, type MigrationSource, type Sql } from '../../services/kit/db';
import { authorizeBatch, insertKey, insertWorkspace, revokeKey, type AuthorizeInput, type AuthorizeRow } from '../../services/identity/queries';
import { mintApiKey } from '../../services/identity/api-keys';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { baselineRelease, releaseSql, type ReleaseSql } from '../support/previous-release-sql';
import { describeSchema } from '../support/schema-description';
import { awayFromWindowEdge } from './helpers';

const IDENTITY = identityModule.migrations;
const TREE = [KIT_MIGRATIONS, IDENTITY];
const EDITED_0002 = join(__dirname, 'fixtures', '0002_authorize_batch.edited.sql');
const FIRST_LANDED_SUM = '2460892e2ad6460cbccd94fa8eaf9cf9f5d40cb3f9f38c45aa39224cb8fab331';
const EDITED_SUM = '52f1515654f5a67fe64e1903530e46c92fdeab3eebccafeaec2fe84b7fe60611';

let fixtures: string;
let release: ReleaseSql;
const dbs: Record<'firstLanded' | 'edited' | 'fresh', TestDatabase> = {} as never;

/**
 * The release's identity folder (its migrations and functions) with the 0002 text given,
 * and with only the migrations up to `last` when given.
 */
function releaseIdentity(name: string, text: Buffer | string, last?: string): MigrationSource {
  const dir = join(fixtures, name);
  cpSync(dirname(release.sourceAt(IDENTITY).dir), dir, { recursive: true });
  const migrations = join(dir, 'migrations');
  if (last) for (const file of readdirSync(migrations).filter((f) => f > `${last}.sql`)) rmSync(join(migrations, file));
  writeFileSync(join(dir, 'migrations', '0002_authorize_batch.sql'), text);
  return { prefix: IDENTITY.prefix, dir: join(dir, 'migrations') };
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
  release = releaseSql(baselineRelease(IDENTITY));
  dbs.firstLanded = await startTestDatabase();
  dbs.edited = await startTestDatabase();
  dbs.fresh = await startTestDatabase();
  const kit = release.sourceAt(KIT_MIGRATIONS);
  const firstLanded = readFileSync(join(release.sourceAt(IDENTITY).dir, '0002_authorize_batch.sql'));
  await runMigrations(dbs.firstLanded.sql, { schema: 'identity', sources: [kit, releaseIdentity('first-landed', firstLanded)] });
  await runMigrations(dbs.edited.sql, { schema: 'identity', sources: [kit, releaseIdentity('edited', readFileSync(EDITED_0002))] });
}, 180_000);

afterAll(async () => {
  await Promise.all(Object.values(dbs).map((d) => d?.stop()));
  if (fixtures) rmSync(fixtures, { recursive: true, force: true });
  release?.remove();
});

beforeEach(() => awayFromWindowEdge(), 30_000);

test('each history recorded its own 0002 checksum, and the migrations up to the baseline', async () => {
  expect((await recorded(dbs.firstLanded.sql))['identity/0002_authorize_batch']).toBe(FIRST_LANDED_SUM);
  expect((await recorded(dbs.edited.sql))['identity/0002_authorize_batch']).toBe(EDITED_SUM);
  expect(
    Object.keys(await recorded(dbs.edited.sql))
      .filter((id) => id.startsWith('identity/'))
      .sort(),
  ).toEqual([
    'identity/0001_identity',
    'identity/0002_authorize_batch',
    'identity/0003_internal_clients',
    'identity/0004_authorize_batch_insert_first',
    'identity/0005_rate_window_and_counting',
    'identity/0006_request_log',
  ]);
});

test('both histories and a fresh database start on this tree and end as one schema; each record keeps what ran', async () => {
  for (const db of [dbs.firstLanded, dbs.edited]) {
    const { applied } = await runMigrations(db.sql, { schema: 'identity', sources: TREE });
    expect(applied.filter((id) => id.endsWith('_baseline'))).toEqual([]);
    // The next start applies nothing and refuses nothing.
    expect((await runMigrations(db.sql, { schema: 'identity', sources: TREE })).applied).toEqual([]);
  }
  const fresh = await runMigrations(dbs.fresh.sql, { schema: 'identity', sources: TREE });
  expect(fresh.applied.slice(0, 2)).toEqual(['kit/0004_baseline', 'identity/0006_baseline']);
  expect((await recorded(dbs.firstLanded.sql))['identity/0002_authorize_batch']).toBe(FIRST_LANDED_SUM);
  expect((await recorded(dbs.edited.sql))['identity/0002_authorize_batch']).toBe(EDITED_SUM);
  expect((await recorded(dbs.fresh.sql))['identity/0002_authorize_batch']).toBeUndefined();

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
  for (const [schema, text] of [
    ['identity_early', readFileSync(join(release.sourceAt(IDENTITY).dir, '0002_authorize_batch.sql'))],
    ['identity_early_edited', readFileSync(EDITED_0002)],
  ] as const) {
    await runMigrations(sql, { schema, sources: [releaseIdentity(schema, text, '0002_authorize_batch')] });
    expect(Object.keys(await recorded(sql, schema)).sort()).toEqual(['identity/0001_identity', 'identity/0002_authorize_batch']);
    await expect(runMigrations(sql, { schema, sources: [IDENTITY] })).rejects.toThrow(
      new RegExp(
        `schema ${schema} holds the identity migrations up to 0002, and .*0006_baseline\\.sql replaces those up to 0006: upgrade it through the release the baseline was cut from first`,
      ),
    );
    expect(Object.keys(await recorded(sql, schema)).sort()).toEqual(['identity/0001_identity', 'identity/0002_authorize_batch']);
  }
});
