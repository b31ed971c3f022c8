/**
 * Benchmark of webhook deliveries (results in docs/notifications.md):
 *
 * 1. Latency: a booking confirmed through the calendar's ConfirmBooking RPC → the
 *    signed delivery received by a local HTTPS partner; p50 / p99 over sequential
 *    bookings (one at a time, so each measures the whole path unloaded).
 * 2. Throughput: BookingConfirmed events published on the system's NATS stream as fast
 *    as possible (as the calendar's outbox relay would) for ENDPOINTS partners; the
 *    rate at which deliveries reach the receiver, from the first to the last. The
 *    intake believes only events the calendar proves (event-proof.ts), so the events
 *    describe bookings confirmed beforehand through the calendar (while the partners
 *    had no endpoint yet), each under a fresh event id; every one costs the intake its
 *    GetBooking read-back, as in production.
 *
 *   DATABASE_URL=… NATS_URL=… npx tsx test/notifications/bench-deliveries.ts [bookings] [events] [endpoints]
 *
 * Without NATS_URL only the latency part runs (the embedded bus lives inside the system).
 * The throughput line also carries the CPU used meanwhile (system process, the
 * PostgreSQL backends of its database, this process, the machine), the load average
 * and the TLS connections the receiver accepted. BENCH_PROFILE_DIR=dir: a CPU profile
 * of the system process is written there.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import { stopAllSystems } from '../support/system';
import { SystemClients, eventDriver, startWebhookSystem } from './support/harness';
import { echoAndAccept, Receiver } from './support/receiver';
import { createCertificates } from '../support/tls';
import { connectNatsBus } from '../../services/kit/events';
import { createSql } from '../../services/kit/db';
import { testLogger } from '../support/bus';
import { create, toBinary } from '@bufbuild/protobuf';
import { BookingConfirmedSchema } from '../../gen/psync/calendar/v1/events_pb';
import type { Booking } from '../../gen/psync/calendar/v1/calendar_pb';
import { CALENDAR_SUBJECTS, INTAKE_CONSUMER } from '../../services/notifications/intake';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import type { RunningSystem } from '../support/system';

const [bookings = 300, events = 5000, endpoints = 10] = process.argv.slice(2).map(Number);

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); NaN elsewhere. */
function processCpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return NaN;
  }
}

/** Busy and total CPU seconds of the whole machine so far (/proc/stat), to show what else ran. */
function machineCpuSeconds(): { busy: number; total: number } {
  try {
    const [, ...v] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
    const n = v.map(Number);
    const idle = n[3]! + n[4]!; // idle + iowait
    const total = n.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: (total - idle) / 100, total: total / 100 };
  } catch {
    return { busy: NaN, total: NaN };
  }
}

/**
 * BENCH_PROFILE_DIR: a CPU profile of the system under test, written there when it
 * exits (`--cpu-prof` is not allowed in NODE_OPTIONS, so a preloaded inspector session
 * takes it; open the .cpuprofile in Chrome DevTools).
 */
function profileEnv(dir: string | undefined): Record<string, string> {
  if (!dir) return {};
  mkdirSync(dir, { recursive: true });
  const preload = join(dir, 'cpu-profile-preload.cjs');
  writeFileSync(
    preload,
    `const inspector = require('node:inspector');
const fs = require('node:fs');
const session = new inspector.Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.start');
process.on('exit', () => {
  // Same-thread inspector sessions answer synchronously, so this completes before the exit.
  session.post('Profiler.stop', (err, res) => {
    if (!err) fs.writeFileSync(${JSON.stringify(dir)} + '/system-' + process.pid + '.cpuprofile', JSON.stringify(res.profile));
  });
});
`,
  );
  return { NODE_OPTIONS: `--require ${preload}` };
}

/**
 * CPU seconds used so far by each PostgreSQL backend serving the system's own database
 * (same machine; found in pg_stat_activity), by pid.
 */
