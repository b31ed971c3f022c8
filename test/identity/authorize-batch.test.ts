/**
 * Authorize's batched statement (`identity.authorize_batch`, migration 0002) and the
 * AuthorizeBatcher that feeds it: each request of a batch gets exactly what its own
 * statement would have answered had the batch's requests run one after another, and
 * the counts stay exact under concurrency (several pools standing for several
 * processes, overlapping keys in different orders: no deadlock, nothing lost).
 *
 * Real PostgreSQL when DATABASE_URL is set, else embedded PGlite (one session: the
 * concurrency cases then run through the one connection).
 */
import { randomUUID } from 'node:crypto';
import { identityModule } from '../../services/identity/module';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { createSql, type Sql } from '../../services/kit/db';
import { authorizeBatch, insertKey, insertWorkspace, revokeKey, type AuthorizeInput, type AuthorizeRow } from '../../services/identity/queries';
import { mintApiKey } from '../../services/identity/api-keys';
import type { EnvironmentName } from '../../services/identity/access-tokens';
import { AuthorizeBatcher } from '../../services/identity/authorize-batcher';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { awayFromWindowEdge } from './helpers';

let db: TestDatabase;
beforeAll(async () => {
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'identity', sources: [KIT_MIGRATIONS, identityModule.migrations] });
}, 60_000);
afterAll(async () => db?.stop());
beforeEach(() => awayFromWindowEdge(), 30_000);

async function workspace(sql: Sql, environment: EnvironmentName = 'sandbox'): Promise<string> {
  return (await insertWorkspace(sql, { name: 'batch test', environment })).workspace_id;
}

async function key(sql: Sql, workspaceId: string, revoked = false): Promise<string> {
  const { keyId, secretHash } = mintApiKey();
  await insertKey(sql, { keyId, workspaceId, secretHash });
  if (revoked) await revokeKey(sql, keyId);
  return keyId;
}

async function countOf(sql: Sql, keyId: string): Promise<number> {
  const [row] = await sql<{ count: number }[]>`
    select coalesce(sum(count), 0)::int as count from identity.rate_counters where key_id = ${keyId} and bucket = 'contract'`;
  return row!.count;
}

/** A row without the clock, for comparisons. */
const outcome = (r: AuthorizeRow) => ({ key_live: r.key_live, environment: r.environment, counted: r.counted, previous: r.previous });

test('a mixed batch: every request answered in order, as if alone; only live keys counted; revoked, unknown and foreign-workspace tokens never', async () => {
  const sql = db.sql;
  const ws = await workspace(sql);
  const prod = await workspace(sql, 'production');
  const a = await key(sql, ws);
  const b = await key(sql, ws);
  const revoked = await key(sql, ws, true);
  const unknown = mintApiKey().keyId;
  const batch: AuthorizeInput[] = [
    { keyId: a, tokenWorkspaceId: ws, addressedWorkspaceId: ws, count: true },
    { keyId: b, tokenWorkspaceId: ws, addressedWorkspaceId: ws, count: true },
    { keyId: a, tokenWorkspaceId: ws, addressedWorkspaceId: prod, count: true }, // scope mismatch: still counted
    { keyId: revoked, tokenWorkspaceId: ws, addressedWorkspaceId: ws, count: true },
    { keyId: unknown, tokenWorkspaceId: ws, addressedWorkspaceId: ws, count: true },
    { keyId: a, tokenWorkspaceId: prod, addressedWorkspaceId: prod, count: true }, // key of another workspace
    { keyId: a, tokenWorkspaceId: ws, addressedWorkspaceId: null, count: true }, // unresolvable address: counted
    { keyId: a, tokenWorkspaceId: ws, addressedWorkspaceId: ws, count: false }, // peek
    { keyId: a, tokenWorkspaceId: ws, addressedWorkspaceId: randomUUID(), count: true },
  ];
  const rows = await authorizeBatch(sql, batch, 100);
  expect(rows.map(outcome)).toEqual([
    { key_live: true, environment: 'sandbox', counted: 1, previous: 0 },
    { key_live: true, environment: 'sandbox', counted: 1, previous: 0 },
    { key_live: true, environment: 'production', counted: 2, previous: 1 },
    { key_live: false, environment: 'sandbox', counted: null, previous: 0 },
    { key_live: false, environment: 'sandbox', counted: null, previous: 0 },
    { key_live: false, environment: 'production', counted: null, previous: 2 },
    { key_live: true, environment: null, counted: 3, previous: 2 },
    { key_live: true, environment: 'sandbox', counted: null, previous: 3 },
    { key_live: true, environment: null, counted: 4, previous: 3 },
  ]);
  for (const r of rows) expect(Math.abs(r.now_epoch - Date.now() / 1000)).toBeLessThan(60);
  expect(await countOf(sql, a)).toBe(4);
  expect(await countOf(sql, b)).toBe(1);
  expect(await countOf(sql, revoked)).toBe(0);
});

