/**
 * One role per process, as Kubernetes runs it: identity, catalog, calendar and
 * notifications each in its own process on its own INTERNAL_PORT, sharing one
 * database and one bus, and the gateway alone pointing at them by URL.
 *
 * Separate processes need a database and a bus shared between processes, so this
 * runs only with DATABASE_URL and NATS_URL set (the embedded PGlite and the
 * in-process bus live inside one process).
 *
 * The `migrate` role (the Helm hook Job) runs on both backends.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  backends,
  createScratchDatabase,
  deleteBusStream,
  jsonLogs,
  linesOf,
  logEvents,
  randomKey,
  runMain,
  RunningSystem,
  ScratchDatabase,
  startSystem,
  stopAllSystems,
  uniqueBusPrefix,
} from '../support/system';
import { healthClient } from './grpc-health';
import { TEST_TOKENS } from '../support/credentials';
import { sleep } from '../support/eventually';

const ROLES = ['identity', 'catalog', 'calendar', 'notifications'] as const;
type Role = (typeof ROLES)[number];
const PROTO: Record<Role, string> = {
  identity: 'psync.identity.v1.IdentityService',
  catalog: 'psync.catalog.v1.CatalogService',
  calendar: 'psync.calendar.v1.CalendarService',
  notifications: 'psync.notifications.v1.NotificationsService',
};

async function readyz(gatewayUrl: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${gatewayUrl}/readyz`);
  return { status: res.status, body: await res.json() };
}

const real = Boolean(process.env.DATABASE_URL && process.env.NATS_URL);
const maybe = real ? describe : describe.skip;

maybe('one service per process (needs DATABASE_URL and NATS_URL: a database and bus shared between processes; skipped otherwise)', () => {
  let db: ScratchDatabase;
  const prefix = uniqueBusPrefix();
  let shared: Record<string, string>;
  const services = {} as Record<Role, RunningSystem>;
  let gateway: RunningSystem;

  beforeAll(async () => {
    db = await createScratchDatabase();
    shared = {
      DATABASE_URL: db.url,
      BUS_PREFIX: prefix,
      TOKEN_SIGNING_KEY: randomKey(),
      SECRETS_ENCRYPTION_KEY: randomKey(),
    };
  });

  afterAll(async () => {
    await stopAllSystems();
    await db?.drop();
    await deleteBusStream(prefix);
  });

  test('the four services start at once, each in its own process, migrating one database concurrently', async () => {
    const started = await Promise.all(ROLES.map((role) => startSystem({ role, env: shared })));
    ROLES.forEach((role, i) => (services[role] = started[i]!));
    const ports = new Set(ROLES.map((r) => services[r].internalUrl));
    expect(ports.size).toBe(4);
    for (const role of ROLES) {
      const s = services[role];
      expect(s.gatewayUrl).toBe('');
      expect(s.internalUrl).toBe(`http://127.0.0.1:${s.env.INTERNAL_PORT}`);
      const logs = jsonLogs(s.logs());
      // Each process migrates only the schema it hosts.
      const schemas = new Set(logEvents(logs, 'migration.applied').map((l) => l.schema));
      expect([...schemas]).toEqual([role]);
      expect(logs.find((l) => l.backend === 'postgresql')).toBeDefined();
      expect(logs.find((l) => l.backend === 'nats')).toBeDefined();
    }
  });

  test('each process answers grpc.health.v1 SERVING for its own service; NOT_FOUND for the others only to a configured role', async () => {
    for (const role of ROLES) {
      const anonymous = healthClient(services[role].internalUrl);
      const operator = healthClient(services[role].internalUrl, TEST_TOKENS.operator);
      try {
        await expect(anonymous.check('')).resolves.toBe('SERVING');
        await expect(anonymous.check(PROTO[role])).resolves.toBe('SERVING');
        await expect(operator.check(PROTO[role])).resolves.toBe('SERVING');
        for (const other of ROLES.filter((r) => r !== role)) {
          // Anonymous (a probe, a scanner): the process's status, whatever the name.
          await expect(anonymous.check(PROTO[other])).resolves.toBe('SERVING');
          await expect(operator.check(PROTO[other])).rejects.toMatchObject({ code: 5 /* NOT_FOUND */ });
        }
      } finally {
        anonymous.close();
        operator.close();
      }
    }
  });

  test('the gateway alone, pointed at them by *_URL, is ready', async () => {
    gateway = await startSystem({
      role: 'gateway',
      env: {
        ...shared,
        IDENTITY_URL: services.identity.internalUrl,
        CATALOG_URL: services.catalog.internalUrl,
        CALENDAR_URL: services.calendar.internalUrl,
        NOTIFICATIONS_URL: services.notifications.internalUrl,
      },
    });
    expect(gateway.gatewayUrl).toBe(`http://127.0.0.1:${gateway.env.PORT}`);
    expect(gateway.internalUrl).toBe('');
    // The gateway hosts no service: it opens no database and runs no migration.
    expect(logEvents(gateway.logs(), 'migration.applied', 'database.opened')).toEqual([]);
    const r = await readyz(gateway.gatewayUrl);
    expect(r.status).toBe(200);
    expect(r.body.services).toEqual({ identity: 'serving', catalog: 'serving', calendar: 'serving', notifications: 'serving' });
  });

  test('a stopped service exits 0 and makes the gateway unready, naming it unreachable', async () => {
    await expect(services.calendar.stop('SIGTERM')).resolves.toBe(0);
    let r = await readyz(gateway.gatewayUrl);
    for (let i = 0; i < 50 && r.body.services?.calendar !== 'unreachable'; i++) {
      await sleep(100);
      r = await readyz(gateway.gatewayUrl);
    }
    expect(r.status).toBe(503);
    expect(r.body.status).toBe('not_ready');
    expect(r.body.services).toEqual({ identity: 'serving', catalog: 'serving', calendar: 'unreachable', notifications: 'serving' });
  });

  test('the gateway gets ready again when the service comes back', async () => {
    // Same INTERNAL_PORT, same database (already migrated: nothing applied).
    services.calendar = await startSystem({ role: 'calendar', env: { ...shared, INTERNAL_PORT: services.calendar.env.INTERNAL_PORT! } });
    expect(logEvents(services.calendar.logs(), 'migration.applied')).toEqual([]);
    let r = await readyz(gateway.gatewayUrl);
    for (let i = 0; i < 50 && r.status !== 200; i++) {
      await sleep(100);
      r = await readyz(gateway.gatewayUrl);
    }
    expect(r.status).toBe(200);
  });

  test('every process exits 0 on SIGTERM', async () => {
    const codes = await Promise.all([gateway, ...ROLES.map((r) => services[r])].map((s) => s.stop('SIGTERM')));
    expect(codes).toEqual([0, 0, 0, 0, 0]);
  });
});

