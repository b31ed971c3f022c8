/**
 * The kit's worker primitive against PostgreSQL job-queue libraries, on the work our
 * background loops do: how many queued items one process gets through, and how soon an
 * item committed by a transaction is picked up.
 *
 *   mkdir -p /tmp/queue-libs && npm install --prefix /tmp/queue-libs pg-boss@12.38.0 graphile-worker@0.18.0
 *   QUEUE_LIBS=/tmp/queue-libs/node_modules DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:worker-queues
 *
 * The libraries are not dependencies of the project (the comparison decided against
 * them, docs/decisions.md): install them anywhere and point QUEUE_LIBS at that
 * node_modules. Without DATABASE_URL only the embedded rows run (PGlite).
 *
 * Contenders, each on a scratch database of its own:
 * - **kit**: `OutboxRelay` (kit Worker: batch claim by the kit's `lockRows`, one
 *   statement to mark the batch) into an in-memory sink — the outbox path itself;
 *   after each enqueueing commit the relay is nudged, as the services do;
 * - **pg-boss** 12: `send` per item, `work` with batchSize 100 × 1 and 500 × 4
 *   (localConcurrency), LISTEN/NOTIFY on (`useListenNotify`, queue `notify: true`,
 *   polling 0.5 s, its minimum); embedded: its PGlite adapter on an in-process PGlite;
 * - **graphile-worker** 0.18: `add_job` per item in SQL, `run` with concurrency 10,
 *   without and with its local queue (500, completions batched); LISTEN/NOTIFY built
 *   in; it needs a pool of real connections, so no embedded row.
 * Measured: BENCH_JOBS (20,000) items queued up front in one statement, then drained by
 * one process with a no-op handler (items/s); and BENCH_TRICKLE (300) items committed
 * one transaction each at 50/s (pickup latency p50/p99 = handler start − commit).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BusEvent, EventBus } from '../services/kit/events';
import { createSql, type Sql } from '../services/kit/db';
import { runMigrations } from '../services/kit/db';
import { KIT_MIGRATIONS } from '../services/kit/db';
import { appendToOutbox } from '../services/kit/events';
import { OutboxRelay } from '../services/kit/events';
import { startTestDatabase } from '../test/support/database';
import { testLogger } from '../test/support/bus';
import { createBenchDatabase } from './support/bench-system';
import { ms, quantile, sleep } from './support/stream-lag';
import { benchName } from './support/results';

const JOBS = Number(process.env.BENCH_JOBS ?? '20000');
const TRICKLE = Number(process.env.BENCH_TRICKLE ?? '300');
const TRICKLE_RATE = 50;
const LIBS = process.env.QUEUE_LIBS;

interface Contender {
  /** Queues `n` items in one statement. */
  fill(n: number): Promise<void>;
  /** Commits one item in its own transaction (its number `i`). */
  enqueue(i: number): Promise<void>;
  /** Starts consuming: `seen(i)` for every item (the bulk ones have i < 0). */
  start(seen: (i: number) => void): Promise<void>;
  stop(): Promise<void>;
}

async function measure(name: string, make: () => Promise<Contender>): Promise<string> {
  const c = await make();
  try {
    let handled = 0;
    const started = new Map<number, number>();
    const committed = new Map<number, number>();
    await c.fill(JOBS);
    const t0 = performance.now();
    await c.start((i) => {
      handled++;
      if (i >= 0 && !started.has(i)) started.set(i, performance.now());
    });
    const deadline = performance.now() + 300_000;
    while (handled < JOBS && performance.now() < deadline) await sleep(5);
    const drainS = (performance.now() - t0) / 1000;
    const rate = handled >= JOBS ? `**${Math.round(JOBS / drainS).toLocaleString('en')}/s**` : `${handled} of ${JOBS} in 300 s`;
    // The trickle: one transaction per item, at TRICKLE_RATE per second.
    const tt = performance.now();
    for (let i = 0; i < TRICKLE; i++) {
      const wait = tt + (i * 1000) / TRICKLE_RATE - performance.now();
      if (wait > 1) await sleep(wait);
      await c.enqueue(i);
      committed.set(i, performance.now());
    }
    const until = performance.now() + 30_000;
    while (started.size < TRICKLE && performance.now() < until) await sleep(5);
    const lat = [...committed]
      .filter(([i]) => started.has(i))
      .map(([i, t]) => Math.max(0, started.get(i)! - t))
      .sort((a, b) => a - b);
    const row = `| ${name} | ${rate} | ${ms(quantile(lat, 0.5))} ms | ${ms(quantile(lat, 0.99))} ms | ${TRICKLE - lat.length} |`;
    process.stderr.write(`${row}\n`);
    return row;
  } finally {
    await c.stop();
  }
}

