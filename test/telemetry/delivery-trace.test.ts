/**
 * Observability of webhook deliveries in the real system (main.ts):
 *
 * - Trace: one booking → delivery shows every hop in the PSYNC_TRACE_EXPORT_FILE
 *   spans: the CalendarService/ConfirmBooking SERVER span → the notifications intake's
 *   CONSUMER span (trace context carried by the calendar's outbox headers through the
 *   bus) → the CLIENT egress span of the delivery attempt (trace context carried by
 *   the delivery row), one trace id, each parent link direct.
 * - Metrics: a scrape finds psync_webhook_delivery_queue_depth,
 *   psync_webhook_delivery_oldest_age_seconds (a delivery held by a hanging partner
 *   is pending) and psync_erasures_unacknowledged (an erasure nobody acknowledges
 *   escalates after DELETION_ESCALATION_SECONDS=2 and is counted).
 *
 * The partner is the HTTPS receiver of test/notifications on port 8443: this file
 * takes its turn on the port like the notifications files (the bind is the lock).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { EndpointStatus, WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import { CALENDAR_SUBJECTS, INTAKE_CONSUMER } from '../../services/notifications/intake';
import { freePort, stopAllSystems, type RunningSystem } from '../support/system';
import { SystemClients, eventDriver, eventually, startWebhookSystem, type EventDriver } from '../notifications/support/harness';
import { echoAndAccept, Receiver } from '../notifications/support/receiver';
import { createCertificates, type Certificates } from '../support/tls';

jest.setTimeout(120_000);

const ALL = [WebhookEventType.BOOKING_CONFIRMED, WebhookEventType.BOOKING_CANCELLED, WebhookEventType.USER_ERASED];
const CONFIRM_BOOKING = 'psync.calendar.v1.CalendarService/ConfirmBooking';

interface SpanLine {
  service: string;
  name: string;
  kind: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  status: { code: number };
  attributes: Record<string, unknown>;
}

let certs: Certificates;
let receiver: Receiver;
let system: RunningSystem;
let c: SystemClients;
let driver: EventDriver | null;
let metricsPort: number;
let traceDir: string;
let traceFile: string;

beforeAll(async () => {
  certs = await createCertificates();
  receiver = new Receiver(certs);
  await receiver.listen(); // waits while another test file holds port 8443
  metricsPort = await freePort();
  traceDir = mkdtempSync(join(tmpdir(), 'psync-delivery-traces-'));
  traceFile = join(traceDir, 'spans.jsonl');
  system = await startWebhookSystem(certs, {
    env: { METRICS_PORT: String(metricsPort), PSYNC_TRACE_EXPORT_FILE: traceFile, DELETION_ESCALATION_SECONDS: '2' },
  });
  c = new SystemClients(system.internalUrl);
  driver = await eventDriver(system, c);
}, 600_000);

afterAll(async () => {
  await driver?.close();
  c?.close();
  await stopAllSystems();
  await receiver?.close();
  certs?.remove();
  if (traceDir) rmSync(traceDir, { recursive: true, force: true });
});

function readSpans(): SpanLine[] {
  return existsSync(traceFile)
    ? readFileSync(traceFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as SpanLine)
    : [];
}

async function scrape(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

/** The value of the unlabelled series `name`, undefined when absent. */
function sample(text: string, name: string): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m && m[1] === name) return Number(m[2]);
  }
  return undefined;
}

/** A new workspace with an active endpoint on its own receiver path, subscribed to everything. */
async function partner(d: EventDriver) {
  const ws = await d.newWorkspace('sandbox');
  const path = `/telemetry/${ws}`;
  const res = await c.notifications.putEndpoint({ workspaceId: ws, url: `${receiver.baseUrl}${path}`, events: ALL });
  expect(res.status).toBe(EndpointStatus.ACTIVE);
  return { ws, path };
}

test('the system has an event source (calendar RPCs)', () => {
  expect(driver?.kind).toBe('calendar');
});