describe(`main.ts migrate (database: ${backends.database})`, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'psync-migrate-'));
  let db: ScratchDatabase | undefined;
  let env: Record<string, string | undefined>;

  beforeAll(async () => {
    env = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'info' };
    delete env.DATABASE_URL;
    if (process.env.DATABASE_URL) {
      db = await createScratchDatabase();
      env.DATABASE_URL = db.url;
    }
  });

  afterAll(async () => {
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('on a fresh database: applies every schema, prints exactly {"migrated":true,…} on stdout (logs on stderr), exits 0', async () => {
    const r = await runMain(['migrate'], env);
    expect(r.code).toBe(0);
    const lines = linesOf(r.stdout);
    expect(lines).toHaveLength(1);
    const result = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(result).toMatchObject({ migrated: true });
    expect([...(result.schemas as string[])].sort()).toEqual(['calendar', 'catalog', 'identity', 'notifications']);
    const applied = logEvents(linesOf(r.stderr), 'migration.applied');
    expect(new Set(applied.map((l) => l.schema))).toEqual(new Set(ROLES));
  });

  test('again: applies nothing; with LOG_LEVEL=silent stdout is exactly the one JSON line', async () => {
    const r = await runMain(['migrate'], { ...env, LOG_LEVEL: 'silent' });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = linesOf(r.stdout);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ migrated: true });
  });

  test('an unknown role: one line on stderr, exit 2', async () => {
    const r = await runMain(['frobnicate'], env);
    expect(r.code).toBe(2);
    expect(linesOf(r.stderr)).toHaveLength(1);
    expect(r.stderr).toContain('frobnicate');
  });
});
