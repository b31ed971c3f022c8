/**
 * Benchmark of webhook deliveries (issue 6 item 8; results in docs/notifications.md):
 *
 * 1. Latency: a booking confirmed through the calendar's ConfirmBooking RPC → the
 *    signed delivery received by a local HTTPS partner; p50 / p99 over sequential
 *    bookings (one at a time, so each measures the whole path unloaded).
 * 2. Throughput: BookingConfirmed events published on the system's NATS stream as fast
 *    as possible (as the calendar's outbox relay would) for ENDPOINTS partners; the
 *    rate at which deliveries reach the receiver, from the first to the last.
 *
 *   DATABASE_URL=… NATS_URL=… npx tsx test/notifications/bench-deliveries.ts [bookings] [events] [endpoints]
 *
 * Without NATS_URL only the latency part runs (the embedded bus lives inside the system).
 */
import { randomUUID } from 'node:crypto';
import { WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import { stopAllSystems } from '../support/system';
import { SystemClients, eventDriver, startWebhookSystem } from './support/harness';
import { echoAndAccept, Receiver } from './support/receiver';
import { createCertificates } from '../support/tls';
import { connectNatsBus } from '../../services/kit/bus-nats';
import { testLogger } from '../support/bus';
import { create, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { BookingConfirmedSchema } from '../../gen/psync/calendar/v1/events_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { CALENDAR_SUBJECTS } from '../../services/notifications/intake';

const [bookings = 300, events = 5000, endpoints = 10] = process.argv.slice(2).map(Number);

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  const certs = await createCertificates();
  const receiver = new Receiver(certs);
  await receiver.listen();
  const system = await startWebhookSystem(certs, {
    env: process.env.BENCH_PROFILE_DIR ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}` } : {},
  });
  const c = new SystemClients(system.internalUrl);
  if (process.env.BENCH_VERBOSE) console.error(`system database: ${system.env.DATABASE_URL ?? 'embedded'}`);
  try {
    const d = await eventDriver(system, c);
    if (!d) throw new Error('no event source');
    const ALL = [WebhookEventType.BOOKING_CONFIRMED, WebhookEventType.BOOKING_CANCELLED, WebhookEventType.USER_ERASED];

    // 1. Latency through the calendar.
    const ws = await d.newWorkspace();
    const path = `/bench/${ws}`;
    await c.notifications.putEndpoint({ workspaceId: ws, url: `${receiver.baseUrl}${path}`, events: ALL });
    const latencies: number[] = [];
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
      }),
    );
    await d.close();

    // 2. Throughput from the bus.
    if (!system.env.NATS_URL) return;
    const bus = await connectNatsBus({ url: system.env.NATS_URL, prefix: system.env.BUS_PREFIX!, log: testLogger() });
    const workspaces: string[] = [];
    for (let i = 0; i < endpoints; i++) {
      const w = randomUUID();
      receiver.on(`/bench/${w}`, echoAndAccept);
      await c.notifications.putEndpoint({ workspaceId: w, url: `${receiver.baseUrl}/bench/${w}`, events: ALL });
      workspaces.push(w);
    }
    const start = receiver.received.length;
    const t0 = performance.now();
    const publishes: Promise<void>[] = [];
    for (let i = 0; i < events; i++) {
      const id = randomUUID();
      const msg = create(BookingConfirmedSchema, {
        eventId: id,
        occurredAt: timestampFromDate(new Date()),
        workspaceId: workspaces[i % endpoints]!,
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
      publishes.push(bus.publish({ id, subject: CALENDAR_SUBJECTS.bookingConfirmed, data: toBinary(BookingConfirmedSchema, msg) }));
      if (publishes.length >= 500) await Promise.all(publishes.splice(0));
    }
    await Promise.all(publishes);
    const published = performance.now();
    await receiver.waitFor(() => receiver.received.length - start >= events, 300_000, `${events} deliveries`);
    const seconds = (performance.now() - t0) / 1000;
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