/** The kit: OutboxRelay into a sink that records each event's number (its subject's last token). */
function kit(sql: Sql): Contender {
  const schema = 'kitqueue';
  let seen: (i: number) => void = () => undefined;
  const sink: EventBus = {
    kind: 'memory',
    async publish(e: BusEvent) {
      seen(Number(e.subject.slice(e.subject.lastIndexOf('.') + 1)));
    },
    async subscribe() {
      throw new Error('not used');
    },
    async forgetConsumer() {
      return false;
    },
    async ping() {},
    async close() {},
  };
  const relay = new OutboxRelay({ sql, schema, bus: sink, log: testLogger() });
  return {
    async fill(n) {
      await runMigrations(sql, { schema, sources: [KIT_MIGRATIONS] });
      await sql`
        insert into kitqueue.outbox (id, subject, data, headers)
        select gen_random_uuid(), 'job.-1', '\\x00', jsonb_build_object('workspace_id', (g % 100)::text)
        from generate_series(1, ${n}::int) g`;
    },
    async enqueue(i) {
      await sql.begin((tx) => appendToOutbox(tx, schema, { subject: `job.${i}`, data: new Uint8Array(1), headers: { workspace_id: String(i % 100) } }));
      relay.nudge();
    },
    async start(s) {
      seen = s;
      relay.start();
    },
    stop: () => relay.stop(),
  };
}

async function libs(): Promise<{ boss?: any; graphile?: any; pglite?: any }> {
  if (!LIBS) return {};
  const load = async (p: string) => import(join(LIBS, p)).catch(() => undefined);
  return {
    boss: await load('pg-boss/dist/index.js'),
    graphile: await load('graphile-worker/dist/index.js'),
    pglite: await import('@electric-sql/pglite'),
  };
}

function pgBoss(mod: any, opts: Record<string, unknown>, work: { batchSize: number; localConcurrency: number }): Contender {
  const boss = new mod.PgBoss({ ...opts, useListenNotify: true, supervise: false, schedule: false });
  boss.on('error', () => undefined);
  const queue = 'bench';
  return {
    async fill(n) {
      await boss.start();
      await boss.createQueue(queue, { notify: true });
      for (let done = 0; done < n; done += 5000) {
        await boss.insert(
          queue,
          Array.from({ length: Math.min(5000, n - done) }, () => ({ data: { i: -1 } })),
        );
      }
    },
    async enqueue(i) {
      await boss.send(queue, { i });
    },
    async start(seen) {
      await boss.work(queue, { ...work, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5 }, async (jobs: { data: { i: number } }[]) => {
        for (const j of jobs) seen(j.data.i);
      });
    },
    async stop() {
      await boss.stop({ graceful: true, wait: true, timeout: 5000 });
    },
  };
}

function graphileWorker(mod: any, url: string, localQueue: number): Contender {
  let runner: any;
  const sql = createSql(url, { max: 2 });
  return {
    async fill(n) {
      const utils = await mod.makeWorkerUtils({ connectionString: url });
      await utils.migrate();
      await utils.release();
      await sql`select graphile_worker.add_job('bench', json_build_object('i', -1)) from generate_series(1, ${n}::int)`;
    },
    async enqueue(i) {
      await sql`select graphile_worker.add_job('bench', json_build_object('i', ${i}::int))`;
    },
    async start(seen) {
      runner = await mod.run({
        connectionString: url,
        concurrency: 10,
        noHandleSignals: true,
        pollInterval: 2000,
        ...(localQueue > 1 ? { preset: { worker: { localQueue: { size: localQueue }, completeJobBatchDelay: 0 } } } : {}),
        logger: new mod.Logger(() => () => undefined),
        taskList: { bench: async (payload: { i: number }) => seen(payload.i) },
      });
    },
    async stop() {
      await runner?.stop();
      await sql.end({ timeout: 5 });
    },
  };
}