test('one booking → delivery: ConfirmBooking → intake consumer → egress attempt, one trace', async () => {
  const d = driver!;
  const p = await partner(d);
  const booking = await d.confirmBooking(p.ws, { guestId: `guest-${randomUUID()}`, guestName: 'Ada Lovelace' });
  const [delivery] = await receiver.waitFor(
    () => {
      const got = receiver.at(p.path, 'delivery').filter((r) => r.json?.data?.booking_reference === booking.bookingReference);
      return got.length > 0 && got;
    },
    20_000,
    'the booking.confirmed delivery',
  );
  // No trace headers go to partners.
  expect(delivery!.headers.traceparent).toBeUndefined();

  // The booking's server span: the ConfirmBooking whose trace reached the intake (the driver's probe failed).
  const find = (all: SpanLine[]) => {
    for (const server of all.filter((s) => s.kind === 'SERVER' && s.name === CONFIRM_BOOKING)) {
      const consumer = all.find(
        (s) =>
          s.kind === 'CONSUMER' &&
          s.traceId === server.traceId &&
          s.attributes['messaging.consumer.group.name'] === INTAKE_CONSUMER &&
          s.attributes['messaging.destination.name'] === CALENDAR_SUBJECTS.bookingConfirmed,
      );
      const egress = consumer && all.find((s) => s.kind === 'CLIENT' && s.name === 'POST egress' && s.traceId === server.traceId);
      if (egress) return { server, consumer: consumer, egress };
    }
    return undefined;
  };
  const hops = await eventually(async () => find(readSpans()), 15_000, 'the three spans in the trace file').catch((err) => {
    // What the file holds instead, to see which hop lost the trace.
    const brief = readSpans()
      .filter((s) => s.name !== 'POST /v1/token')
      .map((s) => `${s.service} ${s.kind} ${s.name} trace=${s.traceId.slice(0, 8)} span=${s.spanId.slice(0, 8)} parent=${s.parentSpanId?.slice(0, 8) ?? '-'}`);
    throw new Error(`${(err as Error).message}\n${brief.join('\n')}`);
  });

  // The test process sends no trace context: ConfirmBooking starts the trace.
  expect(hops.server.parentSpanId).toBeNull();
  // The calendar's outbox headers carry the server span to the bus consumer.
  expect(hops.consumer).toMatchObject({ traceId: hops.server.traceId, parentSpanId: hops.server.spanId });
  // The delivery row carries the consumer span to the attempt's egress span.
  expect(hops.egress).toMatchObject({ traceId: hops.server.traceId, parentSpanId: hops.consumer.spanId });
  expect(hops.egress.attributes).toMatchObject({ 'http.request.method': 'POST', 'server.address': 'localhost' });
  expect(hops.egress.status.code).not.toBe(2);
});

test('scrape: delivery queue depth and oldest age while a partner hangs, 0 erasures unacknowledged', async () => {
  const d = driver!;
  const p = await partner(d);
  // Challenges are echoed; deliveries hang until the attempt times out (10 s).
  receiver.on(p.path, (req) => (req.json?.event_type === 'endpoint.challenge' ? echoAndAccept(req) : { status: 200, hang: true }));
  await d.confirmBooking(p.ws, { guestId: `guest-${randomUUID()}`, guestName: 'Grace Hopper' });
  await receiver.waitFor(() => receiver.at(p.path, 'delivery').length > 0, 20_000, 'the hanging delivery');
  const text = await eventually(
    async () => {
      const t = await scrape();
      return (sample(t, 'psync_webhook_delivery_oldest_age_seconds') ?? 0) >= 1 && t;
    },
    10_000,
    'the oldest pending delivery a second old',
  );

  expect(sample(text, 'psync_webhook_delivery_queue_depth')).toBeGreaterThanOrEqual(1);
  expect(sample(text, 'psync_webhook_delivery_oldest_age_seconds')).toBeGreaterThanOrEqual(1);
  expect(sample(text, 'psync_erasures_unacknowledged')).toBe(0);
  // The per-endpoint delivery control series exist from the start (breakers open: none yet).
  expect(sample(text, 'psync_webhook_endpoints_breaker')).toBe(0);
  expect(sample(text, 'psync_webhook_endpoint_events_total')).toBeGreaterThanOrEqual(0);
});

test('scrape: an erasure unacknowledged past DELETION_ESCALATION_SECONDS counts in psync_erasures_unacknowledged', async () => {
  const d = driver!;
  const p = await partner(d);
  const guestId = `guest-${randomUUID()}`;
  await d.confirmBooking(p.ws, { guestId, guestName: 'Alan Turing' });
  await d.eraseGuest(guestId);
  await receiver.waitFor(() => receiver.at(p.path, 'delivery').some((r) => r.json?.event_type === 'user.erased'), 20_000, 'the user.erased delivery');
  // Escalated after 2 s (the sweep runs every second); nobody acknowledges it.
  const n = await eventually(
    async () => {
      const v = sample(await scrape(), 'psync_erasures_unacknowledged');
      return v !== undefined && v >= 1 && v;
    },
    15_000,
    'psync_erasures_unacknowledged >= 1',
  );
  expect(n).toBe(1);
});
