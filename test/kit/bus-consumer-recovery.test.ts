/**
 * A durable consumer lost while its subscriber runs (services/kit/events/nats-consumer-watch.ts),
 * on a private nats-server with the documented per-role users (test/support/private-nats.ts):
 * the calendar's user publishes, notifications' user subscribes, and an `admin` user
 * (an operator's `nats` CLI) deletes the consumer, then the whole stream.
 *
 * - Deleted consumer: it is created again within seconds from its acknowledged
 *   position, with one warning and psync_bus_consumer_recreated_total 1. Every event
 *   published after the deletion is handled exactly once; events from before it at
 *   least once (the at-least-once window: acknowledged after the last position read).
 * - A consumer that cannot be recreated (its stream is gone): psync_bus_consumer_up 0
 *   and psync_bus_consumer_pending NaN at every scrape, never 0; once the stream is back
 *   the consumer is recreated from the new stream's start and new events are handled.
 *
 * The in-process bus (embedded default) has no consumer to lose: nothing to test there.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstreamManager } from '@nats-io/jetstream';
import pino from 'pino';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { EventBus, ReceivedEvent } from '../../services/kit/events';
import { connectNatsBus } from '../../services/kit/events';
import { bindMeterProvider } from '../../services/kit/telemetry';
import { natsServers } from '../../services/kit/events';
import { DEFAULT_STREAM_LIMITS, streamConfigFor } from '../../services/kit/events';
import { CALENDAR_SUBJECTS, INTAKE_CONSUMER } from '../../services/notifications/intake';
import { eventually } from '../notifications/support/harness';
import { hasNatsServer, startPrivateNats, type PrivateNats } from '../support/private-nats';
import { uniqueBusPrefix } from '../support/system';
import { firstLogEvent } from '../support/log-events';

jest.setTimeout(90_000);

const prefix = uniqueBusPrefix();
const stream = prefix.toUpperCase();
const exporter = new PrometheusExporter({ preventServerStart: true });
const logLines: Record<string, unknown>[] = [];
const log = pino(
  { level: 'info' },
  new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logLines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  }),
);
let nats: PrivateNats;
let admin: NatsConnection;
let unbind: () => void;
const buses: EventBus[] = [];
const maybe = hasNatsServer() ? describe : describe.skip;

/** One sample of `name` for the intake consumer from a scrape; NaN parses as NaN, a missing series as undefined. */
async function sample(name: string): Promise<number | undefined> {
  const { resourceMetrics } = await exporter.collect();
  const text = new PrometheusSerializer().serialize(resourceMetrics);
  const m = new RegExp(`^${name}\\{[^}]*durable="${INTAKE_CONSUMER}"[^}]*\\} (\\S+)`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

const event = () => ({ id: randomUUID(), subject: CALENDAR_SUBJECTS.bookingConfirmed, data: new Uint8Array([1]) });

maybe('a durable consumer lost while subscribed (private nats-server)', () => {
  let calendar: EventBus;
  const handled = new Map<string, number>();

  beforeAll(async () => {
    nats = await startPrivateNats(prefix);
    const { servers, user, pass } = natsServers(nats.adminUrl);
    admin = await connect({ servers, user, pass });
    unbind = bindMeterProvider(new MeterProvider({ readers: [exporter] }));
    calendar = await connectNatsBus({ url: nats.urlFor('calendar'), inboxOwner: 'calendar', prefix, log });
    const notifications = await connectNatsBus({ url: nats.urlFor('notifications'), inboxOwner: 'notifications', prefix, log });
    buses.push(calendar, notifications);
    await notifications.subscribe({
      durable: INTAKE_CONSUMER,
      subjects: Object.values(CALENDAR_SUBJECTS),
      handler: async (e: ReceivedEvent) => void handled.set(e.id, (handled.get(e.id) ?? 0) + 1),
    });
  }, 30_000);

  afterAll(async () => {
    await Promise.allSettled(buses.map((b) => b.close()));
    await admin?.close();
    unbind?.();
    await nats?.stop();
  });

  const publish = async (n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const e = event();
      ids.push(e.id);
      await calendar.publish(e);
    }
    return ids;
  };

  test('deleted: recreated within seconds from its position; later events handled once each, none skipped; counted and logged', async () => {
    const before = await publish(20);
    await eventually(async () => before.every((id) => handled.has(id)), 15_000, 'the first events handled');
    expect(await sample('psync_bus_consumer_up')).toBe(1);

    await eventually(async () => (await sample('psync_bus_consumer_pending')) === 0, 15_000, 'every ack recorded');
    const jsm = await jetstreamManager(admin);
    const deletedAt = Date.now();
    // nats-server 2.9 may answer "unlinkat …: directory not empty" after removing the
    // consumer (its store directory raced a write): what counts is that it is gone.
    await jsm.consumers.delete(stream, INTAKE_CONSUMER).catch((err: Error) => expect(err.message).toMatch(/unlinkat/));
    const after = await publish(20);

    const recreated = await eventually(async () => firstLogEvent(logLines, 'bus.consumer.recreated'), 15_000, 'the recreation');
    expect(Date.now() - deletedAt).toBeLessThan(10_000);
    expect(recreated).toMatchObject({ level: 40, durable: INTAKE_CONSUMER, stream });
    expect(['consume', 'check']).toContain(recreated.noticed_by);
    await eventually(async () => after.every((id) => handled.has(id)), 15_000, 'every event published after the deletion handled');
    expect(after.map((id) => handled.get(id))).toEqual(after.map(() => 1));
    expect(before.every((id) => (handled.get(id) ?? 0) >= 1)).toBe(true);
    // It resumed from a position, not from the stream's start (which would repeat all 20).
    expect(typeof recreated.from_stream_seq).toBe('number');
    expect((await jsm.consumers.info(stream, INTAKE_CONSUMER)).config.opt_start_seq).toBe(recreated.from_stream_seq);

    expect(await sample('psync_bus_consumer_recreated_total')).toBe(1);
    expect(await sample('psync_bus_consumer_up')).toBe(1);
    await eventually(async () => (await sample('psync_bus_consumer_pending')) === 0, 15_000, 'pending back to 0');
  });

  test('cannot be recreated (its stream is gone): up 0 and pending NaN, never 0; back with the stream, from its start', async () => {
    const jsm = await jetstreamManager(admin);
    await jsm.streams.delete(stream);
    await eventually(async () => (await sample('psync_bus_consumer_up')) === 0, 15_000, 'psync_bus_consumer_up 0');
    for (let i = 0; i < 3; i++) {
      expect(await sample('psync_bus_consumer_up')).toBe(0);
      expect(await sample('psync_bus_consumer_pending')).toBeNaN();
    }

    await jsm.streams.add(streamConfigFor(prefix, DEFAULT_STREAM_LIMITS));
    const fresh = await publish(3);
    await eventually(async () => fresh.every((id) => handled.get(id) === 1), 20_000, 'events of the new stream handled');
    await eventually(async () => (await sample('psync_bus_consumer_up')) === 1, 15_000, 'psync_bus_consumer_up 1');
    expect(await sample('psync_bus_consumer_recreated_total')).toBe(2);
  });
});
