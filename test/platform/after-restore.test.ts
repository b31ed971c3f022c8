/**
 * `main.ts after-restore`, the one command an operator runs after restoring the
 * database from a backup (docs/operations.md "Backup and restore"; the whole restore
 * under traffic is test/topology/backup-restore.test.ts). On a migrated database: one
 * JSON line, exit 0; the calendar's next event seq moves past anything the lost server
 * could have used, again on a second run; the notifications intake's durable consumer
 * is deleted on NATS (the in-process bus keeps none between runs: false).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backends, createScratchDatabase, deleteBusStream, linesOf, runMain, startSystem, uniqueBusPrefix, type ScratchDatabase } from '../support/system';

jest.setTimeout(180_000);

describe(`main.ts after-restore (database: ${backends.database}, bus: ${backends.bus})`, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'psync-after-restore-'));
  const prefix = uniqueBusPrefix();
  let db: ScratchDatabase | undefined;
  let env: Record<string, string | undefined>;

  beforeAll(async () => {
    env = { ...process.env, DATA_DIR: dataDir, BUS_PREFIX: prefix };
    delete env.DATABASE_URL;
    if (process.env.DATABASE_URL) {
      db = await createScratchDatabase();
      env.DATABASE_URL = db.url;
    }
    // A system that ran: migrated schemas, and on NATS the intake's durable consumer.
    const system = await startSystem({ dataDir, env: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined)) });
    await system.stop();
  });

  afterAll(async () => {
    await db?.drop();
    if (process.env.NATS_URL) await deleteBusStream(prefix);
    rmSync(dataDir, { recursive: true, force: true });
  });

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
