/**
 * The event pipeline benchmark: how fast the outbox relay moves events to the bus, and
 * whether `WatchEvents` keeps up with a sustained block-push load.
 *
 *   npm run bench:events                                   # embedded: PGlite + in-process bus (part 1 only)
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres NATS_URL=nats://127.0.0.1:4222 npm run bench:events
 *
 * 1. **Relay throughput** (kit level, no services): BENCH_EVENTS (30,000) committed
 *    outbox rows, each with a `workspace_id` header, over BENCH_WORKSPACES (200)
 *    workspaces and then over one workspace (the worst case for per-aggregate order);
 *    an OutboxRelay (default batch size) relays them with `relayOnce()` back to back
 *    until none is left. Reports events/s, the relay process's CPU per event, and then
 *    reads everything back from the bus to check that every event arrived once and
 *    that each workspace's events arrived in commit order (and how many events overtook
 *    an earlier one of another workspace).
 * 2. **Commit → WatchEvents lag** (real PostgreSQL only; the whole system,
 *    `main.ts all`, on a scratch database): one unfiltered stream, block
 *    pushes at BENCH_RATE (1,000) per second for BENCH_SECONDS (60) over 20 listings
 *    of one workspace (bench/support/stream-lag.ts); lag p50/p99/max, how long after
 *    the last push answered the last event arrived (drain), the pushes' own latency,
 *    and the calendar outbox's backlog sampled every 250 ms (its peak and when it
 *    emptied after the load: the relay keeping up with the same load).
 * BENCH_PART=relay or BENCH_PART=lag runs one part only.
 *
 * For `npm run bench:all` (bench/support/results.ts) it records `events.relay_per_s`
 * (BENCH_WORKSPACES workspaces) and `events.relay_one_workspace_per_s` with the relay's
 * CPU per event of each, and from part 2 `events.lag_p50_ms`, `events.lag_p99_ms`,
 * `events.drain_ms`, `events.push_rate` (achieved), `events.system_cpu_per_push_ms` and
 * `events.outbox_empty_ms`; at a BENCH_RATE other than 1,000 (the rate of the targets
 * in bench/support/performance-tables.ts) the part-2 ids end in `_at_<rate>`.
 */
import { randomUUID } from 'node:crypto';
import { cpus, loadavg, totalmem } from 'node:os';
import type { ReceivedEvent } from '../services/kit/events';
import { runMigrations } from '../services/kit/db';
import { KIT_MIGRATIONS } from '../services/kit/db';
import { OutboxRelay } from '../services/kit/events';
import { Environment } from '../gen/psync/common/v1/environment_pb';
import { startTestBus, testLogger } from '../test/support/bus';
import { startTestDatabase } from '../test/support/database';
import { createBenchDatabase, startBenchSystem } from './support/bench-system';
import { cpuMsOf } from './support/proc-cpu';
import { benchName, recordMetric } from './support/results';
import { ms, openLagProbe, quantile, sleep } from './support/stream-lag';

const EVENTS = Number(process.env.BENCH_EVENTS ?? '30000');
const WORKSPACES = Number(process.env.BENCH_WORKSPACES ?? '200');
const RATE = Number(process.env.BENCH_RATE ?? '1000');
const SECONDS = Number(process.env.BENCH_SECONDS ?? '60');
const LISTINGS = 20;
const SCHEMA = 'evbench';
/** `relay`, `lag` or both (default). */
const PART = process.env.BENCH_PART ?? 'both';
/** The part-2 metric ids' suffix: none at the targets' 1,000 pushes/s. */
const AT_RATE = RATE === 1000 ? '' : `_at_${RATE}`;

const out: string[] = [];
const say = (line: string) => {
  out.push(line);
  process.stderr.write(`${line}\n`);
};

