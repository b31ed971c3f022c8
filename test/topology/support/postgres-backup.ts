/**
 * Continuous archiving and point-in-time recovery on private PostgreSQL clusters, as
 * docs/operations.md ("Backup and restore") describes them for production:
 *
 * - `startArchivingPostgres()`: a cluster (initdb/pg_ctl as the `postgres` OS user, a
 *   free loopback port, like test/support/private-postgres.ts) with `archive_mode=on`
 *   and an `archive_command` that copies every completed WAL segment into an archive
 *   directory, the way a WAL archiver (pgBackRest, WAL-G, a `cp` to a mounted volume)
 *   ships segments off the server;
 * - `baseBackup()`: `pg_basebackup` (plain format, WAL streamed alongside) while the
 *   cluster serves traffic;
 * - `restoreBackup()`: the base backup copied into a fresh data directory, a new free
 *   port, `recovery.signal` and `restore_command` reading the archive; PostgreSQL replays
 *   the archive to its end (or to `recovery_target_time`) and promotes itself. The point
 *   it reached is `pg_last_xact_replay_timestamp()`: everything committed up to it is
 *   there, everything after it (the WAL not yet archived when the old server was lost)
 *   is the gap.
 *
 * The machine's shared cluster is never touched; every cluster is stopped and its
 * directory removed by `destroy()` (and, as a last resort, when the Jest worker exits).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, statSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { giveToPostgres, privatePostgresDir, privatePostgresUnavailable, runPostgresTool, startPostgresOn } from '../../support/private-postgres';
import { freePort } from '../../support/system';

const run = promisify(execFile);

/** A running cluster of this module. */
export interface Cluster {
  /** postgres:// URL of its `postgres` database as the superuser (trust authentication). */
  readonly url: string;
  readonly port: number;
  /** Stops the server; `immediate` is a crash (no checkpoint, nothing more archived). */
  stop(mode?: 'immediate' | 'fast'): Promise<void>;
  /** Stops the server if it runs and removes its directory; safe to call twice. */
  destroy(): Promise<void>;
}

export interface ArchivingPostgres extends Cluster {
  /** Where completed WAL segments are copied. */
  readonly archiveDir: string;
  /** Takes a base backup with pg_basebackup while the cluster serves. */
  baseBackup(): Promise<BaseBackup>;
  /**
   * Closes the current WAL segment (what `archive_timeout` does on a timer) and waits
   * until the archiver has copied it; resolves with the segment's name.
   */
  archiveNow(): Promise<string>;
}

export interface BaseBackup {
  /** The backup's directory (a plain-format data directory with its WAL). */
  readonly dir: string;
  /** Its size on disk in bytes. */
  readonly bytes: number;
  /** Seconds pg_basebackup took. */
  readonly seconds: number;
}

export interface RestoredPostgres extends Cluster {
  /** The last transaction replayed: the restore point. */
  readonly restoredTo: Date;
  /** Seconds from the start of the copy until the server was promoted and writable. */
  readonly seconds: number;
}

const pg = (tool: string, args: string[], timeout = 120_000) => runPostgresTool(tool, args, timeout);
const ownedTempDir = privatePostgresDir;

function ownedDir(path: string): string {
  mkdirSync(path, { recursive: true });
  return giveToPostgres(path);
}

/** Bytes of the files under `dir`. */
function sizeOf(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const s = statSync(join(dir, name));
    if (s.isFile()) total += s.size;
  }
  return total;
}

