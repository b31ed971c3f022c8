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
export function binDir(): string | undefined {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : undefined;
}

/** The ids of the `postgres` OS user, if it exists. */
export function postgresUser(): { uid: number; gid: number } | undefined {
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

const clusters = new Set<() => void>();
// Last resort: no private server outlives the Jest worker.
process.once('exit', () => {
  for (const kill of clusters) kill();
});

/** Creates a cluster in a fresh temporary directory and starts it on a free port. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const why = privatePostgresUnavailable();
  if (why) throw new Error(`cannot start a private PostgreSQL: ${why}`);
  const bin = binDir()!;
  const owner = postgresUser()!;
  const asPostgres = process.getuid?.() === 0;
  const command = (tool: string, args: string[]): [string, string[]] => (asPostgres ? ['runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]] : [join(bin, tool), args]);
  const pg = async (tool: string, args: string[]) => {
    const [file, argv] = command(tool, args);
    return run(file, argv, { timeout: 60_000 });
  };

  // Under /tmp itself: the socket path must stay short (sun_path is ~107 bytes).
  const dir = mkdtempSync('/tmp/psync-pg-');
  if (asPostgres) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  const port = await freePort();
  await pg('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);

  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  let running = false;
  const killNow = () => {
    if (!running) return;
    const [file, argv] = command('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    try {
      execFileSync(file, argv, { stdio: 'ignore', timeout: 20_000 });
    } catch {
      // already gone
    }
  };
  clusters.add(killNow);

  const cluster: PrivatePostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async start() {
      await pg('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'server.log'), '-w', '-t', '60', 'start']);
      running = true;
    },
    async stop(mode = 'immediate') {
      await pg('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
      running = false;
    },
    async destroy() {
      killNow();
      running = false;
      clusters.delete(killNow);
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