/** Part 1 for one spread of workspaces: fills the outbox, relays it, reads it back. */
async function relayThroughput(workspaces: number, metric: 'relay' | 'relay_one_workspace'): Promise<void> {
  const [db, t] = await Promise.all([startTestDatabase(), startTestBus()]);
  try {
    await runMigrations(db.sql, { schema: SCHEMA, sources: [KIT_MIGRATIONS] });
    const ws = Array.from({ length: workspaces }, () => randomUUID());
    const table = db.sql(`${SCHEMA}.outbox`);
    // Realistic sizes: a CalendarChanged is 150–250 bytes; headers carry a traceparent.
    for (let done = 0; done < EVENTS; done += 10_000) {
      const n = Math.min(10_000, EVENTS - done);
      await db.sql`
        insert into ${table} (id, subject, data, headers)
        select gen_random_uuid(), 'evbench.changed', decode(repeat('ab', 180), 'hex'),
               jsonb_build_object('workspace_id', (${db.sql.array(ws)}::text[])[1 + (g % ${workspaces})],
                                  'traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')
        from generate_series(${done}::int, ${done + n - 1}::int) g`;
    }
    const expected = await db.sql<{ id: string; ws: string }[]>`select id, headers->>'workspace_id' as ws from ${table} order by seq`;
    const relay = new OutboxRelay({ sql: db.sql, schema: SCHEMA, bus: t.bus, log: testLogger() });
    // Warm-up (connections, plans): the first 500 events are not counted.
    let warm = 0;
    while (warm < 500) warm += await relay.relayOnce();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let relayed = 0;
    let batches = 0;
    for (;;) {
      const n = await relay.relayOnce();
      if (n === 0) break;
      relayed += n;
      batches++;
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const cpuUsPerEvent = (cpu.user + cpu.system) / relayed;

    // Read everything back (after the timing, so the consumer's CPU is not counted).
    const got: ReceivedEvent[] = [];
    const sub = await t.bus.subscribe({ durable: `evbench-${workspaces}`, subjects: ['evbench.>'], handler: async (e) => void got.push(e) });
    const until = Date.now() + 120_000;
    while (got.length < expected.length && Date.now() < until) await sleep(50);
    await sleep(200);
    await sub.stop();
    const position = new Map(expected.map((e, i) => [e.id, i]));
    const wsOf = new Map(expected.map((e) => [e.id, e.ws]));
    const seen = new Set<string>();
    let duplicates = 0;
    let perWorkspaceInversions = 0;
    let globalInversions = 0;
    const lastOf = new Map<string, number>();
    let last = -1;
    for (const e of got) {
      if (seen.has(e.id)) duplicates++;
      seen.add(e.id);
      const i = position.get(e.id) ?? -1;
      const w = wsOf.get(e.id) ?? '';
      if ((lastOf.get(w) ?? -1) > i) perWorkspaceInversions++;
      if (last > i) globalInversions++;
      lastOf.set(w, Math.max(lastOf.get(w) ?? -1, i));
      last = Math.max(last, i);
    }
    const missing = expected.filter((e) => !seen.has(e.id)).length;
    say(
      `| ${db.embedded ? 'PGlite' : 'PostgreSQL'} + ${t.real ? 'NATS JetStream' : 'in-process bus'} | ${workspaces} | ${relayed} | **${Math.round(relayed / seconds).toLocaleString('en')}/s** | ${(relayed / batches).toFixed(0)} | ${cpuUsPerEvent.toFixed(0)} µs | ${missing} missing, ${duplicates} duplicated | ${perWorkspaceInversions} | ${globalInversions} |`,
    );
    const where = `${workspaces} workspace${workspaces === 1 ? '' : 's'}, ${db.embedded ? 'PGlite' : 'PostgreSQL'} + ${t.real ? 'NATS JetStream' : 'in-process bus'}`;
    recordMetric({
      id: `events.${metric}_per_s`,
      label: `outbox relay throughput, ${where}`,
      value: relayed / seconds,
      unit: 'events/s',
      note: `${relayed} events; ${missing} missing, ${duplicates} duplicated, ${perWorkspaceInversions} out of workspace order`,
    });
    recordMetric({ id: `events.${metric}_cpu_us`, label: `outbox relay CPU per event, ${where}`, value: cpuUsPerEvent, unit: 'µs' });
  } finally {
    await t.stop();
    await db.stop();
  }
}

/** Part 2: the whole system under BENCH_RATE pushes/s for BENCH_SECONDS. */
async function streamLag(): Promise<void> {
  const db = await createBenchDatabase();
  const system = await startBenchSystem(db.url, {}, 3);
  let probe: ReturnType<typeof openLagProbe> | undefined;
  let stopSampler = async () => undefined as void;
  try {
    const { identity, catalog, sql } = system;
    const ws = (await identity.createWorkspace({ name: 'bench-events', environment: Environment.SANDBOX })).workspace!.workspaceId;
    const listings: string[] = [];
    for (let i = 0; i < LISTINGS; i++) listings.push((await catalog.createListing({ workspaceId: ws })).listing!.listingId);
    probe = openLagProbe(system, ws, listings);
    await probe.run('warm', Math.min(RATE, 200), 3);

    // The calendar outbox's backlog while the pushes run and after.
    let sampling = true;
    let peak = 0;
    let pushesEnded = 0;
    let emptiedAt = 0;
    const sampler = (async () => {
      while (sampling) {
        const [row] = await sql<{ n: number }[]>`select count(*)::int as n from calendar.outbox where published_at is null`;
        const n = row?.n ?? 0;
        peak = Math.max(peak, n);
        if (pushesEnded && !emptiedAt && n === 0) emptiedAt = performance.now();
        await sleep(250);
      }
    })();
    stopSampler = async () => {
      sampling = false;
      await sampler.catch((err) => process.stderr.write(`outbox sampler: ${err}\n`));
    };
    const cpu0 = cpuMsOf(system.child.pid);
    const r = await probe.run('load', RATE, SECONDS);
    pushesEnded = performance.now();
    const cpuPerPush = (cpuMsOf(system.child.pid) - cpu0) / Math.max(1, r.events);
    const until = performance.now() + 60_000;
    while (!emptiedAt && performance.now() < until) await sleep(50);
    await stopSampler();
    const outboxDrain = emptiedAt ? `${((emptiedAt - pushesEnded) / 1000).toFixed(2)} s` : 'not within 60 s';
    const { lags, latency } = r;
    say(
      `| ${RATE}/s for ${SECONDS} s (achieved ${Math.round(r.achievedRate)}/s) | ${r.events} | ${ms(quantile(lags, 0.5))} ms | **${ms(quantile(lags, 0.99))} ms** | ${ms(lags[lags.length - 1] ?? NaN)} ms | **${ms(r.drainMs)} ms** | ${ms(quantile(latency, 0.5))} / ${ms(quantile(latency, 0.99))} ms | ${r.lost} | ${peak} events, empty ${outboxDrain} after | ${cpuPerPush.toFixed(2)} ms |`,
    );
    const offered = `${RATE.toLocaleString('en')} pushes/s offered`;
    const load = `${SECONDS} s, achieved ${Math.round(r.achievedRate).toLocaleString('en')}/s, ${r.events} events, ${r.lost} lost or failed`;
    recordMetric({ id: `events.lag_p50_ms${AT_RATE}`, label: `commit → WatchEvents lag p50 at ${offered}`, value: quantile(lags, 0.5), unit: 'ms', note: load });
    recordMetric({ id: `events.lag_p99_ms${AT_RATE}`, label: `commit → WatchEvents lag p99 at ${offered}`, value: quantile(lags, 0.99), unit: 'ms', note: load });
    recordMetric({ id: `events.drain_ms${AT_RATE}`, label: `last event on WatchEvents after the last push answered, ${offered}`, value: r.drainMs, unit: 'ms', note: load });
    recordMetric({ id: `events.push_rate${AT_RATE}`, label: `PutBlock pushes answered per second, ${offered} for ${SECONDS} s`, value: r.achievedRate, unit: 'pushes/s' });
    recordMetric({ id: `events.system_cpu_per_push_ms${AT_RATE}`, label: `system process CPU per push, ${offered}`, value: cpuPerPush, unit: 'ms' });
    if (emptiedAt) {
      recordMetric({
        id: `events.outbox_empty_ms${AT_RATE}`,
        label: `calendar outbox empty after the last push, ${offered}`,
        value: emptiedAt - pushesEnded,
        unit: 'ms',
        note: `peak backlog ${peak} events, sampled every 250 ms`,
      });
    }
  } finally {
    await stopSampler();
    await probe?.close();
    await system.stop();
    await db.drop();
  }
}

async function main(): Promise<void> {
  benchName('events');
  const loadStart = loadavg();
  if (PART !== 'lag') {
    say('Relay throughput:');
    say('| database + bus | workspaces | events | relayed | events per batch | relay CPU per event | delivered | per-workspace order violations | overtaken across workspaces |');
    say('|---|---:|---:|---:|---:|---:|---|---:|---:|');
    await relayThroughput(WORKSPACES, 'relay');
    await relayThroughput(1, 'relay_one_workspace');
  }
  if (process.env.DATABASE_URL && PART !== 'relay') {
    say('');
    say('Commit → WatchEvents lag (whole system):');
    say(
      '| pushes | events | lag p50 | lag p99 | lag max | drain after the last push | PutBlock p50 / p99 | lost or failed | calendar outbox backlog: peak, emptied | system process CPU per push |',
    );
    say('|---|---:|---:|---:|---:|---:|---:|---:|---|---:|');
    await streamLag();
  }
  out.unshift(
    `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; load average at the start ${loadStart.map((l) => l.toFixed(2)).join(' ')}, at the end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} (the machine is shared).`,
    `Command: ${process.env.DATABASE_URL ? 'DATABASE_URL=… ' : ''}${process.env.NATS_URL ? 'NATS_URL=… ' : ''}npm run bench:events (BENCH_EVENTS=${EVENTS}, BENCH_WORKSPACES=${WORKSPACES}, BENCH_RATE=${RATE}, BENCH_SECONDS=${SECONDS})`,
    '',
  );
  process.stdout.write(`${out.join('\n')}\n`);
}

main().catch((err) => {
  process.stderr.write(`bench:events: ${err?.stack ?? err}\n`);
  process.exit(1);
});
