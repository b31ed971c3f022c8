/**
 * A partner is told only what the calendar holds, once per fact (docs/notifications.md
 * "Events are proven by their owner" and "Once per fact"; docs/security/threat-model.md).
 *
 * The system runs on a private nats-server without credentials (the chart's anonymous
 * default, overridden), on real PostgreSQL when DATABASE_URL is set and the embedded
 * one otherwise. A plain NATS client — anyone on that network — takes the calendar's
 * real events from the stream and publishes them again under new event ids, altered or
 * not:
 * - a real BookingConfirmed with check_in_time `03:00` and a check_out_time carrying
 *   markup and a phone number: refused (`mismatch`);
 * - the same booking's unchanged BookingConfirmed, before and after its cancellation:
 *   refused (`replayed`), so booking.confirmed never follows booking.cancelled;
 * - a real BookingCancelled with occurred_at in 2033: refused (`mismatch`); unchanged:
 *   refused (`replayed`);
 * - a real UserErased again: refused (`replayed`); one deletion request stays.
 * The partner receives exactly one delivery per fact, each field as the calendar holds
 * it; the events feed holds the same three events; every refusal is counted by reason.
 *
 * Then the same client deletes the durable consumer notifications reads with (as an
 * anonymous `jsm.consumers.delete` could): it is recreated from its acknowledged
 * position and counted, and a booking confirmed afterwards is still delivered, once.
 */
