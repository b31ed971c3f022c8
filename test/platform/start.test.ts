/**
 * `npm start` (main.ts, role all) boots from a fresh DATA_DIR, answers
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
  firstLogEvent,
  jsonLogs,
  logEvents,
  RunningSystem,
  ScratchDatabase,
  startSystem,
  stopAllSystems,
  uniqueBusPrefix,
} from '../support/system';

const SERVICES = ['identity', 'catalog', 'calendar', 'notifications'];

/** The top-level keys of a JSON line as written, in order, repeats included (JSON.parse would hide them). */
function topLevelKeys(line: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (ch === '"') {
      let j = i + 1;
      while (line[j] !== '"') j += line[j] === '\\' ? 2 : 1;
      if (depth === 1 && line[j + 1] === ':') keys.push(line.slice(i + 1, j));
      i = j;
    } else if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') depth--;
  }
  return keys;
}

/** Where each start-up line of a key says the key came from (`generated`, `loaded`, `TOKEN_SIGNING_KEY`). */
function keySources(lines: string[], event: 'identity.signing_key.ready' | 'notifications.encryption_key.ready'): unknown[] {
  return logEvents(lines, event).map((l) => l.source);
}

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

    expect(logEvents(first.logs(), 'process.listening')).toEqual([expect.objectContaining({ url: `http://127.0.0.1:${first.env.PORT}` })]);
    expect(first.gatewayUrl).toBe(`http://127.0.0.1:${first.env.PORT}`);

    const health = await getJson(`${first.gatewayUrl}/healthz`);
    expect(health.status).toBe(200);

    const ready = await getJson(`${first.gatewayUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ready');
    expect(ready.body.services).toEqual(Object.fromEntries(SERVICES.map((s) => [s, 'serving'])));

    // A fresh state: every schema got its migrations (kit tables at least).
    const applied = logEvents(first.logs(), 'migration.applied');
    expect(new Set(applied.map((l) => l.schema))).toEqual(new Set(SERVICES));
  });

  test('the start-up log says which backends are in use', () => {
    const dbLine = firstLogEvent(first!.logs(), 'database.opened');
    const busLine = firstLogEvent(first!.logs(), 'bus.opened');
    expect(dbLine?.backend).toBe(backends.database);
    expect(busLine?.backend).toBe(backends.bus);
    if (backends.database === 'embedded') expect(dbLine?.data_dir).toBe(join(dataDir, 'postgres'));
    // The URL's password, if any, is never logged.
    if (process.env.DATABASE_URL) expect(JSON.stringify(dbLine)).not.toMatch(/postgres(ql)?:\/\//);
  });

  test('no log line repeats a key (a child logger rebinding `component` replaces it)', () => {
    const lines = first!.logs().filter((l) => l.startsWith('{'));
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) {
      const top = topLevelKeys(line);
      expect({ line, keys: top }).toEqual({ line, keys: [...new Set(top)] });
    }
    // Lines of the services' own loggers (a child of the root) are among them.
    expect(jsonLogs(lines).map((l) => l.component)).toEqual(expect.arrayContaining(['identity', 'notifications']));
  });

  test('the start-up log says where each key came from: generated at the first start', () => {
    if (backends.database === 'embedded') {
      expect(keySources(first!.logs(), 'identity.signing_key.ready')).toEqual(['generated']);
      expect(keySources(first!.logs(), 'notifications.encryption_key.ready')).toEqual(['generated']);
    } else {
      // A real PostgreSQL never generates keys: the test configures them, as a deployment does.
      expect(keySources(first!.logs(), 'identity.signing_key.ready')).toEqual(['TOKEN_SIGNING_KEY']);
    }
  });

  test('SIGTERM drains and exits 0', async () => {
    const code = await first!.stop('SIGTERM');
    expect(code).toBe(0);
    expect(logEvents(first!.logs(), 'process.shutdown.complete')).toHaveLength(1);
  });

  test('LOG_FORMAT=pretty: human lines instead of JSON, the listening line among them', async () => {
    const prettyDir = mkdtempSync(join(tmpdir(), 'psync-pretty-'));
    try {
      const pretty = await startSystem({ dataDir: prettyDir, env: { ...env, LOG_FORMAT: 'pretty' } });
      expect(await pretty.stop()).toBe(0);
      const lines = pretty.logs().filter((l) => l.trim() !== '' && !/^\s/.test(l)); // an error's fields continue on indented lines
      expect(jsonLogs(lines)).toEqual([]);
      for (const line of lines) expect(line).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL): psync(\/[\w-]+)?: \S/);
      expect(lines).toEqual(expect.arrayContaining([expect.stringMatching(/INFO: psync: .*"event":"process\.listening","url":"http:\/\/127\.0\.0\.1:\d+"/)]));
      expect(lines).toEqual(expect.arrayContaining([expect.stringMatching(/INFO: psync\/identity: .*"event":"identity\.signing_key\.ready"/)]));
    } finally {
      rmSync(prettyDir, { recursive: true, force: true });
    }
  });

  test('boots again from the same state without re-applying migrations', async () => {
    const second = await startSystem({ dataDir, env });
    const applied = logEvents(second.logs(), 'migration.applied');
    expect(applied).toEqual([]);
    if (backends.database === 'embedded') {
      // The same DATA_DIR: the keys are read back, not made again.
      expect(keySources(second.logs(), 'identity.signing_key.ready')).toEqual(['loaded']);
      expect(keySources(second.logs(), 'notifications.encryption_key.ready')).toEqual(['loaded']);
    }
    const ready = await getJson(`${second.gatewayUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.body.services).toEqual(Object.fromEntries(SERVICES.map((s) => [s, 'serving'])));
    expect(await second.stop()).toBe(0);
  });
});
