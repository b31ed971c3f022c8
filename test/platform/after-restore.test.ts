/**
 * `main.ts after-restore`, the one command an operator runs after restoring the
 * database from a backup (docs/operations.md "Backup and restore"; the whole restore
 * under traffic is test/topology/backup-restore.test.ts). On a migrated database: one
 * JSON line, exit 0; the calendar's next event seq moves past anything the lost server
 * could have used, again on a second run; the notifications intake's durable consumer
 * is deleted on NATS (the in-process bus keeps none between runs: false).
 *
 * It runs only for the operator and only on a stopped system (services/kit/runtime/after-restore-guard.ts):
 * without the operator credential (PSYNC_TOKEN) it refuses; while the system serves it
 * refuses, naming what answers; `--force` proceeds with a warning on a real PostgreSQL
 * (and the running notifications recreates its consumer), never on the embedded one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_TOKENS, testCallerEnv } from '../support/credentials';
import { eventually } from '../notifications/support/harness';
import {
  backends,
  createScratchDatabase,
  deleteBusStream,
  firstLogEvent,
  freePort,
  linesOf,
  runMain,
  startSystem,
  stopAllSystems,
  uniqueBusPrefix,
  type ScratchDatabase,
} from '../support/system';

jest.setTimeout(180_000);

describe(`main.ts after-restore (database: ${backends.database}, bus: ${backends.bus})`, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'psync-after-restore-'));
  const prefix = uniqueBusPrefix();
  let db: ScratchDatabase | undefined;
  let env: Record<string, string | undefined>;

  beforeAll(async () => {
    // The system's own credentials and internal port: after-restore checks both.
    env = { ...process.env, ...testCallerEnv(), PSYNC_TOKEN: TEST_TOKENS.operator, DATA_DIR: dataDir, BUS_PREFIX: prefix, INTERNAL_PORT: String(await freePort()) };
    delete env.DATABASE_URL;
    if (process.env.DATABASE_URL) {
      db = await createScratchDatabase();
      env.DATABASE_URL = db.url;
    }
    // A system that ran: migrated schemas, and on NATS the intake's durable consumer.
    const system = await startSystem({ dataDir, env: systemEnv() });
    await system.stop();
  });

  afterAll(async () => {
    await stopAllSystems();
    await db?.drop();
    if (process.env.NATS_URL) await deleteBusStream(prefix);
    rmSync(dataDir, { recursive: true, force: true });
  });

  const systemEnv = () => Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && e[0] !== 'PSYNC_TOKEN'));

  const run = async () => {
    const r = await runMain(['after-restore'], { ...env, LOG_LEVEL: 'silent' }, 120_000);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = linesOf(r.stdout);
    expect(lines).toHaveLength(1);
    return JSON.parse(lines[0]!) as { restored: boolean; services: { calendar: { next_event_seq_after: string }; notifications: { intake_consumer_rewound: boolean } } };
  };

  test('moves the event log past the gap and rewinds the intake; a second run moves on again and finds no consumer', async () => {
    const first = await run();
    expect(first.restored).toBe(true);
    expect(BigInt(first.services.calendar.next_event_seq_after)).toBeGreaterThanOrEqual(1_000_000_000n);
    expect(first.services.notifications.intake_consumer_rewound).toBe(backends.bus === 'nats');
    const second = await run();
    expect(BigInt(second.services.calendar.next_event_seq_after)).toBeGreaterThan(BigInt(first.services.calendar.next_event_seq_after) - 1n);
    expect(second.services.notifications.intake_consumer_rewound).toBe(false);
  });
});

describe(`main.ts after-restore refusals (database: ${backends.database}, bus: ${backends.bus})`, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'psync-after-restore-'));
  const prefix = uniqueBusPrefix();
  let db: ScratchDatabase | undefined;
  let env: Record<string, string>;

  beforeAll(async () => {
    env = { ...testCallerEnv(), DATA_DIR: dataDir, BUS_PREFIX: prefix, INTERNAL_PORT: String(await freePort()) };
    for (const k of ['PATH', 'HOME', 'NATS_URL'] as const) if (process.env[k]) env[k] = process.env[k]!;
    if (process.env.DATABASE_URL) {
      db = await createScratchDatabase();
      env.DATABASE_URL = db.url;
    }
  });

  afterAll(async () => {
    await stopAllSystems();
    await db?.drop();
    if (process.env.NATS_URL) await deleteBusStream(prefix);
    rmSync(dataDir, { recursive: true, force: true });
  });

  const afterRestore = (extra: Record<string, string | undefined>, args: string[] = []) => runMain(['after-restore', ...args], { ...env, LOG_LEVEL: 'warn', ...extra }, 120_000);

  test('without the operator credential: refused, nothing done', async () => {
    const wrong = await afterRestore({ PSYNC_TOKEN: 'psop_not-the-operator-token-0123456789abcdef' });
    expect({ code: wrong.code, stdout: wrong.stdout, stderr: wrong.stderr.trim() }).toEqual({
      code: 1,
      stdout: '',
      stderr: 'after-restore refused: PSYNC_TOKEN (or the token file) is not the operator credential this system accepts',
    });
    const none = await afterRestore({});
    expect(none.code).toBe(1);
    expect(none.stderr.trim()).toMatch(/^after-restore refused: it needs the operator credential: no operator credential: set PSYNC_TOKEN/);
  });

  test('while the system serves: refused naming what answers; --force proceeds loudly on a real PostgreSQL, never on the embedded one', async () => {
    const system = await startSystem({ dataDir, env });
    const refused = await afterRestore({ PSYNC_TOKEN: TEST_TOKENS.operator });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    const line = refused.stderr.trim();
    expect(line).toMatch(/^after-restore refused: the system is serving \(/);
    expect(line).toContain(`a process answers health checks at http://127.0.0.1:${env.INTERNAL_PORT}`);
    if (backends.bus === 'nats') expect(line).toContain('a process is pulling from NATS consumer notifications-webhook-deliveries');
    expect(line).toMatch(/pass --force\)?$/);

    const forced = await afterRestore({ PSYNC_TOKEN: TEST_TOKENS.operator }, ['--force']);
    if (backends.database === 'embedded') {
      expect(forced.code).toBe(1);
      expect(forced.stderr.trim()).toMatch(/^after-restore refused: .* on the embedded database, which two processes must never open at once/);
      return;
    }
    expect(forced.code).toBe(0);
    expect(JSON.parse(linesOf(forced.stdout)[0]!)).toMatchObject({ restored: true });
    expect(firstLogEvent(linesOf(forced.stderr), 'after_restore.forced')).toMatchObject({ level: 'warn' });
    if (backends.bus === 'nats') {
      // The running notifications notices its consumer gone and recreates it (the rewind undone, as the warning says).
      await eventually(async () => firstLogEvent(system.logs(), 'bus.consumer.recreated') !== undefined, 20_000, 'the consumer recreated by the running system');
    }
  });
});
