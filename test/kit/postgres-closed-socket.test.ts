/**
 * postgres.js with patches/postgres+3.4.9+001+closed-socket-guard.patch applied: a
 * connection whose backend dies with a small write pending rejects its query with CONNECTION_CLOSED instead of
 * crashing the process from an immediate callback (porsager/postgres#1208's
 * deterministic repro: a reserved connection whose backend is terminated).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSql } from '../../services/kit/db';
import { ROOT } from '../support/process';
import { createScratchDatabase, type ScratchDatabase } from '../support/system';

test('both builds of postgres.js carry the closed-socket guard (npm ci applies patches/ with patch-package)', () => {
  for (const rel of ['src/connection.js', 'cjs/src/connection.js']) {
    expect(readFileSync(join(ROOT, 'node_modules/postgres', rel), 'utf8')).toContain('/* psync: closed-socket guard */');
  }
});

(process.env.DATABASE_URL ? describe : describe.skip)('a reserved connection whose backend dies (needs DATABASE_URL; skipped otherwise)', () => {
  let db: ScratchDatabase;
  beforeAll(async () => {
    db = await createScratchDatabase();
  });
  afterAll(() => db?.drop());

  test('the next query rejects with CONNECTION_CLOSED, and the process lives on', async () => {
    const sql = createSql(db.url, { max: 2 });
    const admin = createSql(db.url, { max: 1 });
    try {
      const reserved = await sql.reserve();
      const [row] = await reserved<{ pid: number }[]>`select pg_backend_pid() as pid`;
      const pid = row!.pid;
      await admin`select pg_terminate_backend(${pid})`;
      await new Promise((r) => setTimeout(r, 100));
      await expect(reserved`select 1`).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
      // Nothing was thrown out of band (Jest would fail the test on an uncaught exception).
      await new Promise((r) => setTimeout(r, 100));
      expect((await admin<{ one: number }[]>`select 1 as one`)[0]!.one).toBe(1);
    } finally {
      await sql.end({ timeout: 1 });
      await admin.end({ timeout: 5 });
    }
  });
});