import { randomUUID } from 'node:crypto';
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { BookingCancelledSchema, BookingConfirmedSchema, UserErasedSchema } from '../../gen/psync/calendar/v1/events_pb';
import { WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import { CALENDAR_SUBJECTS, INTAKE_CONSUMER } from '../../services/notifications/intake';
import { hasNatsServer } from '../support/private-nats';
import { startPlainNats, type PlainNats } from '../support/plain-nats';
import { freePort, stopAllSystems, uniqueBusPrefix, type RunningSystem } from '../support/system';
import { createCertificates, type Certificates } from '../support/tls';
import { eventDriver, eventually, psync, startWebhookSystem, SystemClients, type EventDriver } from './support/harness';
import { Receiver } from './support/receiver';

const ALL = [WebhookEventType.BOOKING_CONFIRMED, WebhookEventType.BOOKING_CANCELLED, WebhookEventType.USER_ERASED];

let certs: Certificates;
let receiver: Receiver;
let nats: PlainNats;
let system: RunningSystem;
let c: SystemClients;
let d: EventDriver;
let nc: NatsConnection;
let metricsPort: number;
const prefix = uniqueBusPrefix();
const STREAM = prefix.toUpperCase().replace(/-/g, '_');

(hasNatsServer() ? describe : describe.skip)('forged and replayed events on an unauthenticated NATS', () => {
  beforeAll(async () => {
    certs = await createCertificates();
    receiver = new Receiver(certs);
    await receiver.listen();
    nats = await startPlainNats();
    metricsPort = await freePort();
    system = await startWebhookSystem(certs, { env: { NATS_URL: nats.url, BUS_PREFIX: prefix, METRICS_PORT: String(metricsPort) } });
    c = new SystemClients(system.internalUrl);
    d = await eventDriver(system, c);
    nc = await connect({ servers: nats.url });
  }, 600_000);

  afterAll(async () => {
    await nc?.close();
    await d?.close();
    c?.close();
    await stopAllSystems();
    await nats?.stop();
    await receiver?.close();
    certs?.remove();
  });

  /** The sum of the samples of `name` for notifications' durable consumer, from the system's /metrics. */
  async function consumerMetric(name: string): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    return text
      .split('\n')
      .filter((l) => l.startsWith(`${name}{`) && l.includes(`durable="${INTAKE_CONSUMER}"`))
      .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  }

  /** psync_bus_events_refused_total for `event_type/reason`. */
  async function refused(key: string): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    let n = 0;
    for (const line of text.split('\n')) {
      if (!line.startsWith('psync_bus_events_refused_total{')) continue;
      const k = `${/event_type="([^"]*)"/.exec(line)?.[1]}/${/reason="([^"]*)"/.exec(line)?.[1]}`;
      if (k === key) n += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return n;
  }

  /** The calendar's last message on `subject` in the stream, decoded. */
  async function lastReal<D extends DescMessage>(schema: D, subject: string): Promise<MessageShape<D>> {
    const jsm = await jetstreamManager(nc);
    const m = await jsm.streams.getMessage(STREAM, { last_by_subj: `${prefix}.${subject}` });
    if (!m) throw new Error(`no message on ${prefix}.${subject}`);
    return fromBinary(schema, m.data);
  }

  /** Publishes `message` (under a new event id) as a plain client, and waits until its refusal `key` was counted. */
  async function publishRefused<D extends DescMessage>(schema: D, subject: string, message: MessageShape<D> & { eventId: string }, key: string): Promise<void> {
    const before = await refused(key);
    const eventId = randomUUID();
    const forged = create(schema, { ...message, eventId } as never);
    await jetstream(nc).publish(`${prefix}.${subject}`, toBinary(schema, forged), { msgID: eventId });
    await eventually(async () => (await refused(key)) > before, 30_000, `refusal ${key}`);
  }

  const deliveries = (path: string, kind?: string) => receiver.at(path, 'delivery').filter((x) => kind === undefined || x.json?.event_type === kind);

  test('each forgery and replay is dropped and counted; the partner is told each fact once, as the calendar holds it', async () => {
    const ws = await d.newWorkspace();
    const path = `/forgeries/${ws}`;
    await c.notifications.putEndpoint({ workspaceId: ws, url: `${receiver.baseUrl}${path}`, events: ALL });
    const guestId = `guest-${randomUUID()}`;
    const booking = await d.confirmBooking(ws, { guestId, guestName: 'Ada Lovelace' });
    const [confirmed] = await receiver.waitFor(() => deliveries(path, 'booking.confirmed').length > 0 && deliveries(path, 'booking.confirmed'));
    const held = (await c.calendar.getBooking({ bookingReference: booking.bookingReference })).booking!;
    expect(held.checkInTime).toMatch(/^\d\d:\d\d$/);
    expect(confirmed!.json.data).toMatchObject({
      booking_reference: booking.bookingReference,
      check_in_time: held.checkInTime,
      check_out_time: held.checkOutTime,
      guest_name: 'Ada Lovelace',
    });

    // Altered: other times, markup and a phone number where the check-out time goes.
    const realConfirmed = await lastReal(BookingConfirmedSchema, CALENDAR_SUBJECTS.bookingConfirmed);
    expect(realConfirmed.bookingReference).toBe(booking.bookingReference);
    await publishRefused(
      BookingConfirmedSchema,
      CALENDAR_SUBJECTS.bookingConfirmed,
      { ...realConfirmed, checkInTime: '03:00', checkOutTime: '<img src=x onerror=alert(1)> call +1-555-0100 for the door code' },
      'booking.confirmed/mismatch',
    );
    // Unchanged, under a new id.
    await publishRefused(BookingConfirmedSchema, CALENDAR_SUBJECTS.bookingConfirmed, realConfirmed, 'booking.confirmed/replayed');

    await d.cancelBooking(ws, booking.bookingReference, 'guest');
    await receiver.waitFor(() => deliveries(path, 'booking.cancelled').length > 0);
    // The confirmation again after the cancellation: the partner would close the nights again.
    await publishRefused(BookingConfirmedSchema, CALENDAR_SUBJECTS.bookingConfirmed, realConfirmed, 'booking.confirmed/replayed');
    const realCancelled = await lastReal(BookingCancelledSchema, CALENDAR_SUBJECTS.bookingCancelled);
    await publishRefused(
      BookingCancelledSchema,
      CALENDAR_SUBJECTS.bookingCancelled,
      { ...realCancelled, occurredAt: timestampFromDate(new Date('2033-01-01T00:00:00Z')) },
      'booking.cancelled/mismatch',
    );
    await publishRefused(BookingCancelledSchema, CALENDAR_SUBJECTS.bookingCancelled, realCancelled, 'booking.cancelled/replayed');

    await d.eraseGuest(guestId);
    await receiver.waitFor(() => deliveries(path, 'user.erased').length > 0);
    const realErased = await lastReal(UserErasedSchema, CALENDAR_SUBJECTS.userErased);
    await publishRefused(UserErasedSchema, CALENDAR_SUBJECTS.userErased, realErased, 'user.erased/replayed');
    await publishRefused(UserErasedSchema, CALENDAR_SUBJECTS.userErased, { ...realErased, bookingReferences: [] }, 'user.erased/malformed');

    // Exactly one delivery per fact, in the calendar's order, each as the calendar holds it.
    expect(deliveries(path).map((x) => x.json.event_type)).toEqual(['booking.confirmed', 'booking.cancelled', 'user.erased']);
    const [, cancelled, erased] = deliveries(path);
    const after = (await c.calendar.getBooking({ bookingReference: booking.bookingReference })).booking!;
    expect(cancelled!.json.occurred_at).toBe(new Date(Number(after.cancelledAt!.seconds) * 1000 + after.cancelledAt!.nanos / 1e6).toISOString());
    expect(erased!.json.data).toEqual({ booking_references: [booking.bookingReference], provider_ids: [] });
    const ids = deliveries(path).map((x) => x.json.event_id);
    expect(new Set(ids).size).toBe(3);
    // The events feed holds the same three events, and one deletion request is open.
    const feed = await c.notifications.listEvents({ workspaceId: ws });
    expect(feed.events.map((e) => JSON.parse(e.envelope).event_id)).toEqual(ids);
    const requests = await psync(system, ['deletion-requests', 'list', '--workspace', ws]);
    expect(requests.items).toHaveLength(1);
  }, 300_000);

  test('a deleted durable consumer heals itself: a booking confirmed afterwards is delivered once, the recreation counted', async () => {
    const ws = await d.newWorkspace();
    const path = `/consumer-lost/${ws}`;
    await c.notifications.putEndpoint({ workspaceId: ws, url: `${receiver.baseUrl}${path}`, events: ALL });
    const before = await consumerMetric('psync_bus_consumer_recreated_total');
    // nats-server 2.9 may answer "unlinkat …: directory not empty" after removing it: what counts is that it is gone.
    await (await jetstreamManager(nc)).consumers.delete(STREAM, INTAKE_CONSUMER).catch((err: Error) => expect(err.message).toMatch(/unlinkat/));
    const booking = await d.confirmBooking(ws, { guestId: `guest-${randomUUID()}`, guestName: 'Grace Hopper' });
    const [delivered] = await receiver.waitFor(() => deliveries(path, 'booking.confirmed').length > 0 && deliveries(path, 'booking.confirmed'), 60_000, 'the delivery');
    expect(delivered!.json.data.booking_reference).toBe(booking.bookingReference);
    expect(await consumerMetric('psync_bus_consumer_recreated_total')).toBeGreaterThan(before);
    expect(await consumerMetric('psync_bus_consumer_up')).toBe(1);
    expect(deliveries(path)).toHaveLength(1);
  }, 120_000);
});
