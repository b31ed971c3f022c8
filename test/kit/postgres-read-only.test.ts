/**
 * postgres.js with patches/postgres+3.4.9+002+read-only-failover.patch applied: a
 * connection whose server stopped taking writes (SQLSTATE 25006
 * read_only_sql_transaction, what a demoted primary or a standby answers) is ended once idle, so the next query connects afresh, and the
 * services answer UNAVAILABLE for the failed write (services/kit/rpc/errors.ts). With
 * `target_session_attrs=read-write`, a server that reports `default_transaction_read_only`
 * turned on loses the connection even before a write fails. A session-level
 * `set default_transaction_read_only = on` stands in for the demoted server: a new
 * session of the same database takes writes again. The whole failover is
 * test/topology/postgres-failover.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectionsClosed, createSql, type Sql } from '../../services/kit/db';
import { isUnavailableFailure } from '../../services/kit/rpc';
import { ROOT } from '../support/process';
import { createScratchDatabase, type ScratchDatabase } from '../support/system';

test('both builds of postgres.js carry the read-only server drop (npm ci applies patches/ with patch-package)', () => {
  for (const rel of ['src/connection.js', 'cjs/src/connection.js']) {
    expect(readFileSync(join(ROOT, 'node_modules/postgres', rel), 'utf8')).toContain('/* psync: read-only server drop */');
  }
});

(process.env.DATABASE_URL ? describe : describe.skip)('a connection to a server that takes no writes (needs DATABASE_URL; skipped otherwise)', () => {
  let db: ScratchDatabase;
  const opened: Sql[] = [];
  const open = (url: string) => {
    const sql = createSql(url, { max: 1 });
    opened.push(sql);
    return sql;
  };
  const pid = async (sql: Sql) => (await sql<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid;
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: unknown) => err,
    );

  beforeAll(async () => {
    db = await createScratchDatabase();
    const sql = createSql(db.url, { max: 1 });
    await sql`create table t (id int primary key)`;
    await sql.end({ timeout: 5 });
  });
  afterAll(async () => {
    await Promise.all(opened.map((s) => s.end({ timeout: 1 })));
    await db?.drop();
  });

  test('a write refused with 25006 is UNAVAILABLE, and the connection is replaced: the next write succeeds', async () => {
    const sql = open(db.url);
    const first = await pid(sql);
    await sql`set default_transaction_read_only = on`;
    const err = await failure(sql`insert into t values (1)`);
    expect(err).toMatchObject({ code: '25006' });
    expect(isUnavailableFailure(err)).toBe(true);
    await sql`insert into t values (1)`;
    expect(await pid(sql)).not.toBe(first);
    expect(connectionsClosed(sql)).toBe(1);
  });

  test('inside a transaction: rolled back, then the connection is replaced', async () => {
    const sql = open(db.url);
    const first = await pid(sql);
    await sql`set default_transaction_read_only = on`;
    const err = await failure(sql.begin(async (tx) => tx`insert into t values (2)`));
    expect(err).toMatchObject({ code: '25006' });
    await sql.begin(async (tx) => tx`insert into t values (2)`);
    expect(await pid(sql)).not.toBe(first);
    expect((await sql<{ n: number }[]>`select count(*)::int as n from t where id = 2`)[0]!.n).toBe(1);
  });

  test('target_session_attrs=read-write: the server reporting default_transaction_read_only on ends the connection, reads included', async () => {
    const sql = open(`${db.url}?target_session_attrs=read-write`);
    const first = await pid(sql);
    await sql`set default_transaction_read_only = on`;
    // No write failed: the report alone moved the reader off the read-only session.
    expect(await pid(sql)).not.toBe(first);
    await sql`insert into t values (3)`;
  });

  test('a connection that never saw a refusal stays', async () => {
    const sql = open(db.url);
    const first = await pid(sql);
    await sql`insert into t values (4)`;
    expect(await pid(sql)).toBe(first);
    expect(connectionsClosed(sql)).toBe(0);
  });
});
