/**
 * services/kit/db/database.ts on a PostgreSQL server: each service's pool commits
 * synchronously; the async-commit pool (rate-limit counters only) has
 * `synchronous_commit = off`, is a separate instance, and is named in
 * pg_stat_activity. Embedded (no DATABASE_URL): PGlite cannot run inside a Jest
 * worker, and there both are the one shared connection — nothing to compare.
 */
import { createLogger } from '../../services/kit/base';
import { openDatabase, type Database } from '../../services/kit/db';
import { startTestDatabase, type TestDatabase } from '../support/database';

const onServer = process.env.DATABASE_URL ? describe : describe.skip;

onServer('database pools on a PostgreSQL server', () => {
  let scratch: TestDatabase;
  let db: Database;

  beforeAll(async () => {
    scratch = await startTestDatabase();
    db = await openDatabase({ databaseUrl: scratch.url, dataDir: '/nonexistent', databasePoolSize: 2 }, createLogger({ level: 'silent', name: 'test' }));
  });

  afterAll(async () => {
    await db?.close();
    await scratch?.stop();
  });

  test('service pools commit synchronously, the async-commit pool does not', async () => {
    const setting = async (sql: ReturnType<Database['sqlFor']>) => (await sql<{ s: string }[]>`select current_setting('synchronous_commit') as s`)[0]!.s;
    expect(await setting(db.sqlFor('identity'))).toBe('on');
    expect(await setting(db.asyncCommitSqlFor('identity'))).toBe('off');
    expect(db.asyncCommitSqlFor('identity')).not.toBe(db.sqlFor('identity'));
    expect(db.asyncCommitSqlFor('identity')).toBe(db.asyncCommitSqlFor('identity'));
  });

  test('each instance is named in pg_stat_activity', async () => {
    await db.asyncCommitSqlFor('identity')`select 1`;
    await db.sqlFor('identity')`select 1`;
    const names = (
      await scratch.sql<{ application_name: string }[]>`
      select application_name from pg_stat_activity where datname = current_database()`
    ).map((r) => r.application_name);
    expect(names).toEqual(expect.arrayContaining(['psync-identity', 'psync-identity-async-commit']));
  });
});