async function main(): Promise<void> {
  benchName('worker-queues');
  // Scratch databases are dropped `with (force)`: a library's pool may still hold an idle
  // connection that the drop terminates; that is not a failure of the benchmark.
  process.on('uncaughtException', (err: Error & { code?: string }) => {
    if (err.code === '57P01') return;
    process.stderr.write(`bench worker-queues: ${err.stack ?? err}\n`);
    process.exit(1);
  });
  const loadStart = loadavg();
  const { boss, graphile, pglite } = await libs();
  const rows: string[] = [];
  const real = process.env.DATABASE_URL;
  if (real) {
    {
      const db = await createBenchDatabase('psync_queue_kit');
      const sql = createSql(db.url, { max: 4 });
      try {
        rows.push(await measure('kit Worker (OutboxRelay), PostgreSQL', async () => kit(sql)));
      } finally {
        await sql.end({ timeout: 5 });
        await db.drop();
      }
    }
    const one = async (label: string, prefix: string, make: (url: string) => Contender) => {
      const db = await createBenchDatabase(prefix);
      try {
        rows.push(await measure(label, async () => make(db.url)));
      } finally {
        await sleep(500);
        await db.drop();
      }
    };
    if (boss) {
      await one('pg-boss 12.38, PostgreSQL, batch 100 × 1', 'psync_queue_boss', (url) => pgBoss(boss, { connectionString: url, max: 4 }, { batchSize: 100, localConcurrency: 1 }));
      await one('pg-boss 12.38, PostgreSQL, batch 500 × 4', 'psync_queue_boss', (url) => pgBoss(boss, { connectionString: url, max: 8 }, { batchSize: 500, localConcurrency: 4 }));
    }
    if (graphile) {
      await one('graphile-worker 0.18, PostgreSQL, concurrency 10', 'psync_queue_graphile', (url) => graphileWorker(graphile, url, 1));
      await one('graphile-worker 0.18, PostgreSQL, concurrency 10, local queue 500, batched completion', 'psync_queue_graphile', (url) => graphileWorker(graphile, url, 500));
    }
  }
  {
    // Embedded: the kit on the project's PGlite (a child process serving one session, as in tests).
    const saved = process.env.DATABASE_URL;
    delete process.env.DATABASE_URL;
    const db = await startTestDatabase();
    try {
      rows.push(await measure('kit Worker (OutboxRelay), PGlite (one session)', async () => kit(db.sql)));
    } finally {
      await db.stop();
      if (saved) process.env.DATABASE_URL = saved;
    }
  }
  if (boss && pglite) {
    const dir = mkdtempSync(join(tmpdir(), 'psync-boss-'));
    const pg = await pglite.PGlite.create({ dataDir: dir });
    try {
      rows.push(
        await measure('pg-boss 12.38, PGlite in process (its adapter), batch 500 × 4', async () =>
          pgBoss(boss, { db: boss.fromPglite(pg) }, { batchSize: 500, localConcurrency: 4 }),
        ),
      );
    } finally {
      await pg.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  process.stdout.write(
    [
      `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}; Node ${process.version}; load average at the start ${loadStart.map((l) => l.toFixed(2)).join(' ')}, at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} (the machine is shared).`,
      `BENCH_JOBS=${JOBS}, BENCH_TRICKLE=${TRICKLE} at ${TRICKLE_RATE}/s`,
      '',
      '| worker | drain, queued up front | pickup p50 | pickup p99 | not picked up in 30 s |',
      '|---|---:|---:|---:|---:|',
      ...rows,
      '',
    ].join('\n'),
  );
}

main().catch((err) => {
  process.stderr.write(`bench worker-queues: ${err?.stack ?? err}\n`);
  process.exit(1);
});
