/**
 * The stream's replication and retention (NATS_STREAM_REPLICAS, NATS_STREAM_MAX_AGE,
 * NATS_STREAM_MAX_BYTES): a new stream gets them; a stream an older release
 * created (one replica, no limits) is brought to them in place at start-up, keeping its
 * events, with one log line naming each change; durable consumers take the stream's
 * replica count; a NATS user the server does not let update the stream (the chart's
 * example authorization: only calendar may) starts anyway, with a warning.
 *
 * Needs NATS_URL (fresh stream per test, deleted afterwards) and, for the permission
 * case, the `nats-server` binary (a private server; never the machine's shared one).
 */
import { connect } from '@nats-io/transport-node';
import { nanos, type NatsConnection } from '@nats-io/nats-core';
import { AckPolicy, DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import pino from 'pino';
import type { EventBus } from '../../services/kit/events';
import { connectNatsBus, inboxPrefixOf } from '../../services/kit/events';
import type { StreamLimits } from '../../services/kit/events';
import type { Logger } from '../../services/kit/base';
import { natsServers } from '../../services/kit/events';
import { hasNatsServer, startPrivateNats, type PrivateNats } from '../support/private-nats';
import { uniqueBusPrefix } from '../support/system';
import { firstLogEvent, logEvents } from '../support/log-events';

const NATS_URL = process.env.NATS_URL;
const onNats = NATS_URL ? describe : describe.skip;

const DAY_MS = 86_400_000;
const MIB = 1024 * 1024;

/** A logger that keeps every line (info and above) as a parsed object. */
function recordingLogger(): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { log, lines };
}

