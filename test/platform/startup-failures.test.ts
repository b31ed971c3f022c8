/**
 * A start-up failure an operator can fix is one line on stderr naming the variable to
 * change, and exit 1 (README "Configuration"): a port in use (PORT, INTERNAL_PORT,
 * HEALTH_PORT, an explicitly set METRICS_PORT), a PostgreSQL server at DATABASE_URL
 * or a NATS server at NATS_URL that does not answer (the URL's password never
 * printed). The process runs on the test environment's backends (a scratch database
 * on DATABASE_URL when set) except where the backend itself is what fails.
 */
import { createServer, type Server } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testCallerEnv } from '../support/credentials';
import { createScratchDatabase, deleteBusStream, freePort, linesOf, randomKey, runMain, uniqueBusPrefix, type RunResult, type ScratchDatabase } from '../support/system';

jest.setTimeout(180_000);

/** Occupies a loopback port until closed. */
async function occupy(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return { port: (server.address() as { port: number }).port, server };
}

/** The one stderr line of a process that exited 1. */
function oneLineExit1(r: RunResult): string {
  expect({ code: r.code, signal: r.signal }).toEqual({ code: 1, signal: null });
  const lines = linesOf(r.stderr);
  expect(lines).toEqual([expect.any(String)]);
  expect(r.stderr.endsWith('\n')).toBe(true);
  return lines[0]!;
}

describe('start-up failures: one line naming the variable, exit 1', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'psync-startup-'));
  const prefixes: string[] = [];
  let db: ScratchDatabase | undefined;
  let n = 0;

  beforeAll(async () => {
    if (process.env.DATABASE_URL) db = await createScratchDatabase();
  });

  afterAll(async () => {
    await db?.drop();
    for (const p of prefixes) await deleteBusStream(p);
    rmSync(scratch, { recursive: true, force: true });
  });

  /** The environment of an all-in-one process on the test backends, free ports, its own DATA_DIR. */
  async function envWith(overrides: Record<string, string | undefined>): Promise<Record<string, string | undefined>> {
    const prefix = uniqueBusPrefix();
    prefixes.push(prefix);
    const env: Record<string, string | undefined> = {
      ...process.env,
      ...testCallerEnv(),
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      INTERNAL_PORT: String(await freePort()),
      METRICS_PORT: '0',
      DATA_DIR: join(scratch, `d${n++}`),
      BUS_PREFIX: prefix,
      LOG_LEVEL: 'info',
      DATABASE_URL: db?.url,
      ...(db ? { TOKEN_SIGNING_KEY: randomKey(), SECRETS_ENCRYPTION_KEY: randomKey() } : {}),
      ...overrides,
    };
    return env;
  }

  test.each(['PORT', 'INTERNAL_PORT', 'HEALTH_PORT', 'METRICS_PORT'])('%s already in use', async (variable) => {
    const { port, server } = await occupy();
    try {
      const r = await runMain([], await envWith({ [variable]: String(port) }), 120_000);
      expect(oneLineExit1(r)).toBe(`configuration error: ${variable} ${port} is already in use (set ${variable} to a free port)`);
      expect(r.stdout).not.toMatch(/"stack"/);
    } finally {
      server.close();
    }
  });

  test('DATABASE_URL unreachable: names it, never its password', async () => {
    const closed = await freePort();
    const password = 'pw-never-printed-0123';
    const r = await runMain([], await envWith({ DATABASE_URL: `postgres://psync:${password}@127.0.0.1:${closed}/psync?sslmode=disable`, TOKEN_SIGNING_KEY: randomKey() }), 60_000);
    const line = oneLineExit1(r);
    expect(line).toMatch(/^start-up failed: cannot use the PostgreSQL server at DATABASE_URL \(postgres:\/\/psync@127\.0\.0\.1:\d+\/psync\): /);
    expect(line).toContain('ECONNREFUSED');
    expect(r.stdout + r.stderr).not.toContain(password);
  });

  test('NATS_URL unreachable: names it', async () => {
    const closed = await freePort();
    const r = await runMain([], await envWith({ NATS_URL: `nats://127.0.0.1:${closed}` }), 120_000);
    expect(oneLineExit1(r)).toMatch(new RegExp(`^start-up failed: cannot use the NATS server at NATS_URL \\(nats://127\\.0\\.0\\.1:${closed}\\): \\S`));
  });
});