async function postgresCpuSeconds(databaseUrl: string): Promise<Map<number, number>> {
  const sql = createSql(databaseUrl, { max: 1, applicationName: 'bench-cpu' });
  try {
    const rows = await sql<{ pid: number }[]>`
      select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
    return new Map(rows.map((r) => [r.pid, processCpuSeconds(r.pid) || 0]));
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** CPU seconds the backends used between two snapshots (a backend that appeared counts whole). */
function postgresCpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let s = 0;
  for (const [pid, cpu] of after) s += cpu - (before.get(pid) ?? 0);
  return s;
}

const load = () => loadavg().map((x) => +x.toFixed(2));

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Waits until the intake's durable consumer has handled everything on the stream, and the stream stopped growing (the outbox relayed all). */
async function intakeIdle(system: RunningSystem): Promise<void> {
  const nc = await connect({ servers: system.env.NATS_URL!.split(',') });
  try {
    const jsm = await jetstreamManager(nc);
    const stream = system.env.BUS_PREFIX!.toUpperCase().replace(/-/g, '_');
    let last = -1;
    for (let i = 0; i < 600; i++) {
      const [s, c] = await Promise.all([jsm.streams.info(stream), jsm.consumers.info(stream, INTAKE_CONSUMER)]);
      if (c.num_pending === 0 && c.num_ack_pending === 0 && c.delivered.stream_seq >= s.state.last_seq && s.state.last_seq === last) return;
      last = s.state.last_seq;
      await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error('the intake did not catch up with the stream');
  } finally {
    await nc.close();
  }
}

async function main(): Promise<void> {
  const certs = await createCertificates();
  const receiver = new Receiver(certs);
  await receiver.listen();
  const system = await startWebhookSystem(certs, { env: profileEnv(process.env.BENCH_PROFILE_DIR) });
  const c = new SystemClients(system.internalUrl);
  if (process.env.BENCH_VERBOSE) console.error(`system database: ${system.env.DATABASE_URL ?? 'embedded'}`);
  try {
    const d = await eventDriver(system, c);
    const ALL = [WebhookEventType.BOOKING_CONFIRMED, WebhookEventType.BOOKING_CANCELLED, WebhookEventType.USER_ERASED];

    // 1. Latency through the calendar.
    const ws = await d.newWorkspace();
    const path = `/bench/${ws}`;
    await c.notifications.putEndpoint({ workspaceId: ws, url: `${receiver.baseUrl}${path}`, events: ALL });
    const latencies: number[] = [];
    const connectionsBefore = receiver.tlsConnections;
    for (let i = 0; i < bookings + 10; i++) {
      const before = receiver.at(path, 'delivery').length;
      const t0 = performance.now();
      await d.confirmBooking(ws, { guestId: `g-${randomUUID()}`, guestName: 'Bench' });
      await receiver.waitFor(() => receiver.at(path, 'delivery').length > before, 10_000, 'delivery');
      if (i >= 10) latencies.push(performance.now() - t0); // the first ten warm up
    }
    latencies.sort((a, b) => a - b);
    console.log(
      JSON.stringify({
        part: 'latency: ConfirmBooking → delivery received',
        driver: d.kind,
        database: system.env.DATABASE_URL ? 'postgresql' : 'embedded',
        bus: system.env.NATS_URL ? 'nats' : 'memory',
        n: latencies.length,
        p50_ms: +pct(latencies, 50).toFixed(1),
        p90_ms: +pct(latencies, 90).toFixed(1),
        p99_ms: +pct(latencies, 99).toFixed(1),
        max_ms: +latencies.at(-1)!.toFixed(1),
        tls_connections: receiver.tlsConnections - connectionsBefore,
      }),
    );

    // 2. Throughput from the bus.
    if (!system.env.NATS_URL) return await d.close();
    const bus = await connectNatsBus({ url: system.env.NATS_URL, prefix: system.env.BUS_PREFIX!, log: testLogger() });
    const workspaces: string[] = [];
    for (let i = 0; i < endpoints; i++) workspaces.push(await d.newWorkspace());
    // The bookings the events describe, confirmed while their workspaces have no endpoint.
    const booked: Booking[] = [];
    for (let i = 0; i < events; i += 50) {
      const batch = Array.from({ length: Math.min(50, events - i) }, (_, j) =>
        d.confirmBooking(workspaces[(i + j) % endpoints]!, { guestId: `g-${randomUUID()}`, guestName: 'Bench' }),
      );
      for (const b of await Promise.all(batch)) booked.push((await c.calendar.getBooking({ bookingReference: b.bookingReference })).booking!);
    }
    await d.close();
    await intakeIdle(system);
    for (const w of workspaces) {
      receiver.on(`/bench/${w}`, echoAndAccept);
      await c.notifications.putEndpoint({ workspaceId: w, url: `${receiver.baseUrl}/bench/${w}`, events: ALL });
    }
    const start = receiver.received.length;
    const loadBefore = load();
    const connections0 = receiver.tlsConnections;
    const systemCpu0 = processCpuSeconds(system.child.pid);
    const pg0 = await postgresCpuSeconds(system.env.DATABASE_URL!);
    const benchCpu0 = process.cpuUsage();
    const machine0 = machineCpuSeconds();
    const t0 = performance.now();
    const publishes: Promise<void>[] = [];
    for (const b of booked) {
      const id = randomUUID();
      const msg = create(BookingConfirmedSchema, {
        eventId: id,
        occurredAt: b.confirmedAt,
        workspaceId: b.workspaceId,
        environment: b.environment,
        bookingReference: b.bookingReference,
        listingId: b.listingId,
        providerId: b.providerId,
        checkIn: b.checkIn,
        checkOut: b.checkOut,
        checkInTime: '15:00',
        checkOutTime: '11:00',
        partySize: b.partySize,
        amountPaid: b.amountPaid,
      });
      publishes.push(bus.publish({ id, subject: CALENDAR_SUBJECTS.bookingConfirmed, data: toBinary(BookingConfirmedSchema, msg) }));
      if (publishes.length >= 500) await Promise.all(publishes.splice(0));
    }
    await Promise.all(publishes);
    const published = performance.now();
    await receiver.waitFor(() => receiver.received.length - start >= events, 300_000, `${events} deliveries`);
    const seconds = (performance.now() - t0) / 1000;
    const systemCpu = processCpuSeconds(system.child.pid) - systemCpu0;
    const benchCpuUsage = process.cpuUsage(benchCpu0);
    const benchCpu = (benchCpuUsage.user + benchCpuUsage.system) / 1e6;
    const machine1 = machineCpuSeconds();
    const pgCpu = postgresCpuBetween(pg0, await postgresCpuSeconds(system.env.DATABASE_URL!));
    const machineBusy = machine1.busy - machine0.busy;
    const firstAt = receiver.received[start]!.at;
    const lastAt = receiver.received.at(-1)!.at;
    console.log(
      JSON.stringify({
        part: 'throughput: events on the bus → deliveries received',
        events,
        endpoints,
        publish_s: +((published - t0) / 1000).toFixed(2),
        total_s: +seconds.toFixed(2),
        deliveries_per_s: Math.round(events / seconds),
        deliveries_per_s_first_to_last: Math.round(events / ((lastAt - firstAt) / 1000)),
        // CPU during the throughput part: the system under test (one process, all
        // roles), this process (publisher + HTTPS receiver), and the whole machine
        // (which includes PostgreSQL, NATS and whatever else runs on it).
        tls_connections: receiver.tlsConnections - connections0,
        tls_resumed: new Set(
          receiver.received
            .slice(start)
            .filter((r) => r.resumed)
            .map((r) => r.connection),
        ).size,
        system_cpu_s: +systemCpu.toFixed(2),
        system_cpu_ms_per_delivery: +((systemCpu * 1000) / events).toFixed(3),
        postgres_cpu_s: +pgCpu.toFixed(2),
        postgres_cpu_ms_per_delivery: +((pgCpu * 1000) / events).toFixed(3),
        bench_cpu_s: +benchCpu.toFixed(2),
        machine_busy_cores: +(machineBusy / seconds).toFixed(2),
        machine_cpu_ms_per_delivery: +((machineBusy * 1000) / events).toFixed(3),
        load_before: loadBefore,
        load_after: load(),
      }),
    );
    await bus.close();
  } finally {
    c.close();
    await stopAllSystems();
    await receiver.close();
    certs.remove();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