test('the limit is reached inside a batch: the first ones counted, the rest refused and not counted; a later batch refuses all', async () => {
  const sql = db.sql;
  const ws = await workspace(sql);
  const k = await key(sql, ws);
  const item: AuthorizeInput = { keyId: k, tokenWorkspaceId: ws, addressedWorkspaceId: ws, count: true };
  expect((await authorizeBatch(sql, [item, item], 3)).map((r) => [r.counted, r.previous])).toEqual([
    [1, 0],
    [2, 1],
  ]);
  const rows = await authorizeBatch(sql, [item, item, { ...item, count: false }, item], 3);
  expect(rows.map((r) => [r.counted, r.previous])).toEqual([
    [3, 2],
    [null, 3],
    [null, 3],
    [null, 3],
  ]);
  expect((await authorizeBatch(sql, [item], 3)).map((r) => [r.counted, r.previous])).toEqual([[null, 3]]);
  expect(await countOf(sql, k)).toBe(3);
});

test('a batch answers exactly what one statement per request, in order, answers (random sequences, two keys, a small limit)', async () => {
  const sql = db.sql;
  for (let round = 0; round < 5; round++) {
    const ws = await workspace(sql);
    const other = await workspace(sql);
    // Two copies of the same world: one run as a batch, one a request at a time.
    const worlds = await Promise.all([0, 1].map(async () => ({ a: await key(sql, ws), b: await key(sql, ws), r: await key(sql, ws, true) })));
    const plan = Array.from({ length: 12 }, () => ({
      which: (['a', 'b', 'r'] as const)[Math.floor(Math.random() * 3)]!,
      count: Math.random() < 0.8,
      address: Math.random() < 0.8 ? ws : other,
    }));
    const items = (w: (typeof worlds)[number]) => plan.map((p) => ({ keyId: w[p.which], tokenWorkspaceId: ws, addressedWorkspaceId: p.address, count: p.count }));
    const batched = await authorizeBatch(sql, items(worlds[0]!), 4);
    const alone: AuthorizeRow[] = [];
    for (const item of items(worlds[1]!)) alone.push(...(await authorizeBatch(sql, [item], 4)));
    expect(batched.map(outcome)).toEqual(alone.map(outcome));
  }
});

test('concurrent batches from several pools on overlapping keys, locked in key order: no deadlock, exact counts', async () => {
  const ws = await workspace(db.sql);
  const keys = await Promise.all(Array.from({ length: 4 }, () => key(db.sql, ws)));
  const limit = 50;
  // Several pools stand for several processes (one session when embedded).
  const pools = db.embedded ? [db.sql] : Array.from({ length: 3 }, () => createSql(db.url, { max: 4 }));
  try {
    const calls: Promise<AuthorizeRow[]>[] = [];
    for (let i = 0; i < 24; i++) {
      // Each batch names the keys in its own order, several times each.
      const order = [...keys, ...keys].sort(() => Math.random() - 0.5);
      calls.push(
        authorizeBatch(
          pools[i % pools.length]!,
          order.map((k) => ({ keyId: k, tokenWorkspaceId: ws, addressedWorkspaceId: ws, count: true })),
          limit,
        ),
      );
    }
    const rows = (await Promise.all(calls)).flat();
    // 24 batches × 2 requests per key = 48 per key, under the limit: each counted once, 1..48.
    for (const k of keys) expect(await countOf(db.sql, k)).toBe(48);
    const counted = rows.map((r) => r.counted);
    expect(counted.every((c) => c !== null)).toBe(true);
    // Every value 1..48 handed out exactly once per key: 4 keys → each value 4 times.
    const tally = new Map<number, number>();
    for (const c of counted) tally.set(c!, (tally.get(c!) ?? 0) + 1);
    expect([...tally.keys()].sort((x, y) => x - y)).toEqual(Array.from({ length: 48 }, (_, i) => i + 1));
    expect([...tally.values()].every((n) => n === 4)).toBe(true);
  } finally {
    if (!db.embedded) await Promise.all(pools.map((p) => p.end({ timeout: 5 })));
  }
});

test('AuthorizeBatcher: 100 concurrent requests of one key over the limit of 60: exactly 60 counted, each count once, in fewer statements than requests', async () => {
  const ws = await workspace(db.sql);
  const k = await key(db.sql, ws);
  let statements = 0;
  // Counts the statements the batcher runs (every call of the tagged template).
  const counting = new Proxy(db.sql, {
    apply(target, self, args) {
      statements++;
      return Reflect.apply(target, self, args);
    },
  });
  const batcher = new AuthorizeBatcher(counting, 60);
  const rows = await Promise.all(Array.from({ length: 100 }, () => batcher.authorize({ keyId: k, tokenWorkspaceId: ws, addressedWorkspaceId: ws, count: true })));
  const counted = rows
    .map((r) => r.counted)
    .filter((c): c is number => c !== null)
    .sort((x, y) => x - y);
  expect(counted).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
  expect(rows.filter((r) => r.counted === null)).toHaveLength(40);
  expect(await countOf(db.sql, k)).toBe(60);
  expect(statements).toBeGreaterThan(0);
  expect(statements).toBeLessThan(100);
});
