/**
 * DATA_DIR is private (services/kit/base/private-dir.ts, embedded-postgres.ts): after a
 * first start with writes, and after a restart, `find DATA_DIR -perm /077` prints
 * nothing; what an operator loosened is narrowed at the next start with one log line;
 * the embedded database is reachable only through a 0600 Unix socket inside DATA_DIR
 * (no TCP port: the all-in-one listens on PORT, INTERNAL_PORT and METRICS_PORT only,
 * the last two on loopback), which another local account cannot open.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWorkspace, internalClients } from '../support/internal-clients';
import { listeningAddresses } from '../support/listening';
import { backends, firstLogEvent, freePort, logEvents, runCommand, SHIPPED_MAIN, startSystem, stopAllSystems, type RunningSystem } from '../support/system';

/** What `find <dir> -perm /077` prints: entries open to group or others. */
function openEntries(dir: string): string[] {
  return execFileSync('find', [dir, '-perm', '/077'], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

async function someWrites(system: RunningSystem, label: string): Promise<void> {
  const clients = internalClients(system.internalUrl);
  try {
    for (let i = 0; i < 20; i++) {
      const ws = await createWorkspace(clients.identity, 'sandbox', `${label} ${i}`);
      await clients.identity.issueKey({ workspaceId: ws });
    }
  } finally {
    clients.close();
  }
}

describe(`a private DATA_DIR (database: ${backends.database})`, () => {
  const dataDir = join(mkdtempSync(join(tmpdir(), 'psync-private-')), 'data');
  let env: Record<string, string>;

  beforeAll(async () => {
    env = { METRICS_PORT: String(await freePort()) };
    // On a real PostgreSQL nothing of this run writes to DATA_DIR (the test credentials are configured): give it one to watch.
    mkdirSync(dataDir, { mode: 0o700 });
  });

  afterAll(async () => {
    await stopAllSystems();
    rmSync(join(dataDir, '..'), { recursive: true, force: true });
  });

  test('first start, writes, stop: nothing under DATA_DIR is open to group or others', async () => {
    const system = await startSystem({ dataDir, env });
    await someWrites(system, 'private first');
    expect(openEntries(dataDir)).toEqual([]);
    expect(await system.stop()).toBe(0);
    expect(openEntries(dataDir)).toEqual([]);
    if (backends.database === 'embedded') expect(lstatSync(join(dataDir, 'keys', 'token-signing.key')).mode & 0o777).toBe(0o600);
    // A fresh DATA_DIR had nothing to repair.
    expect(logEvents(system.logs(), 'data_dir.narrowed', 'data_dir.unfixable', 'data_dir.foreign_owner')).toEqual([]);
  }, 180_000);

  test('what was loosened is narrowed at the next start, with one log line; restart and writes leave nothing open', async () => {
    const loosen = (path: string, mode: number) => chmodSync(join(dataDir, path), mode);
    loosen('.', 0o755);
    mkdirSync(join(dataDir, 'restored'));
    loosen('restored', 0o777);
    writeFileSync(join(dataDir, 'restored', 'copied-in'), 'not a secret, but private all the same');
    loosen('restored/copied-in', 0o644);
    const expected = ['.', 'restored', 'restored/copied-in'];
    if (backends.database === 'embedded') {
      loosen('keys', 0o755);
      loosen('keys/token-signing.key', 0o666);
      loosen('postgres', 0o755);
      loosen('postgres/PG_VERSION', 0o666);
      expected.push('keys', 'keys/token-signing.key', 'postgres', 'postgres/PG_VERSION');
    }
    expect(openEntries(dataDir).length).toBe(expected.length);

    const system = await startSystem({ dataDir, env });
    const repaired = logEvents(system.logs(), 'data_dir.narrowed', 'data_dir.unfixable', 'data_dir.foreign_owner');
    expect(repaired).toHaveLength(1);
    const dirs = backends.database === 'embedded' ? 4 : 2;
    expect(repaired[0]).toMatchObject({ level: 'warn', data_dir: dataDir, directories: dirs, files: expected.length - dirs });
    expect([...(repaired[0]!.paths as string[])].sort()).toEqual(expected.sort());
    // Names and counts only: a key file's contents never reach the log.
    // log text on purpose: no key file contents anywhere in it
    if (backends.database === 'embedded') expect(system.logs().join('\n')).not.toContain(readFileSync(join(dataDir, 'keys', 'token-signing.key'), 'utf8').trim());
    expect(lstatSync(dataDir).mode & 0o777).toBe(0o700);
    expect(lstatSync(join(dataDir, 'restored', 'copied-in')).mode & 0o777).toBe(0o600);

    await someWrites(system, 'private second');
    expect(openEntries(dataDir)).toEqual([]);
    expect(await system.stop()).toBe(0);
    expect(openEntries(dataDir)).toEqual([]);
  }, 180_000);

  (backends.database === 'embedded' ? describe : describe.skip)('the embedded database', () => {
    let system: RunningSystem;
    beforeAll(async () => {
      system = await startSystem({ dataDir, env });
    }, 120_000);
    afterAll(() => system.stop());

    test('is served on a 0600 Unix socket inside DATA_DIR, on no TCP port; metrics and the internal port stay on loopback', () => {
      const socket = join(dataDir, 'postgres.sock');
      const st = lstatSync(socket);
      expect(st.isSocket()).toBe(true);
      expect(st.mode & 0o777).toBe(0o600);
      const opened = firstLogEvent(system.logs(), 'database.opened');
      expect(opened).toMatchObject({ socket });
      // PORT follows HOST (127.0.0.1 in tests); INTERNAL_PORT and METRICS_PORT are loopback by default with role all.
      expect(listeningAddresses(system.child.pid!)).toEqual([`127.0.0.1:${system.env.PORT}`, `127.0.0.1:${system.env.INTERNAL_PORT}`, `127.0.0.1:${env.METRICS_PORT}`].sort());
    });

    test('another local account cannot open the socket', async () => {
      if (process.getuid?.() !== 0) return; // needs root to act as another account
      const nobody = Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim());
      const probe = `require('net').connect(process.argv[1]).on('connect', () => { console.log('connected'); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(0); })`;
      const res = await runCommand(process.execPath, ['-e', probe, join(dataDir, 'postgres.sock')], {}, 20_000, { cwd: '/', uid: nobody, gid: nobody });
      expect(res.stdout.trim()).toBe('EACCES');
    });

    test('a second process on the same DATA_DIR is refused instead of opening the database twice', async () => {
      const res = await runCommand(process.execPath, [SHIPPED_MAIN], {
        ...system.env,
        PORT: String(await freePort()),
        INTERNAL_PORT: String(await freePort()),
        METRICS_PORT: '0',
      });
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/another process serves the embedded database/);
    }, 60_000);

    test('a socket left by a killed process is cleared at the next start', async () => {
      await system.stop('SIGKILL');
      expect(lstatSync(join(dataDir, 'postgres.sock')).isSocket()).toBe(true);
      system = await startSystem({ dataDir, env });
      expect(firstLogEvent(system.logs(), 'database.opened')).toMatchObject({ socket: join(dataDir, 'postgres.sock') });
      await system.stop();
      expect(openEntries(dataDir)).toEqual([]);
    }, 120_000);
  });
});
