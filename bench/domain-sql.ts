/**
 * The domain rules that run inside PostgreSQL, before and after they were reduced to
 * what must run there (docs/performance.md "Domain rules in SQL: before and after"):
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:domain-sql
 *
 * Two scratch databases on DATABASE_URL's server (dropped afterwards), migrated two ways:
 *   before: kit migrations up to 0003, calendar up to 0007 (put_block builds each
 *           CalendarChanged's protobuf bytes in PL/pgSQL), identity up to 0004
 *           (authorize_batch counts with its own code; the token bucket's statement
 *           below is the one queries.ts ran then);
 *   after:  a new schema from the tree (its baselines): put_block writes a jsonb body through the one outbox
 *           writer (calendar 0008, kit 0004) and services/calendar/event-codec.ts
 *           encodes it when the relay publishes it; both counters count through
 *           identity.count_requests (identity 0005).
 * In alternating rounds (BENCH_ROUNDS, default 3), each for BENCH_SECONDS (10) with
 * BENCH_CONNECTIONS (16) sessions:
 *   - block pushes: fresh blocks (1–30 nights over two years, 50 listings), one
 *     `select * from calendar.put_block(...)` each, as PutBlock runs it;
 *   - Authorize batches: `authorizeBatch` of 16 requests of one key (what identity's
 *     batcher sends under load), counted;
 *   - token exchanges: one counted request of one key per statement (`countRequest`);
 * reporting calls per second, p50 / p99 and the CPU of this database's PostgreSQL
 * backends per call (from /proc: PostgreSQL must run on this machine). Then what the
 * relay does per event in Node (nothing for an encoded row, `encodeOutboxRow` for a
 * plain one; CPU time) and the stored size of an event.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { calendarModule } from '../services/calendar/module';
import { encodeOutboxRow } from '../services/calendar/event-codec';
import { mintApiKey } from '../services/identity/api-keys';
import { identityModule } from '../services/identity/module';
import { authorizeBatch, countRequest, insertKey, insertWorkspace, type AuthorizeInput } from '../services/identity/queries';
import { createSql, type Sql } from '../services/kit/db';
import { runMigrations } from '../services/kit/db';
import { KIT_MIGRATIONS, type MigrationSource } from '../services/kit/db';
import type { OutboxRow } from '../services/kit/events';
import { createBenchDatabase } from './support/bench-system';
import { cpuMsOf } from './support/proc-cpu';
import { benchName } from './support/results';
import { historySource } from '../test/support/migration-history';

const SECONDS = Number(process.env.BENCH_SECONDS ?? '10');
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? '16');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? '3');
const LISTINGS = 50;
const BATCH = 16;
/** High enough never to be reached: every request is counted. */
const LIMIT = 1_000_000_000;
const WS = '6f1c2a8e-0000-4000-8000-0000000000b1';

type Variant = 'before' | 'after';
type Workload = 'push' | 'authorize' | 'token';
const WORKLOADS: Record<Workload, string> = {
  push: '`put_block` (one block push)',
  authorize: `\`authorize_batch\` (${BATCH} requests of one key)`,
  token: 'token exchange count (one request)',
};

/**
 * The landed files of `source` up to `last`, as a database migrated before a later file
 * had them (they stay in the tree as history; a new schema runs the baseline instead).
 */
const upTo = (root: string, source: MigrationSource, last: string): MigrationSource => historySource(root, source, { last });

const day = (n: number) => new Date(Date.UTC(2030, 0, 1) + n * 86_400_000).toISOString().slice(0, 10);