/** The stream as releases before these settings created it: one replica, no max_age, no max_bytes. */
async function createAsOlderRelease(nc: NatsConnection, prefix: string): Promise<void> {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({
    name: prefix.toUpperCase(),
    subjects: [`${prefix}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    duplicate_window: nanos(2 * 60 * 1000),
  });
}

onNats('the stream on NATS_URL (fresh prefix per test)', () => {
  let nc: NatsConnection;
  const buses: EventBus[] = [];
  const prefixes: string[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: NATS_URL!.split(',') });
  });

  afterEach(async () => {
    await Promise.allSettled(buses.splice(0).map((b) => b.close()));
    const jsm = await jetstreamManager(nc);
    for (const p of prefixes.splice(0)) await jsm.streams.delete(p.toUpperCase()).catch(() => false);
  });

  afterAll(async () => {
    await nc?.close();
  });

  async function bus(prefix: string, log: Logger, stream?: StreamLimits): Promise<EventBus> {
    const b = await connectNatsBus({ url: NATS_URL!, prefix, log, stream });
    buses.push(b);
    return b;
  }

  function fresh(): string {
    const p = uniqueBusPrefix();
    prefixes.push(p);
    return p;
  }

  test('a new stream gets the configured replicas, max_age and max_bytes', async () => {
    const prefix = fresh();
    const { log, lines } = recordingLogger();
    await bus(prefix, log, { replicas: 1, maxAgeMs: 3 * DAY_MS, maxBytes: 64 * MIB });
    const { config } = await (await jetstreamManager(nc)).streams.info(prefix.toUpperCase());
    expect(config).toMatchObject({ num_replicas: 1, max_age: nanos(3 * DAY_MS), max_bytes: 64 * MIB });
    expect(firstLogEvent(lines, 'bus.stream.created')).toMatchObject({ num_replicas: 1, max_age: '3d', max_bytes: String(64 * MIB) });
  });

  test("an older release's stream is brought to the limits in place, keeping its events, with one log line", async () => {
    const prefix = fresh();
    await createAsOlderRelease(nc, prefix);
    const js = jetstream(nc);
    for (let i = 0; i < 3; i++) await js.publish(`${prefix}.before.upgrade`, new Uint8Array([i]));

    const { log, lines } = recordingLogger();
    await bus(prefix, log, { replicas: 1, maxAgeMs: 7 * DAY_MS, maxBytes: 10 * 1024 * MIB });
    const info = await (await jetstreamManager(nc)).streams.info(prefix.toUpperCase());
    expect(info.config).toMatchObject({ num_replicas: 1, max_age: nanos(7 * DAY_MS), max_bytes: 10 * 1024 * MIB, subjects: [`${prefix}.>`] });
    expect(info.state.messages).toBe(3);
    const updated = logEvents(lines, 'bus.stream.updated');
    expect(updated).toHaveLength(1);
    expect(updated[0]!.changes).toEqual(['max_age unlimited→7d', `max_bytes unlimited→${10 * 1024 * MIB}`]);

    // The next start finds it as configured: no update, no line.
    const again = recordingLogger();
    await bus(prefix, again.log, { replicas: 1, maxAgeMs: 7 * DAY_MS, maxBytes: 10 * 1024 * MIB });
    expect(logEvents(again.lines, 'bus.stream.updated')).toEqual([]);

    // A later change of the settings (shorter retention, no size limit) is applied the same way.
    const changed = recordingLogger();
    await bus(prefix, changed.log, { replicas: 1, maxAgeMs: 72 * 3_600_000, maxBytes: -1 });
    expect(firstLogEvent(changed.lines, 'bus.stream.updated')?.changes).toEqual(['max_age 7d→3d', `max_bytes ${10 * 1024 * MIB}→unlimited`]);
  });

  test('without stream settings (tools, tests) an existing stream keeps its limits', async () => {
    const prefix = fresh();
    await createAsOlderRelease(nc, prefix);
    const { log, lines } = recordingLogger();
    await bus(prefix, log);
    const { config } = await (await jetstreamManager(nc)).streams.info(prefix.toUpperCase());
    expect(config.max_age).toBe(0);
    expect(config.max_bytes).toBe(-1);
    expect(logEvents(lines, 'bus.stream.updated')).toEqual([]);
  });

  test("durable consumers take the stream's replica count; an older release's consumer (0: inherit) is left alone on R1", async () => {
    const prefix = fresh();
    const jsm = await jetstreamManager(nc);
    await createAsOlderRelease(nc, prefix);
    await jsm.consumers.add(prefix.toUpperCase(), { durable_name: 'older', ack_policy: AckPolicy.Explicit, filter_subject: `${prefix}.a` });
    const { log, lines } = recordingLogger();
    const b = await bus(prefix, log, { replicas: 1, maxAgeMs: DAY_MS, maxBytes: -1 });
    await b.subscribe({ durable: 'newer', subjects: ['b'], handler: async () => {} });
    await b.subscribe({ durable: 'older', subjects: ['a'], handler: async () => {} });
    expect((await jsm.consumers.info(prefix.toUpperCase(), 'newer')).config.num_replicas).toBe(1);
    expect((await jsm.consumers.info(prefix.toUpperCase(), 'older')).config.num_replicas ?? 0).toBe(0);
    expect(logEvents(lines, 'bus.consumer.updated')).toEqual([]);
  });

  test('NATS_STREAM_REPLICAS above 1 on a server that is not clustered: start-up fails naming the setting, and the stream stays as it is', async () => {
    const prefix = fresh();
    await expect(bus(prefix, recordingLogger().log, { replicas: 3, maxAgeMs: DAY_MS, maxBytes: -1 })).rejects.toThrow(/NATS_STREAM_REPLICAS=3 needs a clustered JetStream/);
    // Also for an older release's stream (nats-server 2.9 would accept that update).
    await createAsOlderRelease(nc, prefix);
    await expect(bus(prefix, recordingLogger().log, { replicas: 3, maxAgeMs: DAY_MS, maxBytes: -1 })).rejects.toThrow(/NATS_STREAM_REPLICAS=3 needs a clustered JetStream/);
    expect((await (await jetstreamManager(nc)).streams.info(prefix.toUpperCase())).config.num_replicas).toBe(1);
  });
});

(hasNatsServer() ? describe : describe.skip)('a NATS user without permission to update the stream (private nats-server, only calendar may)', () => {
  const prefix = uniqueBusPrefix();
  let nats: PrivateNats;
  const buses: EventBus[] = [];

  beforeAll(async () => {
    nats = await startPrivateNats(prefix, {}, { mayUpdateStream: ['calendar'] });
  }, 30_000);

  afterAll(async () => {
    await Promise.allSettled(buses.map((b) => b.close()));
    await nats?.stop();
  });

  test('catalog starts on the old stream with a warning; calendar then updates it', async () => {
    const admin = await connect({ ...natsServers(nats.urlFor('calendar')), inboxPrefix: inboxPrefixOf('calendar') });
    try {
      await createAsOlderRelease(admin, prefix);
    } finally {
      await admin.close();
    }
    const limits: StreamLimits = { replicas: 1, maxAgeMs: 7 * DAY_MS, maxBytes: 100 * MIB };

    const catalog = recordingLogger();
    buses.push(await connectNatsBus({ url: nats.urlFor('catalog'), inboxOwner: 'catalog', prefix, stream: limits, log: catalog.log }));
    const warning = firstLogEvent(catalog.lines, 'bus.stream.update_denied');
    expect(warning).toMatchObject({ level: 40, changes: ['max_age unlimited→7d', `max_bytes unlimited→${100 * MIB}`] });

    const calendar = recordingLogger();
    buses.push(await connectNatsBus({ url: nats.urlFor('calendar'), inboxOwner: 'calendar', prefix, stream: limits, log: calendar.log }));
    expect(firstLogEvent(calendar.lines, 'bus.stream.updated')?.changes).toEqual(['max_age unlimited→7d', `max_bytes unlimited→${100 * MIB}`]);
  }, 30_000);
});
