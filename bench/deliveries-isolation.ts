/**
 * Delivery isolation benchmark (docs/performance.md, "Webhook delivery isolation"):
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test NATS_URL=nats://127.0.0.1:4222 npm run bench:deliveries-isolation
 *
 * Two runs, each on a fresh system (scratch database and bus prefix) with the default
 * retry schedule, 40 sandbox endpoints on a local HTTPS receiver and BookingConfirmed
 * events published on the system's NATS stream (as the calendar's outbox relay would)
 * at BENCH_RATE per second (20), round-robin over the 40 endpoints, for BENCH_SECONDS (45):
 *
 *   A. every endpoint healthy (answers 200 at once);
 *   B. 8 endpoints accept the connection and never answer, 2 answer 500, 2 answer 429
 *      with Retry-After: 30; the other 28 healthy.
 *
 * For the 28 endpoints healthy in both runs it reports throughput (deliveries received
 * during the load window per second), event → delivery latency (p50, p99, max, from
 * publication to arrival at the receiver), deliveries still missing BENCH_DRAIN_SECONDS
 * (60) after the load ends, attempts the bad endpoints got, and the ratios B / A.
 * Targets: healthy throughput within 5 %, healthy p99 within 1.5×.
 */
import { randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { create, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { WebhookEventType } from '../gen/psync/notifications/v1/notifications_pb';
import { BookingConfirmedSchema } from '../gen/psync/calendar/v1/events_pb';
import { Environment } from '../gen/psync/common/v1/environment_pb';
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE } from '../services/kit/runtime';
import { connectNatsBus } from '../services/kit/events';
import { CALENDAR_SUBJECTS } from '../services/notifications/intake';
import { stopAllSystems } from '../test/support/system';
import { testLogger } from '../test/support/bus';
import { createCertificates } from '../test/support/tls';
import { SystemClients, startWebhookSystem } from '../test/notifications/support/harness';
import { echoAndAccept, Receiver, type Handler } from '../test/notifications/support/receiver';
import { benchName, watchPeakRss } from './support/results';

const RATE = Number(process.env.BENCH_RATE ?? '20');
const SECONDS = Number(process.env.BENCH_SECONDS ?? '45');
const DRAIN_SECONDS = Number(process.env.BENCH_DRAIN_SECONDS ?? '60');
const ENDPOINTS = 40;
const ALL = [WebhookEventType.BOOKING_CONFIRMED, WebhookEventType.BOOKING_CANCELLED, WebhookEventType.USER_ERASED];

type Kind = 'healthy' | 'silent' | 'failing' | 'throttling';

/** Which endpoint (by index) is what in run B; the 28 others are healthy in both runs. */
function kindOf(i: number, withBad: boolean): Kind {
  if (!withBad) return 'healthy';
  // Spread the bad ones over the round-robin so that each second has some of each.
  if (i % 5 === 1 && i < 40) return 'silent'; // 1, 6, 11, … 36: 8 endpoints
  if (i === 3 || i === 23) return 'failing';
  if (i === 13 || i === 33) return 'throttling';
  return 'healthy';
}

const handlers: Record<Kind, Handler> = {
  healthy: echoAndAccept,
  silent: (r) => (r.json?.event_type === 'endpoint.challenge' ? echoAndAccept(r) : { status: 200, hang: true }),
  failing: (r) => (r.json?.event_type === 'endpoint.challenge' ? echoAndAccept(r) : { status: 500 }),
  throttling: (r) => (r.json?.event_type === 'endpoint.challenge' ? echoAndAccept(r) : { status: 429, headers: { 'retry-after': '30' } }),
};

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

interface RunResult {
  run: string;
  healthy_endpoints: number;
  healthy_events: number;
  healthy_delivered_in_window: number;
  healthy_throughput_per_s: number;
  healthy_p50_ms: number;
  healthy_p99_ms: number;
  healthy_max_ms: number;
  healthy_missing_after_drain: number;
  bad_attempts: Partial<Record<Kind, number>>;
  bad_events: Partial<Record<Kind, number>>;
  load: number[];
}

async function run(receiver: Receiver, certs: Awaited<ReturnType<typeof createCertificates>>, withBad: boolean): Promise<RunResult> {
  const system = await startWebhookSystem(certs, { env: { WEBHOOK_RETRY_SCHEDULE: DEFAULT_WEBHOOK_RETRY_SCHEDULE.join(',') } });
  watchPeakRss(withBad ? 'system (run B)' : 'system (run A)', system.child.pid);
  const c = new SystemClients(system.internalUrl);
  const bus = await connectNatsBus({ url: system.env.NATS_URL!, prefix: system.env.BUS_PREFIX!, log: testLogger() });
  try {
    const endpoints: { ws: string; path: string; kind: Kind; comparable: boolean }[] = [];
    for (let i = 0; i < ENDPOINTS; i++) {
      const ws = randomUUID();
      const path = `/iso/${ws}`;
      const kind = kindOf(i, withBad);
      receiver.on(path, echoAndAccept);
      await c.notifications.putEndpoint({ workspaceId: ws, url: `${receiver.baseUrl}${path}`, events: ALL });
      receiver.on(path, handlers[kind]);
      endpoints.push({ ws, path, kind, comparable: kindOf(i, true) === 'healthy' });
    }
    const byPath = new Map(endpoints.map((e) => [e.path, e]));
    const published = new Map<string, { at: number; endpoint: (typeof endpoints)[number] }>();
    const startIndex = receiver.received.length;
    const load0 = loadavg()[0]!;
    const t0 = Date.now();
    const total = Math.round(RATE * SECONDS);
    const publishes: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      const due = t0 + (i * 1000) / RATE;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const e = endpoints[i % ENDPOINTS]!;
      const id = randomUUID();
      const msg = create(BookingConfirmedSchema, {
        eventId: id,
        occurredAt: timestampFromDate(new Date()),
        workspaceId: e.ws,
        environment: Environment.SANDBOX,
        bookingReference: `BK${i}`,
        listingId: 'L1',
        checkIn: '2030-01-01',
        checkOut: '2030-01-02',
        checkInTime: '15:00',
        checkOutTime: '11:00',
        partySize: 1,
        guestName: 'Bench',
        amountPaid: { value: '1.00', currency: 'EUR' },
      });
      published.set(id, { at: Date.now(), endpoint: e });
      publishes.push(bus.publish({ id, subject: CALENDAR_SUBJECTS.bookingConfirmed, data: toBinary(BookingConfirmedSchema, msg) }));
    }
    await Promise.all(publishes);
    const loadEnd = Date.now();
    const healthyEvents = [...published.values()].filter((p) => p.endpoint.comparable).length;
    const firstArrival = () => {
      const seen = new Map<string, number>();
      for (const r of receiver.received.slice(startIndex)) {
        const id = r.json?.event_id as string | undefined;
        if (!id || r.json?.event_type === 'endpoint.challenge' || !published.has(id) || seen.has(id)) continue;
        seen.set(id, r.at);
      }
      return seen;
    };
    const healthyArrived = () => [...firstArrival()].filter(([id]) => published.get(id)!.endpoint.comparable).length;
    const drainDeadline = loadEnd + DRAIN_SECONDS * 1000;
    while (Date.now() < drainDeadline && healthyArrived() < healthyEvents) await new Promise((r) => setTimeout(r, 250));
    const arrivals = firstArrival();
    const latencies: number[] = [];
    let inWindow = 0;
    for (const [id, at] of arrivals) {
      const p = published.get(id)!;
      if (!p.endpoint.comparable) continue;
      latencies.push(at - p.at);
      if (at <= loadEnd + 1000) inWindow++;
    }
    latencies.sort((a, b) => a - b);
    const badAttempts: Partial<Record<Kind, number>> = {};
    const badEvents: Partial<Record<Kind, number>> = {};
    for (const r of receiver.received.slice(startIndex)) {
      const e = byPath.get(r.path);
      if (!e || e.kind === 'healthy' || r.json?.event_type === 'endpoint.challenge') continue;
      badAttempts[e.kind] = (badAttempts[e.kind] ?? 0) + 1;
    }
    for (const p of published.values()) if (p.endpoint.kind !== 'healthy') badEvents[p.endpoint.kind] = (badEvents[p.endpoint.kind] ?? 0) + 1;
    return {
      run: withBad ? 'B: 8 silent + 2 failing + 2 throttling of 40' : 'A: 40 healthy',
      healthy_endpoints: endpoints.filter((e) => e.comparable).length,
      healthy_events: healthyEvents,
      healthy_delivered_in_window: inWindow,
      healthy_throughput_per_s: +(inWindow / ((loadEnd - t0) / 1000)).toFixed(2),
      healthy_p50_ms: Math.round(pct(latencies, 50)),
      healthy_p99_ms: Math.round(pct(latencies, 99)),
      healthy_max_ms: Math.round(latencies.at(-1) ?? NaN),
      healthy_missing_after_drain: healthyEvents - latencies.length,
      bad_attempts: badAttempts,
      bad_events: badEvents,
      load: [+load0.toFixed(2), +loadavg()[0]!.toFixed(2)],
    };
  } finally {
    await bus.close();
    c.close();
    await stopAllSystems();
  }
}

