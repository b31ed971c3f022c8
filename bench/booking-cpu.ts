/**
 * CPU per booking and its webhook delivery at an ordinary, steady rate
 * (docs/performance.md "CPU per booking at 20 bookings/s"):
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres NATS_URL=nats://127.0.0.1:4222 npm run bench:booking-cpu
 *
 * On a scratch database of DATABASE_URL's server (created and dropped) it starts the whole
 * system (`main.ts all`, tsc-compiled as the image runs it; BENCH_RUNTIME=tsx:
 * through tsx) on NATS_URL's JetStream (without NATS_URL: the in-process bus), with a
 * local HTTPS webhook receiver (https://localhost:8443, a throwaway CA) registered as the
 * endpoint of BENCH_WORKSPACES (4) sandbox workspaces with BENCH_LISTINGS (5) listings
 * each. Then:
 *
 *   1. idle: BENCH_IDLE_SECONDS (10) with nothing to do — the CPU the pollers, timers and
 *      consumers cost by themselves (ms of CPU per second);
 *   2. load: `CalendarService.ConfirmBooking` over gRPC as the marketplace calls it, open
 *      loop at BENCH_RATE (20) per second for BENCH_SECONDS (60), 2-night stays on
 *      successive dates round-robin over the listings; each booking makes one
 *      `booking.confirmed` delivery, signed and POSTed to the receiver. The window ends
 *      when the last delivery has arrived.
 *
 * Reported: CPU of the system process over the load window divided by the bookings (the
 * target: ≤ 2 ms), its idle share, the same for its PostgreSQL backends, and
 * ConfirmBooking → delivery latency (p50, p99). Before both, a warm-up: BENCH_WARMUP_BOOKINGS
 * (3,000) bookings at BENCH_WARMUP_RATE (100) per second, then BENCH_WARMUP_SECONDS (5) of the
 * measured load. The fast part brings the system to the steady state of a long-running
 * process (V8 optimises a function after enough calls, whatever the rate): with only
 * 200 bookings of warm-up, V8's compilers and interpreted code cost a quarter to a third more
 * CPU per booking than after 3,000 (docs/performance.md "CPU per booking at 20 bookings/s"). CPU time comes from /proc, so it is the
 * figure a shared machine disturbs least. BENCH_PROFILE=1: the system runs under
 * `node --cpu-prof` and the load window's CPU is summarised by origin and function
 * (the profiler's own cost is then in the CPU figures).
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { CalendarService } from '../gen/psync/calendar/v1/calendar_pb';
import { CatalogService } from '../gen/psync/catalog/v1/catalog_pb';
import { Environment } from '../gen/psync/common/v1/environment_pb';
import { IdentityService } from '../gen/psync/identity/v1/identity_pb';
import { NotificationsService, WebhookEventType } from '../gen/psync/notifications/v1/notifications_pb';
import { createSql, type Sql } from '../services/kit/db';
import { credentialInterceptor } from '../test/support/credentials';
import { createCertificates } from '../test/support/tls';
import { echoAndAccept, Receiver } from '../test/notifications/support/receiver';
import { createBenchDatabase, fullSystemEnv } from './support/bench-system';
import { benchRuntime, buildForBench } from './support/compiled-build';
import { profileIn, summariseFunctions, summariseInclusive, summariseProfile } from './support/cpu-profile';
import { formatShares, PERF_NODE_ARGS, startPerf, type PerfRecording } from './support/perf-profile';
import { startFull, type Build } from './support/gateway-servers';
import { machineLine } from './support/machine';
import { cpuMsOf } from './support/proc-cpu';
import { threadCpuBetween, threadCpuMs } from './support/thread-cpu';
import { benchName, recordMetric } from './support/results';

const ROOT = resolve(__dirname, '..');
const RATE = Number(process.env.BENCH_RATE ?? '20');
const SECONDS = Number(process.env.BENCH_SECONDS ?? '60');
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? '10');
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? '5');
const WARMUP_BOOKINGS = Number(process.env.BENCH_WARMUP_BOOKINGS ?? '3000');
const WARMUP_RATE = Number(process.env.BENCH_WARMUP_RATE ?? '100');
const WORKSPACES = Number(process.env.BENCH_WORKSPACES ?? '4');
const LISTINGS = Number(process.env.BENCH_LISTINGS ?? '5');
/** `1`: node --cpu-prof; `perf`: Linux perf's cpu-clock (perf-profile.ts: CPU time, undistorted by a loaded machine). */
const PROFILE = process.env.BENCH_PROFILE === '1' ? 'v8' : process.env.BENCH_PROFILE === 'perf' ? 'perf' : undefined;
const TARGET_MS = 2;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const quantile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
const day = (n: number) => new Date(Date.UTC(2031, 0, 1) + n * 86_400_000).toISOString().slice(0, 10);

