/**
 * The operator CLI bin/psync against a running system (docs/operator-cli.md): one JSON
 * object on stdout and exit 0; on failure one line on stderr, exit 2 for usage errors
 * and 1 for anything else (the system not reachable).
 */
import { join } from 'node:path';
import { ROOT } from '../support/process';
import { backends, freePort, linesOf, runCommand, RunningSystem, RunResult, startSystem, stopAllSystems } from '../support/system';

const PSYNC = join(ROOT, 'bin/psync');

describe(`bin/psync (database: ${backends.database}, bus: ${backends.bus})`, () => {
  let system: RunningSystem;

  beforeAll(async () => {
    system = await startSystem();
  });

  afterAll(async () => {
    await stopAllSystems();
  });

  function psync(args: string[], internalUrl: string | undefined = system.internalUrl): Promise<RunResult> {
    const env: Record<string, string | undefined> = { ...process.env, PSYNC_INTERNAL_URL: internalUrl };
    return runCommand(PSYNC, args, env, 30000);
  }

  /** A failure: nothing on stdout, exactly one line on stderr. */
  function expectOneLineFailure(r: RunResult, code: number): string {
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code, stdout: '' });
    const lines = linesOf(r.stderr);
    expect(lines).toHaveLength(1);
    return lines[0]!;
  }

  test('migrate prints exactly one JSON line {"migrated":true,…} and exits 0', async () => {
    const r = await psync(['migrate']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout.endsWith('\n')).toBe(true);
    const lines = linesOf(r.stdout);
    expect(lines).toHaveLength(1);
    const out = JSON.parse(lines[0]!);
    expect(out).toMatchObject({ migrated: true });
    expect([...out.schemas].sort()).toEqual(['calendar', 'catalog', 'identity', 'notifications']);
  });

  test('migrate is idempotent: a second run succeeds and applies nothing', async () => {
    const before = system.logs().length;
    const r = await psync(['migrate']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ migrated: true });
    expect(system.logs().slice(before).filter((l) => l.includes('"migration applied"'))).toEqual([]);
  });

  test('no arguments: usage on stderr, exit 2', async () => {
    const line = expectOneLineFailure(await psync([]), 2);
    expect(line).toMatch(/usage/i);
    expect(line).toContain('migrate');
    expect(line).toContain('deliveries replay');
  });

  test('an unknown command: one line naming it, exit 2', async () => {
    const line = expectOneLineFailure(await psync(['frobnicate', 'everything']), 2);
    expect(line).toContain('frobnicate everything');
  });

  test('an unknown flag: one line naming it, exit 2 (the command does not run)', async () => {
    const line = expectOneLineFailure(await psync(['migrate', '--bogus', 'x']), 2);
    expect(line).toContain('--bogus');
  });

  test('a flag without a value: exit 2', async () => {
    const line = expectOneLineFailure(await psync(['migrate', '--bogus']), 2);
    expect(line).toContain('--bogus');
  });

  test('the system not running: one line on stderr naming the URL, exit 1, nothing on stdout', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const line = expectOneLineFailure(await psync(['migrate'], closed), 1);
    expect(line).toContain(closed);
    expect(line).not.toMatch(/\bat .+:\d+:\d+/); // no stack trace
  });
});
