/**
 * `npm start` (services/main.ts, role all) boots from a fresh DATA_DIR, answers
 * /healthz and /readyz, stops with exit 0 on SIGTERM, and boots again from the SAME
 * state without re-applying migrations.
 *
 * Embedded default (no DATABASE_URL): the state is DATA_DIR (PGlite files).
 * Real PostgreSQL (DATABASE_URL): the state is the database, so both boots share one
 * scratch database (and one bus prefix) and DATA_DIR does not matter.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  backends,
  createScratchDatabase,
  deleteBusStream,
  jsonLogs,
  RunningSystem,
  ScratchDatabase,
  startSystem,
  stopAllSystems,
  uniqueBusPrefix,
} from '../support/system';

const SERVICES = ['identity', 'catalog', 'calendar', 'notifications'];

async function getJson(url: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url);
  return { status: res.status, body: await res.json() };
}

describe(`npm start (database: ${backends.database}, bus: ${backends.bus})`, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'psync-start-'));
  const busPrefix = uniqueBusPrefix();
  let db: ScratchDatabase | undefined;
  let env: Record<string, string>;
  let first: RunningSystem | undefined;

  beforeAll(async () => {
    env = { BUS_PREFIX: busPrefix };
    if (process.env.DATABASE_URL) {
      db = await createScratchDatabase();
      env.DATABASE_URL = db.url;
    }
  });

  afterAll(async () => {
    await stopAllSystems();
    await db?.drop();
    await deleteBusStream(busPrefix);
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('boots from a fresh state: listening line, /healthz, /readyz with all four services', async () => {
    // Not timed here: "ready within 15 s" holds on an idle machine (about 2-5 s), but a
    // test run shares the CPU with other test files, so a bound here would be flaky.
    first = await startSystem({ dataDir, env });

    const listening = first.logs().find((l) => l.includes('listening') && !l.includes('internal Connect/gRPC'))!;
    expect(listening).toContain(`http://127.0.0.1:${first.env.PORT}`);
    expect(first.gatewayUrl).toBe(`http://127.0.0.1:${first.env.PORT}`);

    const health = await getJson(`${first.gatewayUrl}/healthz`);
    expect(health.status).toBe(200);

    const ready = await getJson(`${first.gatewayUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ready');
    expect(ready.body.services).toEqual(Object.fromEntries(SERVICES.map((s) => [s, 'serving'])));

    // A fresh state: every schema got its migrations (kit tables at least).
    const applied = jsonLogs(first.logs()).filter((l) => l.msg === 'migration applied');
    expect(new Set(applied.map((l) => l.schema))).toEqual(new Set(SERVICES));
  });

  test('the start-up log says which backends are in use', () => {
    const logs = jsonLogs(first!.logs());
    const dbLine = logs.find((l) => typeof l.msg === 'string' && l.msg.startsWith('database:'));
    const busLine = logs.find((l) => typeof l.msg === 'string' && l.msg.startsWith('bus:') && l.backend !== undefined);
    expect(dbLine?.backend).toBe(backends.database);
    expect(busLine?.backend).toBe(backends.bus);
    if (backends.database === 'embedded') expect(dbLine?.data_dir).toBe(join(dataDir, 'postgres'));
    // The URL's password, if any, is never logged.
    if (process.env.DATABASE_URL) expect(JSON.stringify(dbLine)).not.toMatch(/postgres(ql)?:\/\//);
  });

  test('SIGTERM drains and exits 0', async () => {
    const code = await first!.stop('SIGTERM');
    expect(code).toBe(0);
    const logs = jsonLogs(first!.logs()).map((l) => l.msg);
    expect(logs).toContain('shutdown complete');
  });

  test('boots again from the same state without re-applying migrations', async () => {
    const second = await startSystem({ dataDir, env });
    const applied = jsonLogs(second.logs()).filter((l) => l.msg === 'migration applied');
    expect(applied).toEqual([]);
    const ready = await getJson(`${second.gatewayUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.body.services).toEqual(Object.fromEntries(SERVICES.map((s) => [s, 'serving'])));
    expect(await second.stop()).toBe(0);
  });
});
