/**
 * The system under test as its own process, started exactly as the image and `npm start`
 * start it: `node dist/psync.cjs <role>` from the repository root, the build
 * deploy/build-main.mjs makes (jest's global set-up, test/support/build-main.js, brings
 * it up to date before any test runs). An older release's checkout (the rolling-upgrade
 * check) starts from its sources through tsx.
 *
 * - No DATABASE_URL in the test environment: the embedded default (PGlite under a
 *   fresh DATA_DIR, in-process bus).
 * - DATABASE_URL set (CI): the system gets its OWN fresh database `psync_s_<random>`
 *   on that server (dropped on stop), and a unique BUS_PREFIX `t<hex>` so concurrent
 *   test files never share a NATS stream (deleted on stop when NATS_URL is set).
 *
 * Internal API credentials: OPERATOR_TOKEN and INTERNAL_CALLERS accept every role's
 * test credential (credentials.ts), and a one-role process sends its own INTERNAL_TOKEN.
 *
 * With a real DATABASE_URL, TOKEN_SIGNING_KEY and SECRETS_ENCRYPTION_KEY get random
 * values unless given (the embedded default generates its own under DATA_DIR).
 *
 * Whatever `opts.env` sets wins: pass DATABASE_URL / BUS_PREFIX / DATA_DIR explicitly
 * to share them between processes or across restarts; resources passed in are never
 * cleaned up by `stop()` (the caller owns them).
 *
 * Every started child is remembered: `stopAllSystems()` (call it in afterAll) and a
 * process `exit` hook make sure none outlives the test file, even on failure.
 */
import { spawn, ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { createSql } from '../../services/kit/db';
import { ROOT, waitForLine } from './process';
import { seedEmbeddedDatabase } from './pglite-template';
import { TEST_TOKENS, testCallerEnv } from './credentials';
import { isRole } from '../../services/kit/rpc';
import { internalClients, type InternalClients } from './internal-clients';
import { eventPattern, firstLogEvent } from './log-events';

export { eventPattern, firstLogEvent, logEvents, type LogLine } from './log-events';

export interface StartOptions {
  /** Extra environment; wins over everything startSystem chooses. */
  env?: Record<string, string>;
  /** DATA_DIR to use (kept on stop); default: a fresh temporary directory (removed on stop). */
  dataDir?: string;
  /** main.ts role: all (default), gateway, identity, catalog, calendar, notifications. */
  role?: string;
  /** Extra arguments after the role. */
  args?: string[];
  /** How long to wait for the `listening` line (default 50 s: it ends before Jest's 60 s hook time-out, so the start-up output is reported). */
  timeoutMs?: number;
  /** The checkout to start main.ts (or an older release's services/main.ts) from (default: this repository; another release's for the rolling-upgrade check). */
  root?: string;
}

export interface RunningSystem {
  /** The gateway's base URL from the `listening` line; '' for a role without gateway. */
  gatewayUrl: string;
  /** Base URL of the internal Connect/gRPC server; '' for the gateway role. */
  internalUrl: string;
  child: ChildProcess;
  dataDir: string;
  /** The environment the child was started with (for restarts: same DATABASE_URL, BUS_PREFIX …). */
  env: Record<string, string>;
  /**
   * Sends `signal` (default SIGTERM) unless one was sent already, waits for the exit (SIGKILL after 20 s), then
   * cleans up what startSystem created. Resolves with the exit code (null when killed
   * by a signal). Safe to call twice.
   */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Every stdout line so far (JSON log lines and the like). */
  logs(): string[];
  /** Every stderr line so far. */
  stderr(): string[];
}

/** A free loopback TCP port (released before returning, so a tiny race remains). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface ScratchDatabase {
  /** postgres:// URL of the new database. */
  url: string;
  name: string;
  /** Drops the database (terminating leftover sessions); safe to call twice. */
  drop(): Promise<void>;
}

/**
 * Creates an empty database `psync_s_<random>` on the server of `adminUrl`
 * (default: the test environment's DATABASE_URL).
 */
