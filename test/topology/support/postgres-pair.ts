/**
 * A private PostgreSQL primary and a streaming standby on free loopback ports, for the
 * failover tests: `initdb` for the first node, `pg_basebackup -R` for the standby,
 * synchronous replication (`synchronous_standby_names = '*'`, `synchronous_commit = on`:
 * a commit returns once the standby has flushed it, as docs/operations.md "PostgreSQL
 * high availability" recommends). A test promotes a standby (`pg_ctl promote`), crashes
 * a node (`pg_ctl -m immediate`), turns a primary read-only under its open connections
 * (`default_transaction_read_only` + reload, what a demoted primary answers), and
 * rebuilds a crashed node as the new primary's standby. The servers run as the
 * `postgres` OS user (test/support/private-postgres.ts), in one temporary directory;
 * the machine's shared cluster is never touched.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { killAtExit, killPostgres, privatePostgresDir, privatePostgresUnavailable, runPostgresTool } from '../../support/private-postgres';
import { freePort } from '../../support/system';

export interface PgNode {
  readonly name: string;
  readonly port: number;
  /** This node alone, as the superuser. */
  readonly url: string;
}

export interface PostgresPair {
  readonly nodes: readonly [PgNode, PgNode];
  /** Both hosts, `target_session_attrs=read-write`: what the system is given as DATABASE_URL. */
  readonly url: string;
  /** Waits until `primary` reports a synchronous standby streaming from it. */
  waitForSyncStandby(primary: PgNode, timeoutMs?: number): Promise<void>;
  /** `pg_ctl promote -w`: the standby leaves recovery and takes writes. */
  promote(node: PgNode): Promise<void>;
  /** `pg_ctl -m immediate stop`: a crash, clients cut off. */
  crash(node: PgNode): Promise<void>;
  /** `default_transaction_read_only = on` and a reload: open sessions stay, their writes fail with SQLSTATE 25006. */
  makeReadOnly(node: PgNode): Promise<void>;
  /**
   * Replaces a stopped node's data with a base backup of `primary` and starts it as its
   * synchronous standby (what an operator or Patroni does with a failed primary).
   */
  rebuildAsStandby(node: PgNode, primary: PgNode): Promise<void>;
  /** A one-off query on one node. */
  query<T extends Record<string, unknown>>(node: PgNode, text: string): Promise<T[]>;
  /** Stops both servers and removes the directory; safe to call twice. */
  destroy(): Promise<void>;
}

/** Starts a primary and its synchronous standby. */
export async function startPostgresPair(): Promise<PostgresPair> {
  const why = privatePostgresUnavailable();
  if (why) throw new Error(`cannot start a private PostgreSQL: ${why}`);
  const pg = (tool: string, args: string[]) => runPostgresTool(tool, args, 90_000);
  const dir = privatePostgresDir('psync-pgha-');
  const ports = [await freePort(), await freePort()] as const;
  const nodes = [
    { name: 'a', port: ports[0], url: `postgres://postgres@127.0.0.1:${ports[0]}/postgres` },
    { name: 'b', port: ports[1], url: `postgres://postgres@127.0.0.1:${ports[1]}/postgres` },
  ] as const;
  const dataOf = (n: PgNode) => join(dir, n.name);
  const running = new Set<string>();
  // Replication settings on the command line, so a base backup does not copy them.
  const options = (n: PgNode, primary: boolean) =>
    [
      `-p ${n.port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`,
      `-c wal_level=replica -c max_wal_senders=10 -c hot_standby=on -c wal_keep_size=256MB -c cluster_name=node_${n.name}`,
      primary ? `-c synchronous_standby_names=* -c synchronous_commit=on` : '',
    ].join(' ');
  const start = async (n: PgNode, primary: boolean) => {
    await pg('pg_ctl', ['-D', dataOf(n), '-o', options(n, primary), '-l', join(dir, `${n.name}.log`), '-w', '-t', '90', 'start']);
    running.add(n.name);
  };
  const killAll = () => {
    for (const n of nodes) {
      if (!running.has(n.name)) continue;
      killPostgres(dataOf(n));
      running.delete(n.name);
    }
  };
  const forget = killAtExit(killAll);

  const query = async <T extends Record<string, unknown>>(n: PgNode, text: string): Promise<T[]> => {
    const sql = postgres(n.url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
    try {
      return (await sql.unsafe(text)) as unknown as T[];
    } finally {
      await sql.end({ timeout: 2 });
    }
  };

  const baseBackup = async (n: PgNode, from: PgNode) => {
    await pg('pg_basebackup', ['-h', '127.0.0.1', '-p', String(from.port), '-U', 'postgres', '-D', dataOf(n), '-R', '-X', 'stream', '-c', 'fast', '--no-sync']);
    // The source's ALTER SYSTEM settings came along: the standby must not wait for a standby of its own once promoted.
    const auto = join(dataOf(n), 'postgresql.auto.conf');
    writeFileSync(
      auto,
      readFileSync(auto, 'utf8')
        .split('\n')
        .filter((l) => !/^\s*(synchronous_standby_names|default_transaction_read_only)\s*=/.test(l))
        .join('\n'),
    );
  };

  const pair: PostgresPair = {
    nodes,
    url: `postgres://postgres@127.0.0.1:${ports[0]},127.0.0.1:${ports[1]}/postgres?target_session_attrs=read-write`,
    async waitForSyncStandby(primary, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const rows = await query<{ sync_state: string }>(primary, `select sync_state from pg_stat_replication where state = 'streaming'`);
        if (rows.some((r) => r.sync_state === 'sync')) return;
        if (Date.now() > deadline) throw new Error(`no synchronous standby streaming from node ${primary.name} after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 200));
      }
    },
    async promote(n) {
      await pg('pg_ctl', ['-D', dataOf(n), '-w', '-t', '60', 'promote']);
    },
    async crash(n) {
      await pg('pg_ctl', ['-D', dataOf(n), '-m', 'immediate', '-w', 'stop']);
      running.delete(n.name);
    },
    async makeReadOnly(n) {
      await query(n, `alter system set default_transaction_read_only = on`);
      await query(n, `select pg_reload_conf()`);
    },
    async rebuildAsStandby(n, primary) {
      if (running.has(n.name)) throw new Error(`node ${n.name} still runs: crash it first`);
      rmSync(dataOf(n), { recursive: true, force: true });
      await baseBackup(n, primary);
      await start(n, false);
      // The primary now waits for this standby on every commit.
      await query(primary, `alter system set synchronous_standby_names = '*'`);
      await query(primary, `select pg_reload_conf()`);
      await pair.waitForSyncStandby(primary);
    },
    query,
    async destroy() {
      killAll();
      forget();
      rmSync(dir, { recursive: true, force: true });
    },
  };

  try {
    await pg('initdb', ['-D', dataOf(nodes[0]), '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
    await start(nodes[0], true);
    await baseBackup(nodes[1], nodes[0]);
    await start(nodes[1], false);
    await pair.waitForSyncStandby(nodes[0]);
  } catch (err) {
    await pair.destroy();
    throw err;
  }
  return pair;
}