/** CPU (ms) used so far by every PostgreSQL backend of this database. */
async function backendsCpu(sql: Sql): Promise<Map<number, number>> {
  const rows = await sql<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database()`;
  return new Map(rows.map((r) => [r.pid, cpuMsOf(r.pid)]));
}

/** The token bucket's statement before identity 0005 (queries.ts countRequest then), for the `before` database. */
function countRequestBefore(sql: Sql, keyId: string) {
  return sql`
    with clock as (
      select now() as now, date_bin(interval '3600 seconds', now(), timestamptz 'epoch') as window_start
    ), counted as (
      insert into identity.rate_counters as c (key_id, bucket, window_start, count)
      select ${keyId}, 'token', clock.window_start, 1 from clock
      on conflict (key_id, bucket, window_start) do update set count = c.count + 1 where c.count < ${LIMIT}
      returning c.count
    )
    select
      (select count from counted) as counted,
      coalesce((
        select r.count from identity.rate_counters r, clock
        where r.key_id = ${keyId} and r.bucket = 'token' and r.window_start = clock.window_start
      ), 0) as previous,
      extract(epoch from (select now from clock))::float8 as now_epoch`;
}

interface Run {
  variant: Variant;
  workload: Workload;
  calls: number;
  perSecond: number;
  p50: number;
  p99: number;
  pgCpuPerCall: number;
}

interface Target {
  variant: Variant;
  sql: Sql;
  /** One API key per session (its own counter row: sessions do not queue on one lock). */
  keys: { keyId: string; workspaceId: string }[];
}

async function round(t: Target, workload: Workload, r: number): Promise<Run> {
  const sql = t.sql;
  // Every session opened (and its backend known) before the clock starts.
  await Promise.all(Array.from({ length: CONNECTIONS }, () => sql`select 1`));
  const before = await backendsCpu(sql);
  const latencies: number[] = [];
  const end = Date.now() + SECONDS * 1000;
  let n = 0;
  const headers = sql.json({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
  const call = async (c: number): Promise<void> => {
    const key = t.keys[c]!;
    if (workload === 'push') {
      const start = Math.floor(Math.random() * 700);
      const nights = 1 + Math.floor(Math.random() * 30);
      const uid = `r${r}-c${c}-${n++}-${randomBytes(3).toString('hex')}`;
      await sql`select * from calendar.put_block(${WS}, ${uid}, ${`lst_${n % LISTINGS}`}, ${day(start)}::date, ${day(start + nights)}::date,
                                                 'reserved', ${new Date()}, ${headers})`;
    } else if (workload === 'authorize') {
      const items: AuthorizeInput[] = Array.from({ length: BATCH }, () => ({
        keyId: key.keyId,
        tokenWorkspaceId: key.workspaceId,
        addressedWorkspaceId: key.workspaceId,
        count: true,
      }));
      await authorizeBatch(sql, items, LIMIT);
    } else if (t.variant === 'after') {
      await countRequest(sql, { keyId: key.keyId, bucket: 'token', limit: LIMIT });
    } else {
      await countRequestBefore(sql, key.keyId);
    }
  };
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, c) => {
      while (Date.now() < end) {
        const t0 = performance.now();
        await call(c);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const after = await backendsCpu(sql);
  let used = 0;
  for (const [pid, ms] of after) used += ms - (before.get(pid) ?? ms);
  latencies.sort((a, b) => a - b);
  return {
    variant: t.variant,
    workload,
    calls: latencies.length,
    perSecond: latencies.length / SECONDS,
    p50: latencies[Math.floor(latencies.length * 0.5)]!,
    p99: latencies[Math.floor(latencies.length * 0.99)]!,
    pgCpuPerCall: used / latencies.length,
  };
}

/** Node's work per event when the relay publishes the outbox (CPU µs per row) and the rows' stored size. */
async function relaySide(sql: Sql): Promise<{ encodeUs: number; bytes: number; rows: number }> {
  const [plain] = await sql<{ yes: boolean }[]>`
    select exists (select 1 from information_schema.columns where table_schema = 'calendar' and table_name = 'outbox' and column_name = 'body') as yes`;
  const body = plain!.yes ? sql`body` : sql`null::jsonb`;
  const rows = await sql<OutboxRow[]>`select id::text, subject, data, ${body} as body, headers from calendar.outbox order by seq limit 20000`;
  const [size] = await sql<{ bytes: number }[]>`select avg(coalesce(octet_length(data), pg_column_size(${body})))::float8 as bytes from calendar.outbox`;
  const repeat = 5;
  for (const row of rows) encodeOutboxRow(row); // warm-up (JIT)
  // CPU time, not wall time: the machine is shared.
  const t0 = process.cpuUsage();
  for (let i = 0; i < repeat; i++) for (const row of rows) encodeOutboxRow(row);
  const used = process.cpuUsage(t0);
  return { encodeUs: plain!.yes ? (used.user + used.system) / (repeat * rows.length) : 0, bytes: size!.bytes, rows: rows.length };
}

async function prepare(t: Target, sources: MigrationSource[][]): Promise<void> {
  await runMigrations(t.sql, { schema: 'calendar', sources: sources[0]! });
  await runMigrations(t.sql, { schema: 'identity', sources: sources[1]! });
  for (let c = 0; c < CONNECTIONS; c++) {
    const ws = await insertWorkspace(t.sql, { name: `bench ${c}`, environment: 'sandbox' });
    const { keyId, secretHash } = mintApiKey();
    await insertKey(t.sql, { keyId, workspaceId: ws.workspace_id, secretHash });
    t.keys.push({ keyId, workspaceId: ws.workspace_id });
  }
  // Two seconds of each workload, not reported: plans cached, the first pages in memory.
  for (const w of Object.keys(WORKLOADS) as Workload[]) await warm(t, w);
}

async function warm(t: Target, w: Workload): Promise<void> {
  const end = Date.now() + 2000;
  let i = 0;
  while (Date.now() < end) {
    const key = t.keys[0]!;
    if (w === 'push') {
      await t.sql`select * from calendar.put_block(${WS}, ${`warm-${i}`}, ${`lst_${i % LISTINGS}`}, ${day(i % 700)}::date, ${day((i % 700) + 1)}::date,
                                                   'reserved', ${new Date()}, '{}'::jsonb)`;
    } else if (w === 'authorize') {
      await authorizeBatch(t.sql, [{ keyId: key.keyId, tokenWorkspaceId: key.workspaceId, addressedWorkspaceId: key.workspaceId, count: true }], LIMIT);
    } else if (t.variant === 'after') {
      await countRequest(t.sql, { keyId: key.keyId, bucket: 'token', limit: LIMIT });
    } else {
      await countRequestBefore(t.sql, key.keyId);
    }
    i++;
  }
}

async function main(): Promise<void> {
  benchName('domain-sql');
  const fixtures = mkdtempSync(join(tmpdir(), 'psync-bench-domain-sql-'));
  const beforeRoot = join(fixtures, 'calendar');
  const identityRoot = join(fixtures, 'identity');
  mkdirSync(beforeRoot);
  mkdirSync(identityRoot);
  const sources: Record<Variant, MigrationSource[][]> = {
    before: [
      [upTo(beforeRoot, KIT_MIGRATIONS, '0003_processed_events_age.sql'), upTo(beforeRoot, calendarModule.migrations, '0007_idempotency_keys.sql')],
      [upTo(identityRoot, KIT_MIGRATIONS, '0003_processed_events_age.sql'), upTo(identityRoot, identityModule.migrations, '0004_authorize_batch_insert_first.sql')],
    ],
    after: [
      [KIT_MIGRATIONS, calendarModule.migrations],
      [KIT_MIGRATIONS, identityModule.migrations],
    ],
  };
  const dbs = { before: await createBenchDatabase('psync_bench_before'), after: await createBenchDatabase('psync_bench_after') };
  const targets: Record<Variant, Target> = {
    before: { variant: 'before', sql: createSql(dbs.before.url, { max: CONNECTIONS }), keys: [] },
    after: { variant: 'after', sql: createSql(dbs.after.url, { max: CONNECTIONS }), keys: [] },
  };
  const loadStart = loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  const runs: Run[] = [];
  try {
    for (const v of ['before', 'after'] as const) await prepare(targets[v], sources[v]);
    for (let r = 0; r < ROUNDS; r++) {
      const order: Variant[] = r % 2 === 0 ? ['before', 'after'] : ['after', 'before'];
      for (const w of Object.keys(WORKLOADS) as Workload[]) {
        for (const v of order) {
          const run = await round(targets[v], w, r);
          runs.push(run);
          console.error(
            `${w} ${v} round ${r + 1}: ${run.perSecond.toFixed(0)}/s, p50 ${run.p50.toFixed(1)} ms, p99 ${run.p99.toFixed(1)} ms, ` +
              `PostgreSQL CPU ${run.pgCpuPerCall.toFixed(3)} ms per call, load ${loadavg()[0]!.toFixed(1)}`,
          );
        }
      }
    }
    const relay = { before: await relaySide(targets.before.sql), after: await relaySide(targets.after.sql) };
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const of = (v: Variant, w: Workload) => runs.filter((r) => r.variant === v && r.workload === w);
    const cell = (v: Variant, w: Workload, f: (r: Run) => number, digits: number) =>
      `**${median(of(v, w).map(f)).toFixed(digits)}** (${of(v, w)
        .map((r) => f(r).toFixed(digits))
        .join(', ')})`;
    const [row] = await targets.after.sql<{ v: string }[]>`select version() as v`;
    const version = row!.v;
    const out: string[] = [];
    out.push(
      `Machine: ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; ${version.split(' on ')[0]}; ` +
        `load average at the start ${loadStart}, at the end ${loadavg()
          .map((x) => x.toFixed(2))
          .join(' ')} (the machine is shared).`,
    );
    out.push(
      `Command: DATABASE_URL=… npm run bench:domain-sql (BENCH_SECONDS=${SECONDS}, BENCH_CONNECTIONS=${CONNECTIONS}, BENCH_ROUNDS=${ROUNDS}); median of the rounds in bold, each round in brackets.`,
    );
    out.push('');
    out.push('| | before | after |');
    out.push('|---|---|---|');
    for (const w of Object.keys(WORKLOADS) as Workload[]) {
      out.push(`| ${WORKLOADS[w]}: calls per second, ${CONNECTIONS} sessions | ${cell('before', w, (r) => r.perSecond, 0)} | ${cell('after', w, (r) => r.perSecond, 0)} |`);
      out.push(`| ${WORKLOADS[w]}: PostgreSQL CPU per call, ms | ${cell('before', w, (r) => r.pgCpuPerCall, 3)} | ${cell('after', w, (r) => r.pgCpuPerCall, 3)} |`);
      out.push(
        `| ${WORKLOADS[w]}: p50 / p99, ms (median round) | ${median(of('before', w).map((r) => r.p50)).toFixed(1)} / ${median(of('before', w).map((r) => r.p99)).toFixed(1)} | ` +
          `${median(of('after', w).map((r) => r.p50)).toFixed(1)} / ${median(of('after', w).map((r) => r.p99)).toFixed(1)} |`,
      );
    }
    out.push(
      `| relay: Node CPU per calendar event (encoding), µs | 0 (bytes passed on) | ${relay.after.encodeUs.toFixed(1)} (\`encodeOutboxRow\`, ${relay.after.rows} rows × 5) |`,
    );
    out.push(`| stored size of a calendar event in the outbox, bytes | ${relay.before.bytes.toFixed(0)} (protobuf) | ${relay.after.bytes.toFixed(0)} (jsonb) |`);
    console.log(out.join('\n'));
  } finally {
    await Promise.all(Object.values(targets).map((t) => t.sql.end({ timeout: 5 })));
    await Promise.all(Object.values(dbs).map((d) => d.drop()));
    rmSync(fixtures, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