export async function createScratchDatabase(adminUrl = process.env.DATABASE_URL): Promise<ScratchDatabase> {
  if (!adminUrl) throw new Error('createScratchDatabase needs DATABASE_URL');
  const name = `psync_s_${randomBytes(6).toString('hex')}`;
  const admin = createSql(adminUrl, { max: 1 });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  return {
    url: u.toString(),
    name,
    drop: () =>
      (dropped ??= (async () => {
        const a = createSql(adminUrl, { max: 1 });
        try {
          await a.unsafe(`drop database if exists ${name} with (force)`);
        } finally {
          await a.end({ timeout: 5 });
        }
      })()),
  };
}

/** A random 256-bit key in base64, the format TOKEN_SIGNING_KEY and SECRETS_ENCRYPTION_KEY take. */
export function randomKey(): string {
  return randomBytes(32).toString('base64');
}

/** A unique bus prefix for one test (its NATS stream is the upper-case form). */
export function uniqueBusPrefix(): string {
  return `t${randomBytes(5).toString('hex')}`;
}

/** Deletes the JetStream stream of `prefix` on NATS_URL, if any; never throws. */
export async function deleteBusStream(prefix: string, natsUrl = process.env.NATS_URL): Promise<void> {
  if (!natsUrl) return;
  try {
    const nc = await connect({ servers: natsUrl.split(',') });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.delete(prefix.toUpperCase().replace(/-/g, '_')).catch(() => false);
    } finally {
      await nc.close();
    }
  } catch {
    // best effort: a leftover test stream is harmless
  }
}

/** Which backends the test environment asks for. */
export const backends = {
  database: process.env.DATABASE_URL ? 'postgresql' : 'embedded',
  bus: process.env.NATS_URL ? 'nats' : 'memory',
} as const;

const running = new Set<RunningSystem>();

// Last resort: whatever happens to the test file, no child outlives the Jest worker.
process.once('exit', () => {
  for (const s of running) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
});

/** Stops every system still running (afterAll); resolves when all have exited and been cleaned up. */
export async function stopAllSystems(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  await Promise.allSettled([...running].map((s) => s.stop(signal)));
}

/** The shipped build, as deploy/build-main.mjs writes it. */
export const SHIPPED_MAIN = join('dist', 'psync.cjs');

/** Runs `node dist/psync.cjs …` with `env` and returns the child (for short-lived roles and refusals). */
export function spawnMain(args: string[], env: Record<string, string | undefined>): ChildProcess {
  return spawn(process.execPath, [SHIPPED_MAIN, ...args], {
    cwd: ROOT,
    env: env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Resolves with the child's exit code (null when killed by a signal) once it has exited. */
export function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** Collects a stream's text into lines (trailing empty line dropped). */
function collectLines(stream: NodeJS.ReadableStream | null | undefined, into: string[]): void {
  if (!stream) return;
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buf += chunk;
    const parts = buf.split('\n');
    buf = parts.pop() ?? '';
    into.push(...parts);
  });
  stream.on('end', () => {
    if (buf) into.push(buf);
    buf = '';
  });
}

/** A system started for a block of tests, and internal clients at its URL (useSystem). */
export interface SystemInUse {
  system: RunningSystem;
  clients: InternalClients;
}

/**
 * Starts one system (startSystem(opts)) with internal clients at its URL before the
 * tests of the enclosing file or describe block, and closes both after them. Call it at
 * the top of the block, before the block's own hooks: Jest runs hooks in declaration
 * order, so `system` and `clients` are set when those run.
 */
export function useSystem(opts: StartOptions = {}, timeoutMs = 120_000): SystemInUse {
  const inUse = {} as SystemInUse;
  beforeAll(async () => {
    inUse.system = await startSystem(opts);
    inUse.clients = internalClients(inUse.system.internalUrl);
  }, timeoutMs);
  afterAll(async () => {
    inUse.clients?.close();
    await stopAllSystems();
  });
  return inUse;
}

/**
 * Starts the system (this repository's build, or another release's main.ts) in its own process and resolves once it printed its
 * `listening` line. On failure (exit, time-out) everything is cleaned up and the
 * error carries the output.
 */
/**
 * How to start the checkout at `root`: this repository's shipped build; another
 * release's sources through tsx, main.ts or services/main.ts in a release from before
 * the composition root moved to the top (the rolling-upgrade check starts the previous
 * release from its own checkout).
 */
/**
 * How a release from before log events marks the lines startSystem reads (the rolling
 * upgrade starts the previous release). Log text on purpose: that release's lines carry no
 * `event`; this goes once deploy/previous-release names a release that logs events.
 */
const PREVIOUS_RELEASE = {
  listening: /listening.*https?:\/\//,
  bound: /internal Connect\/gRPC server bound/,
  internalOnly: /internal services only/,
};

export function entryOf(root: string): string[] {
  if (root === ROOT) return [SHIPPED_MAIN];
  return ['--import', 'tsx', existsSync(join(root, 'main.ts')) ? 'main.ts' : join('services', 'main.ts')];
}

export async function startSystem(opts: StartOptions = {}): Promise<RunningSystem> {
  const given = opts.env ?? {};
  const portsChosenHere = given.PORT === undefined && given.INTERNAL_PORT === undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts);
    } catch (err) {
      // Another process took a port between freePort() and the child's bind ("PORT … is
      // already in use" on stderr): try new ones.
      if (!(portsChosenHere && attempt < 3 && err instanceof Error && /EADDRINUSE|is already in use/.test(err.message))) throw err;
    }
  }
}

