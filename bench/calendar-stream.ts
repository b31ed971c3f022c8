/**
 * WatchEvents lag benchmark, on a real PostgreSQL:
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test [NATS_URL=nats://127.0.0.1:4222] npm run bench:calendar-stream
 *
 * Starts the whole system (`main.ts all`) on a scratch database created on
 * DATABASE_URL's server (dropped afterwards), opens one WatchEvents stream (gRPC, no
 * filter) and pushes blocks with `CalendarService.PutBlock` at a fixed rate
 * (BENCH_RATE per second, default 200; open loop: a push starts every 1/rate s
 * whether or not the previous one answered), fresh uids over 20 listings, for
 * BENCH_SECONDS (default 15) in each phase:
 *   1. nothing else running;
 *   2. a foreign write transaction open in ANOTHER database of the same server: it
 *      inserts a row and stays open for FOREIGN_HOLD_MS (5,000), then commits, again
 *      and again for the whole phase (the issue's reproduction);
 *   3. the same in another schema of the calendar's own database;
 *   4. a long read-only transaction (repeatable read, a snapshot held) on the
 *      calendar's database.
 * Lag of an event = when the stream delivered it − when its PutBlock answered (the
 * writer knows it committed); negative values (the stream was faster than the answer)
 * count as 0. Prints p50, p99 and max per phase, plus the pushes' own latency.
 */
import { createBenchDatabase, startBenchSystem } from './support/bench-system';
import { ms, openLagProbe, quantile, sleep } from './support/stream-lag';
import { cpus, loadavg, totalmem } from 'node:os';
import { createSql, type Sql } from '../services/kit/db';
import { Environment } from '../gen/psync/common/v1/environment_pb';

const SECONDS = Number(process.env.BENCH_SECONDS ?? '15');
const RATE = Number(process.env.BENCH_RATE ?? '200');
const FOREIGN_HOLD_MS = Number(process.env.FOREIGN_HOLD_MS ?? '5000');
const LISTINGS = 20;

/**
 * Something open beside the calendar for a phase: `run` keeps it going until `stop`
 * resolves. Each transaction is reserved on its own connection.
 */
type Background = (stop: Promise<void>) => Promise<void>;

/** A write transaction on `sql` (insert into `table`), open for FOREIGN_HOLD_MS, committed, again until stopped. */
function writeTransactions(sql: Sql, table: string): Background {
  return async (stop) => {
    let stopped = false;
    void stop.then(() => (stopped = true));
    while (!stopped) {
      await sql.begin(async (tx) => {
        await tx.unsafe(`insert into ${table} (at) values (now())`);
        await Promise.race([sleep(FOREIGN_HOLD_MS), stop]);
      });
    }
  };
}

/** A read-only repeatable-read transaction holding its snapshot until stopped. */
function readOnlyTransaction(sql: Sql): Background {
  return async (stop) => {
    await sql.begin('isolation level repeatable read read only', async (tx) => {
      await tx`select count(*) from calendar.events`;
      await stop;
    });
  };
}

async function main(): Promise<void> {
  const loadStart = loadavg();
  const db = await createBenchDatabase();
  const foreignDb = await createBenchDatabase('psync_bench_foreign');
  const system = await startBenchSystem(db.url, {}, 3);
  const { identity, catalog, sql } = system;
  const foreign = createSql(foreignDb.url, { max: 2 });
  const out: string[] = [];
  let probe: ReturnType<typeof openLagProbe> | undefined;
  try {
    await foreign`create table bench_rows (at timestamptz)`;
    await sql`create schema bench_other`;
    await sql`create table bench_other.bench_rows (at timestamptz)`;
    const ws = (await identity.createWorkspace({ name: 'bench-stream', environment: Environment.SANDBOX })).workspace!.workspaceId;
    const listings: string[] = [];
    for (let i = 0; i < LISTINGS; i++) listings.push((await catalog.createListing({ workspaceId: ws })).listing!.listingId);

    probe = openLagProbe(system, ws, listings);

    async function phase(name: string, label: string, background?: Background): Promise<void> {
      let release!: () => void;
      const stop = new Promise<void>((r) => (release = r));
      const bg = background?.(stop);
      if (background) await sleep(300); // the foreign transaction is open before the first push
      const r = await probe!.run(name, RATE, SECONDS);
      release();
      await bg;
      const { lags, latency } = r;
      out.push(
        `| ${label} | ${r.events} | ${ms(quantile(lags, 0.5))} ms | ${ms(quantile(lags, 0.99))} ms | ${ms(lags[lags.length - 1] ?? NaN)} ms | ${ms(quantile(latency, 0.5))} / ${ms(quantile(latency, 0.99))} ms | ${r.lost} |`,
      );
    }

    // Warm-up: connections, plans, the listing cache.
    await probe.run('warm', RATE, 3);
    await phase('quiet', 'nothing else open');
    await phase('otherdb', `write transaction open in another database (${FOREIGN_HOLD_MS / 1000} s each, back to back)`, writeTransactions(foreign, 'bench_rows'));
    await phase(
      'otherschema',
      `write transaction open in another schema of the calendar's database (${FOREIGN_HOLD_MS / 1000} s each)`,
      writeTransactions(sql, 'bench_other.bench_rows'),
    );
    await phase('readonly', "read-only repeatable-read transaction open on the calendar's database", readOnlyTransaction(sql));
    await probe.close();

    const [pg] = await sql<{ v: string }[]>`select current_setting('server_version') as v`;
    out.unshift(
      `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; PostgreSQL ${pg?.v}; bus ${process.env.NATS_URL ? 'NATS JetStream' : 'in-process'}; everything on this one machine; load average at the start ${loadStart.map((l) => l.toFixed(2)).join(' ')}, at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} (the machine is shared).`,
      `Command: DATABASE_URL=${process.env.DATABASE_URL!.replace(/\/\/[^@]*@/, '//…@')} ${process.env.NATS_URL ? 'NATS_URL=… ' : ''}npm run bench:calendar-stream (BENCH_RATE=${RATE}, BENCH_SECONDS=${SECONDS}, FOREIGN_HOLD_MS=${FOREIGN_HOLD_MS})`,
      '',
      '| while the pushes run | events | lag p50 | lag p99 | lag max | PutBlock p50 / p99 | lost or failed |',
      '|---|---:|---:|---:|---:|---:|---:|',
    );
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    await probe?.close();
    await foreign.end({ timeout: 5 });
    await system.stop();
    await db.drop();
    await foreignDb.drop();
  }
}

main().catch((err) => {
  process.stderr.write(`bench:calendar-stream: ${err?.stack ?? err}\n`);
  process.exit(1);
});