async function main(): Promise<void> {
  benchName('deliveries-isolation');
  if (!process.env.DATABASE_URL || !process.env.NATS_URL) throw new Error('needs DATABASE_URL and NATS_URL (a real PostgreSQL and NATS JetStream)');
  const certs = await createCertificates();
  const receiver = new Receiver(certs);
  await receiver.listen();
  try {
    console.log(JSON.stringify({ machine: `${cpus().length} × ${cpus()[0]?.model}`, node: process.version, rate_per_s: RATE, seconds: SECONDS, endpoints: ENDPOINTS }));
    const a = await run(receiver, certs, false);
    console.log(JSON.stringify(a));
    const b = await run(receiver, certs, true);
    console.log(JSON.stringify(b));
    const throughputRatio = b.healthy_throughput_per_s / a.healthy_throughput_per_s;
    const p99Ratio = b.healthy_p99_ms / a.healthy_p99_ms;
    console.log(
      JSON.stringify({
        throughput_ratio_b_over_a: +throughputRatio.toFixed(3),
        p50_ratio_b_over_a: +(b.healthy_p50_ms / a.healthy_p50_ms).toFixed(2),
        p99_ratio_b_over_a: +p99Ratio.toFixed(2),
        target_throughput_within_5_percent: throughputRatio >= 0.95,
        target_p99_within_1_5x: p99Ratio <= 1.5,
      }),
    );
  } finally {
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
