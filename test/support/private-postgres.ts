/**
 * A private PostgreSQL cluster for fault tests: `initdb` and `pg_ctl` run as the `postgres` OS user into a
 * temporary directory it owns, the server listens on a free loopback port (its socket
 * in that directory), and a test may stop it like a crash (`pg_ctl -m immediate`)
 * and start it again. The machine's shared cluster is never touched.
 *
 * Needs the PostgreSQL server binaries (/usr/lib/postgresql/<version>/bin, or PG_BIN)
 * and either root (commands run through `runuser -u postgres --`) or running as
 * `postgres`: `privatePostgresUnavailable()` says why not otherwise, so a test can skip.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './system';

const run = promisify(execFile);

/** The directory holding initdb/pg_ctl: PG_BIN, else the newest /usr/lib/postgresql/<v>/bin. */
function binDir(): string | undefined {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : undefined;
}

/** The ids of the `postgres` OS user, if it exists. */
function postgresUser(): { uid: number; gid: number } | undefined {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    return undefined;
  }
}

/** Why a private cluster cannot be started here, or undefined when it can. */
export function privatePostgresUnavailable(): string | undefined {
  if (!binDir()) return 'no PostgreSQL server binaries (/usr/lib/postgresql/<v>/bin or PG_BIN)';
  if (!postgresUser()) return 'no postgres OS user';
  if (process.getuid?.() !== 0 && userInfo().username !== 'postgres') return 'needs root (runuser) or the postgres user';
  return undefined;
}

/** `tool` of the server binaries with `args`, run as the postgres OS user when we are root. */
export function postgresCommand(tool: string, args: string[]): [string, string[]] {
  const path = join(binDir()!, tool);
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args];
}

/** Runs a server tool (initdb, pg_ctl, pg_basebackup …) as `postgresCommand` says. */
export function runPostgresTool(tool: string, args: string[], timeoutMs = 120_000): Promise<{ stdout: string; stderr: string }> {
  const [file, argv] = postgresCommand(tool, args);
  return run(file, argv, { timeout: timeoutMs });
}

/** Gives `path` to the postgres OS user (when we are root: the server runs as that user). */
export function giveToPostgres(path: string): string {
  const owner = postgresUser();
  if (process.getuid?.() === 0 && owner) chownSync(path, owner.uid, owner.gid);
  return path;
}

/** A fresh directory under /tmp itself (a socket path must stay short: sun_path is ~107 bytes) owned by the postgres user. */
export function privatePostgresDir(prefix: string): string {
  return giveToPostgres(mkdtempSync(`/tmp/${prefix}`));
}

/** Stops the server of data directory `data` at once, ignoring a server already gone (synchronous: usable at exit). */
export function killPostgres(data: string): void {
  const [file, argv] = postgresCommand('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
  try {
    execFileSync(file, argv, { stdio: 'ignore', timeout: 20_000 });
  } catch {
    // already gone
  }
}

const atExit = new Set<() => void>();
// Last resort: no private server outlives the Jest worker.
process.once('exit', () => {
  for (const kill of atExit) kill();
});

/** Registers `kill` to run when the process exits; the returned function unregisters it. */
export function killAtExit(kill: () => void): () => void {
  atExit.add(kill);
  return () => atExit.delete(kill);
}

export interface PrivatePostgres {
  /** postgres:// URL of the cluster's `postgres` database, as its superuser (trust authentication). */
  readonly url: string;
  readonly port: number;
  /** Starts the server (again) and waits until it accepts connections. */
  start(): Promise<void>;
  /** Stops the server; `immediate` (default) is a crash: no checkpoint, clients cut off. */
  stop(mode?: 'immediate' | 'fast'): Promise<void>;
  /** Stops the server if it runs and removes its directory; safe to call twice. */
  destroy(): Promise<void>;
}

/** Creates a cluster in a fresh temporary directory and starts it on a free port. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const why = privatePostgresUnavailable();
  if (why) throw new Error(`cannot start a private PostgreSQL: ${why}`);
  const pg = (tool: string, args: string[]) => runPostgresTool(tool, args, 60_000);

  const dir = privatePostgresDir('psync-pg-');
  const data = join(dir, 'data');
  const port = await freePort();
  await pg('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);

  return startPostgresOn(dir, data, port, '-c fsync=off');
}

/**
 * Starts the server of the data directory `data` (made by initdb, a base backup or a
 * restore) in `dir` on `port` with `settings` (`-c name=value …`), and answers it as a
 * PrivatePostgres whose destroy() removes `dir`.
 */
export async function startPostgresOn(dir: string, data: string, port: number, settings: string): Promise<PrivatePostgres> {
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200 ${settings}`;
  let running = false;
  const killNow = () => {
    if (running) killPostgres(data);
  };
  const forget = killAtExit(killNow);

  const cluster: PrivatePostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async start() {
      await runPostgresTool('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'server.log'), '-w', '-t', '120', 'start']);
      running = true;
    },
    async stop(mode = 'immediate') {
      await runPostgresTool('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
      running = false;
    },
    async destroy() {
      killNow();
      running = false;
      forget();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await cluster.start();
  } catch (err) {
    await cluster.destroy();
    throw err;
  }
  return cluster;
}
