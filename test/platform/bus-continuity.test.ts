/**
 * The in-process bus across runs (services/kit/events/bus-continuity.ts): its log is in
 * memory, so a run that does not end drained — here, killed with SIGKILL — makes the
 * next start publish the retained outbox rows again; a run that ends drained leaves
 * the marker and the next start publishes nothing again.
 *
 * Forced onto the in-process bus (NATS_URL empty) in every mode; on a PostgreSQL
 * server (DATABASE_URL) the three runs share one scratch database, on the embedded
 * default one DATA_DIR.
 */
import { TEST_TOKENS } from '../support/credentials';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/process';
import { backends, createScratchDatabase, freePort, logEvents, runCommand, ScratchDatabase, startSystem, stopAllSystems } from '../support/system';
import { eventually } from '../support/eventually';

const PSYNC = join(ROOT, 'bin/psync');
/**
 * Three starts of the whole system (the embedded one runs PGlite each time): ~25 s on
 * an idle 2-core machine, over a minute when other suites share it.
 */
const TEST_TIMEOUT_MS = 240_000;

describe(`in-process bus continuity (database: ${backends.database})`, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'psync-bus-continuity-'));
  let db: ScratchDatabase | undefined;
  const env: Record<string, string> = { NATS_URL: '', LOG_LEVEL: 'info' };

  beforeAll(async () => {
    if (process.env.DATABASE_URL) {
      db = await createScratchDatabase();
      env.DATABASE_URL = db.url;
    }
  });

  afterAll(async () => {
    await stopAllSystems();
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function psync(internalUrl: string, args: string[]): Promise<Record<string, string>> {
    const r = await runCommand(PSYNC, args, { ...process.env, PSYNC_INTERNAL_URL: internalUrl, PSYNC_TOKEN: TEST_TOKENS.operator }, 30000);
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout) as Record<string, string>;
  }

  const replayLines = (lines: string[]) => logEvents(lines, 'bus.memory.republished');

  test(
    'killed after events reached the bus: the next start publishes them again; a drained stop leaves the marker',
    async () => {
      const metricsPort = await freePort();
      const first = await startSystem({ dataDir, env: { ...env, METRICS_PORT: String(metricsPort) } });
      const ws = await psync(first.internalUrl, ['workspace', 'create', '--name', 'continuity', '--env', 'sandbox']);
      // A marketplace listing: one catalog event through the outbox to the bus.
      await psync(first.internalUrl, ['listing', 'create', '--workspace', ws.workspace_id!]);
      // The relay is nudged at commit: wait until it has handed the event over (nothing pending in catalog's outbox).
      const catalogPending = /^psync_outbox_pending\{[^}]*schema="catalog"[^}]*\} (\S+)$/m;
      await eventually(
        async () => {
          const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
          return catalogPending.exec(text)?.[1] === '0';
        },
        20_000,
        "catalog's outbox published",
      );
      expect(await first.stop('SIGKILL')).toBeNull();
      expect(existsSync(join(dataDir, 'bus', 'drained'))).toBe(false);

      const second = await startSystem({ dataDir, env });
      const replayed = replayLines(second.logs());
      expect(replayed).toEqual([expect.objectContaining({ level: 'warn', schema: 'catalog', events: expect.any(Number) })]);
      expect(replayed[0]!.events as number).toBeGreaterThanOrEqual(1);
      // Ended on SIGTERM with nothing left unhandled: the marker is written.
      expect(await second.stop()).toBe(0);
      expect(existsSync(join(dataDir, 'bus', 'drained'))).toBe(true);

      const third = await startSystem({ dataDir, env });
      expect(replayLines(third.logs())).toEqual([]);
      // Taken at start, so a crash of this run would be detected.
      expect(existsSync(join(dataDir, 'bus', 'drained'))).toBe(false);
      expect(await third.stop()).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );
});