/** Parses a JSON log line; undefined for anything else. */
function parseLine(line: string | undefined): Record<string, unknown> | undefined {
  if (line === undefined) return undefined;
  try {
    const v = JSON.parse(line) as unknown;
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

async function startOnce(opts: StartOptions): Promise<RunningSystem> {
  const role = opts.role ?? 'all';
  const cleanups: (() => Promise<void> | void)[] = [];
  const given = opts.env ?? {};

  const dataDir = opts.dataDir ?? given.DATA_DIR ?? mkdtempSync(join(tmpdir(), 'psync-system-'));
  if (!opts.dataDir && !given.DATA_DIR) cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));

  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  // Never leak the test's admin database or prefix to the child: set below or by the caller.
  delete env.DATABASE_URL;
  delete env.BUS_PREFIX;
  Object.assign(env, {
    PORT: String(await freePort()),
    INTERNAL_PORT: String(await freePort()),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    SHUTDOWN_GRACE_MS: '5000',
  });

  try {
    if (process.env.DATABASE_URL && given.DATABASE_URL === undefined) {
      const db = await createScratchDatabase();
      cleanups.push(() => db.drop());
      env.DATABASE_URL = db.url;
    }
    if (given.BUS_PREFIX === undefined) {
      const prefix = uniqueBusPrefix();
      env.BUS_PREFIX = prefix;
      if (process.env.NATS_URL && given.NATS_URL === undefined) cleanups.push(() => deleteBusStream(prefix));
    }
    // Internal API credentials: the system accepts every test role's, and a process of
    // one role sends its own (test/support/credentials.ts).
    Object.assign(env, testCallerEnv());
    if (role !== 'all' && role !== 'migrate' && isRole(role)) env.INTERNAL_TOKEN = TEST_TOKENS[role];
    Object.assign(env, given);
    // On a real PostgreSQL the services generate no keys (local-keys.ts): configure them,
    // as a deployment does, so the features that need them work in tests too.
    if (env.DATABASE_URL) {
      env.TOKEN_SIGNING_KEY ??= randomKey();
      env.SECRETS_ENCRYPTION_KEY ??= randomKey();
    }
    // The embedded database of a DATA_DIR made here starts from an initialised copy
    // (pglite-template.ts); a caller's DATA_DIR is left as given (a first start is what
    // some tests check).
    const embedded = !Object.keys(env).some((k) => k === 'DATABASE_URL' || k.endsWith('_DATABASE_URL'));
    if (embedded && !opts.dataDir && !given.DATA_DIR) seedEmbeddedDatabase(join(dataDir, 'postgres'));
  } catch (err) {
    for (const c of cleanups.reverse()) await c();
    throw err;
  }

  const root = opts.root ?? ROOT;
  const ownRelease = root === ROOT;
  const child = spawn(process.execPath, [...entryOf(root), role, ...(opts.args ?? [])], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const errLines: string[] = [];
  collectLines(child.stderr, errLines);
  const exited = exitOf(child);

  let stopping: Promise<number | null> | undefined;
  const system: RunningSystem = {
    gatewayUrl: '',
    internalUrl: '',
    child,
    dataDir,
    env,
    logs: () => (child as ChildProcess & { lines?: string[] }).lines ?? [],
    stderr: () => errLines,
    stop: (signal: NodeJS.Signals = 'SIGTERM') =>
      (stopping ??= (async () => {
        try {
          if (child.exitCode === null && child.signalCode === null) {
            // A second SIGTERM would cut a drain short (the handler is installed once): send it once.
            if (!child.killed || signal === 'SIGKILL') child.kill(signal);
            const timer = setTimeout(() => child.kill('SIGKILL'), 20000);
            await exited;
            clearTimeout(timer);
          }
          return child.exitCode;
        } finally {
          running.delete(system);
          for (const c of cleanups.reverse()) {
            try {
              await c();
            } catch {
              // cleanup is best effort
            }
          }
        }
      })()),
  };
  running.add(system);

  let line: string;
  try {
    // The `listening` line (it carries the URL). The default wait ends before Jest's
    // 60 s hook time-out, so the output is reported.
    line = await waitForLine(child, ownRelease ? eventPattern('process.listening') : PREVIOUS_RELEASE.listening, opts.timeoutMs ?? 50000);
  } catch (err) {
    await system.stop('SIGKILL');
    const stderr = errLines.length ? `\nstderr:\n${errLines.slice(-20).join('\n')}` : '';
    throw new Error(`${role}: ${(err as Error).message}${stderr}`, { cause: err });
  }
  const url = (parseLine(line)?.url as string | undefined) ?? /https?:\/\/[^\s"]+/.exec(line)?.[0] ?? '';
  const bound = ownRelease ? firstLogEvent(system.logs(), 'rpc.server.bound') : parseLine(system.logs().find((l) => PREVIOUS_RELEASE.bound.test(l)));
  const internalPort = bound?.port;
  const internalTls = bound?.tls === true;
  system.internalUrl = typeof internalPort === 'number' ? `${internalTls ? 'https' : 'http'}://127.0.0.1:${internalPort}` : '';
  system.gatewayUrl = (ownRelease ? /"internal_only":true/ : PREVIOUS_RELEASE.internalOnly).test(line) ? '' : url;
  return system;
}

/** Parses the JSON log lines of a system (non-JSON lines are skipped). */
export function jsonLogs(lines: string[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const l of lines) {
    try {
      const v = JSON.parse(l) as unknown;
      if (v && typeof v === 'object') out.push(v as Record<string, unknown>);
    } catch {
      // not a log line
    }
  }
  return out;
}

export interface RunResult {
  /** Exit code (null when killed by a signal, e.g. after the time-out). */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a short-lived command to completion (stdio fully read), from the repository
 * root unless `options.cwd` says otherwise (`uid`/`gid`: as another user, when root);
 * SIGKILLed after `timeoutMs`.
 */
export function runCommand(
  command: string,
  args: string[],
  env: Record<string, string | undefined>,
  timeoutMs = 60000,
  options: { cwd?: string; uid?: number; gid?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, ...options, env: env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    // 'close' comes after 'exit' and after both pipes ended: nothing printed is lost.
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Runs `node dist/psync.cjs …args` to completion. */
export function runMain(args: string[], env: Record<string, string | undefined>, timeoutMs = 60000): Promise<RunResult> {
  return runCommand(process.execPath, [SHIPPED_MAIN, ...args], env, timeoutMs);
}

/** Non-empty lines of `text`. */
export function linesOf(text: string): string[] {
  return text.split('\n').filter((l) => l.trim() !== '');
}