/** CPU ms the system database's backends have used so far, by pid. */
async function backendCpu(sql: Sql): Promise<Map<number, number>> {
  const rows = await sql<{ pid: number }[]>`
    select pid from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`;
  return new Map(rows.map((r) => [r.pid, cpuMsOf(r.pid)]));
}

function backendCpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let s = 0;
  for (const [pid, ms] of after) s += ms - (before.get(pid) ?? 0);
  return s;
}

async function main(): Promise<void> {
  benchName('booking-cpu');
  const runtime = benchRuntime();
  const build: Build = { runtime, dist: runtime === 'compiled' ? buildForBench(ROOT) : undefined };
  const db = await createBenchDatabase('psync_bench_booking');
  const certs = await createCertificates();
  const receiver = new Receiver(certs);
  const profileDir = PROFILE !== undefined ? mkdtempSync(join(tmpdir(), 'psync-bench-booking-prof-')) : undefined;
  const observer = createSql(db.url, { max: 1, applicationName: 'bench-observer' });
  const loadStart = loadavg();
  let stopSystem = async () => {};
  try {
    await receiver.listen();
    const system = await startFull(
      build,
      // The receiver is on loopback, signed by the throwaway CA.
      fullSystemEnv(db.url, 'benchbook', { EGRESS_ALLOW_CIDRS: '127.0.0.0/8', NODE_EXTRA_CA_CERTS: certs.caFile }),
      PROFILE === 'v8' ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : PROFILE === 'perf' ? PERF_NODE_ARGS : [],
    );
    stopSystem = () => system.stop();
    const sessions = new Http2SessionManager(system.internal);
    const transport = (role?: 'marketplace') =>
      createGrpcTransport({ baseUrl: system.internal, sessionManager: sessions, defaultTimeoutMs: 30000, interceptors: [credentialInterceptor(role)] });
    const identity = createClient(IdentityService, transport());
    const catalog = createClient(CatalogService, transport());
    const notifications = createClient(NotificationsService, transport());
    const marketplace = createClient(CalendarService, transport('marketplace'));

    // Workspaces, listings, one endpoint per workspace on the receiver.
    const listings: string[] = [];
    const pathOf = new Map<string, string>();
    for (let w = 0; w < WORKSPACES; w++) {
      const ws = (await identity.createWorkspace({ name: `bench-booking-${w}`, environment: Environment.SANDBOX })).workspace!.workspaceId;
      const path = `/booking/${ws}`;
      receiver.on(path, echoAndAccept);
      await notifications.putEndpoint({ workspaceId: ws, url: `${receiver.baseUrl}${path}`, events: [WebhookEventType.BOOKING_CONFIRMED] });
      for (let l = 0; l < LISTINGS; l++) {
        const listingId = (await catalog.createListing({ workspaceId: ws })).listing!.listingId;
        listings.push(listingId);
        pathOf.set(listingId, path);
      }
    }
    const deliveries = () => receiver.received.filter((r) => r.json?.event_type === 'booking.confirmed');
    /** booking reference → when ConfirmBooking was called. */
    const started = new Map<string, number>();
    let n = 0;
    const book = async () => {
      const k = n++;
      const listingId = listings[k % listings.length]!;
      const night = Math.floor(k / listings.length) * 3;
      // Date.now(): the receiver stamps arrivals with it.
      const t0 = Date.now();
      const res = await marketplace.confirmBooking({
        listingId,
        checkIn: day(night),
        checkOut: day(night + 2),
        guestId: `guest-${k}`,
        guestName: 'Bench Guest',
        partySize: 2,
        amountPaid: { value: '240.00', currency: 'EUR' },
        requiresPayment: false,
      });
      started.set(res.booking!.bookingReference, t0);
    };

    // Warm-up (see the header): fast, then at the measured rate, open loop both.
    const paced = async (count: number, rate: number) => {
      const start = performance.now();
      const calls: Promise<void>[] = [];
      for (let i = 0; i < count; i++) {
        const wait = start + (i * 1000) / rate - performance.now();
        if (wait > 1) await sleep(wait);
        calls.push(book());
      }
      await Promise.all(calls);
    };
    await paced(WARMUP_BOOKINGS, WARMUP_RATE);
    await paced(Math.round(RATE * WARMUP_SECONDS), RATE);
    const warm = n;
    await receiver.waitFor(() => deliveries().length >= warm, 120_000, 'warm-up deliveries');
    await sleep(2000);

    // 1. Idle.
    const idle0 = cpuMsOf(system.child.pid);
    const idlePg0 = await backendCpu(observer);
    const i0 = performance.now();
    await sleep(IDLE_SECONDS * 1000);
    const idleMsPerS = ((cpuMsOf(system.child.pid) - idle0) * 1000) / (performance.now() - i0);
    const idlePgMsPerS = (backendCpuBetween(idlePg0, await backendCpu(observer)) * 1000) / (performance.now() - i0);
    process.stdout.write(`idle: system ${idleMsPerS.toFixed(1)} ms of CPU per second, PostgreSQL ${idlePgMsPerS.toFixed(1)} ms/s\n`);

    // 2. Load.
    const before = deliveries().length;
    const total = Math.round(RATE * SECONDS);
    const cpu0 = cpuMsOf(system.child.pid);
    const threads0 = threadCpuMs(system.child.pid!);
    const pg0 = await backendCpu(observer);
    const load0 = loadavg()[0]!;
    const stopPerf = PROFILE === 'perf' ? startPerf(system.child.pid!, join(profileDir ?? tmpdir(), 'perf.data'), ROOT) : undefined;
    const t0 = performance.now();
    const calls: Promise<void>[] = [];
    let failed = 0;
    let mark = { at: t0, cpu: cpu0, n: 0 };
    for (let i = 0; i < total; i++) {
      const wait = t0 + (i * 1000) / RATE - performance.now();
      if (wait > 1) await sleep(wait);
      calls.push(book().catch(() => void failed++));
      if (i > 0 && i % (RATE * 10) === 0) {
        // Every 10 s: the CPU per booking so far in this stretch (should be flat in a steady state).
        const now = { at: performance.now(), cpu: cpuMsOf(system.child.pid), n: i };
        process.stdout.write(
          `  ${((now.at - t0) / 1000).toFixed(0)} s: ${((now.cpu - mark.cpu) / (now.n - mark.n)).toFixed(2)} ms of system CPU per booking in the last ${((now.at - mark.at) / 1000).toFixed(0)} s\n`,
        );
        mark = now;
      }
    }
    await Promise.all(calls);
    const answered = performance.now();
    await receiver.waitFor(() => deliveries().length >= before + total - failed, 120_000, 'every delivery');
    const t1 = performance.now();
    const cpu = cpuMsOf(system.child.pid) - cpu0;
    const threads = [...threadCpuBetween(threads0, threadCpuMs(system.child.pid!))].filter(([, ms]) => ms > 0).sort((a, b) => b[1] - a[1]);
    const perf: PerfRecording | undefined = await stopPerf?.();
    const pg = backendCpuBetween(pg0, await backendCpu(observer));
    const windowS = (t1 - t0) / 1000;
    const booked = total - failed;
    const cpuPerBooking = cpu / booked;
    const idleShare = (idleMsPerS * windowS) / booked;
    const latencies = deliveries()
      .slice(before)
      .map((r) => {
        const ref = (r.json as { data?: { booking_reference?: string } }).data?.booking_reference;
        const s = ref === undefined ? undefined : started.get(ref);
        return s === undefined ? NaN : r.at - s;
      })
      .filter((x) => !Number.isNaN(x))
      .sort((a, b) => a - b);
    const loadEnd = loadavg();

    let profileLines: string[] = [];
    if (perf) {
      profileLines = [
        '',
        `perf profile (cpu-clock) of the system over the load window, ${perf.byJavaScript.samples} samples:`,
        `- by origin, each sample charged to its innermost JavaScript function: ${formatShares(perf.byJavaScript.origins, 16)}`,
        `- by JavaScript function: ${formatShares(perf.byJavaScript.functions, 40, 1)}`,
        `- by origin, self time: ${formatShares(perf.self.origins, 12)}`,
      ];
    }
    if (PROFILE === 'v8') {
      await system.stop();
      const end = system.exitedAt ?? performance.now();
      const file = profileIn(profileDir!);
      if (file) {
        const window = { startBeforeEndMs: end - t0, endBeforeEndMs: end - t1 };
        const origins = summariseProfile(file, ROOT, window);
        const fns = summariseFunctions(file, ROOT, window);
        const inclusive = summariseInclusive(file, ROOT, window);
        profileLines = [
          '',
          `CPU profile of the system over the load window (${(origins.busyMs / booked).toFixed(2)} ms busy per booking, profiler included):`,
          `- by origin: ${origins.shares
            .slice(0, 12)
            .map((s) => `${s.origin} ${(s.share * 100).toFixed(0)} %`)
            .join(', ')}`,
          `- by function (self): ${fns.shares
            .slice(0, 25)
            .map((s) => `${s.origin} ${(s.share * 100).toFixed(1)} %`)
            .join('; ')}`,
          `- by function (inclusive: itself and what it calls, across its awaits): ${inclusive.shares
            .filter((s) => !/^\((root|program|idle|garbage collector)\)/.test(s.origin))
            .slice(0, 60)
            .map((s) => `${s.origin} ${(s.share * 100).toFixed(1)} %`)
            .join('; ')}`,
        ];
      }
    }

    const lines = [
      `Command: \`${process.env.DATABASE_URL ? 'DATABASE_URL=… ' : ''}${process.env.NATS_URL ? 'NATS_URL=… ' : ''}npm run bench:booking-cpu\` (BENCH_RATE=${RATE}, BENCH_SECONDS=${SECONDS}, ${runtime}${PROFILE ? ', profiled' : ''}); bus: ${process.env.NATS_URL ? 'NATS JetStream' : 'in-process'}.`,
      `${machineLine()}; load average at the start ${loadStart.map((x) => x.toFixed(2)).join(' ')}, during the load ${load0.toFixed(2)}, at the end ${loadEnd.map((x) => x.toFixed(2)).join(' ')}.`,
      '',
      '| measurement | value |',
      '|---|---:|',
      `| bookings (ConfirmBooking, ${RATE}/s for ${SECONDS} s; failed) | ${booked} (${failed}) |`,
      `| load window (first call → last delivery; calls answered after) | ${windowS.toFixed(1)} s (${((answered - t0) / 1000).toFixed(1)} s) |`,
      `| **system process CPU per booking + delivery** | **${cpuPerBooking.toFixed(2)} ms** (target ≤ ${TARGET_MS} ms) |`,
      `| of which its idle background (${idleMsPerS.toFixed(1)} ms/s × window) | ${idleShare.toFixed(2)} ms |`,
      `| by thread: ${threads.map(([name, ms]) => `${name} ${(ms / booked).toFixed(2)}`).join(', ')} | ms per booking |`,
      `| PostgreSQL backends' CPU per booking (idle: ${idlePgMsPerS.toFixed(1)} ms/s) | ${(pg / booked).toFixed(2)} ms |`,
      `| ConfirmBooking → delivery received, p50 / p99 | ${quantile(latencies, 0.5).toFixed(1)} / ${quantile(latencies, 0.99).toFixed(1)} ms |`,
      ...profileLines,
    ];
    process.stdout.write(`\n${lines.join('\n')}\n`);
    recordMetric({
      id: 'booking-cpu.system_ms',
      label: `system process CPU per booking + delivery at ${RATE} bookings/s`,
      value: cpuPerBooking,
      unit: 'ms',
      note: `${booked} bookings over ${windowS.toFixed(0)} s${PROFILE ? ', profiled' : ''}`,
    });
    recordMetric({ id: 'booking-cpu.idle_ms_per_s', label: 'system process CPU when idle', value: idleMsPerS, unit: 'ms/s' });
    recordMetric({ id: 'booking-cpu.postgres_ms', label: `PostgreSQL CPU per booking + delivery at ${RATE} bookings/s`, value: pg / booked, unit: 'ms' });
    recordMetric({ id: 'booking-cpu.delivery_p99', label: 'ConfirmBooking → delivery received p99', value: quantile(latencies, 0.99), unit: 'ms' });
    sessions.abort();
  } finally {
    await stopSystem();
    await observer.end({ timeout: 5 });
    await receiver.close();
    certs.remove();
    // BENCH_PROFILE_DIR keeps the raw profile (for a profiler UI or a closer look).
    if (profileDir && process.env.BENCH_PROFILE_DIR) cpSync(profileDir, process.env.BENCH_PROFILE_DIR, { recursive: true });
    if (profileDir) rmSync(profileDir, { recursive: true, force: true });
    await db.drop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:booking-cpu: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