/** Runs `fn` with a one-connection client of `url`. */
async function withClient<T>(url: string, fn: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return await fn(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * A fresh cluster with WAL archiving into `<dir>/archive`. `archiveTimeoutSeconds` is
 * PostgreSQL's `archive_timeout` (0: segments are closed only when full or by
 * `archiveNow()`, so a test decides where the archive ends).
 */
export async function startArchivingPostgres(opts: { archiveTimeoutSeconds?: number } = {}): Promise<ArchivingPostgres> {
  const why = privatePostgresUnavailable();
  if (why) throw new Error(`cannot start a private PostgreSQL: ${why}`);
  const dir = ownedTempDir('psync-pgb-');
  const data = join(dir, 'data');
  const archiveDir = ownedDir(join(dir, 'archive'));
  const backups = ownedDir(join(dir, 'backups'));
  await pg('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  // In postgresql.conf, so the base backup carries it (the restore overrides archive_mode).
  appendFileSync(
    join(data, 'postgresql.conf'),
    [
      '',
      'wal_level = replica',
      'archive_mode = on',
      `archive_command = 'test ! -f ${archiveDir}/%f && cp %p ${archiveDir}/%f'`,
      `archive_timeout = ${opts.archiveTimeoutSeconds ?? 0}`,
      '',
    ].join('\n'),
  );
  const cluster = await startPostgresOn(dir, data, await freePort(), '-c fsync=off');
  let backupNo = 0;
  return {
    ...cluster,
    archiveDir,
    async baseBackup() {
      const target = join(backups, `base-${++backupNo}`);
      const started = Date.now();
      await pg('pg_basebackup', ['-h', '127.0.0.1', '-p', String(cluster.port), '-U', 'postgres', '-D', target, '-X', 'stream', '-c', 'fast', '--no-sync'], 300_000);
      return { dir: target, bytes: sizeOf(target), seconds: (Date.now() - started) / 1000 };
    },
    async archiveNow() {
      return withClient(cluster.url, async (sql) => {
        const [switched] = await sql<{ segment: string }[]>`select pg_walfile_name(pg_switch_wal()) as segment`;
        const segment = switched!.segment;
        const deadline = Date.now() + 60_000;
        for (;;) {
          const [s] = await sql<{ last: string | null; failed: string | null }[]>`
            select last_archived_wal as last, last_failed_wal as failed from pg_stat_archiver`;
          // Segment names sort in WAL order (timeline, then position).
          if (s?.last && s.last >= segment) return segment;
          if (Date.now() > deadline) throw new Error(`WAL segment ${segment} not archived after 60 s (last archived ${s?.last}, last failed ${s?.failed})`);
          await new Promise((r) => setTimeout(r, 100));
        }
      });
    },
  };
}

/**
 * Restores `backup` into a fresh data directory on a new free port and replays the WAL
 * of `archiveDir` to its end, or to `targetTime` when given; resolves once the server
 * has promoted itself and accepts writes. Archiving is off on the restored server (a
 * deployment points it at a new archive location and takes a new base backup).
 */
export async function restoreBackup(backup: BaseBackup, archiveDir: string, opts: { targetTime?: Date } = {}): Promise<RestoredPostgres> {
  const started = Date.now();
  const dir = ownedTempDir('psync-pgr-');
  const data = join(dir, 'data');
  await run('cp', ['-a', backup.dir, data]);
  if (process.getuid?.() === 0) await run('chown', ['-R', 'postgres:postgres', data]);
  writeFileSync(join(data, 'recovery.signal'), '');
  appendFileSync(
    join(data, 'postgresql.auto.conf'),
    [
      '',
      `restore_command = 'cp ${archiveDir}/%f %p'`,
      ...(opts.targetTime ? [`recovery_target_time = '${opts.targetTime.toISOString()}'`, `recovery_target_action = 'promote'`] : []),
      '',
    ].join('\n'),
  );
  const cluster = await startPostgresOn(dir, data, await freePort(), '-c fsync=off -c archive_mode=off');
  try {
    const restoredTo = await withClient(cluster.url, async (sql) => {
      const deadline = Date.now() + 180_000;
      for (;;) {
        const [r] = await sql<{ recovering: boolean; replayed: Date | null }[]>`
          select pg_is_in_recovery() as recovering, pg_last_xact_replay_timestamp() as replayed`;
        if (r && !r.recovering) {
          if (!r.replayed) throw new Error('the restored server replayed no transaction');
          return r.replayed;
        }
        if (Date.now() > deadline) throw new Error('the restored server did not finish recovery within 180 s');
        await new Promise((res) => setTimeout(res, 100));
      }
    });
    return { ...cluster, restoredTo, seconds: (Date.now() - started) / 1000 };
  } catch (err) {
    await cluster.destroy();
    throw err;
  }
}
