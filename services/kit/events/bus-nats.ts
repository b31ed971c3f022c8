/**
 * NATS JetStream implementation of the event bus (see bus.ts): the connection, the
 * `EventBus` over it, and publishing.
 *
 * - One stream over `<prefix>.>` (nats-stream.ts), created or brought to the
 *   configuration when the bus connects. `publish` sends the event id as `msgID`, so a
 *   relay that re-publishes after a crash (outbox-relay.ts) does not create a second
 *   copy within the stream's duplicate window.
 * - One durable pull consumer per `subscribe` (nats-consumer.ts), consumed by a
 *   NatsSubscription (nats-subscription.ts): explicit ack, unlimited redelivery, a
 *   throwing handler gets a `nak` with a growing delay.
 * - Credentials (nats-credentials.ts): user and password from the URL, or a `.creds`
 *   file (NATS_CREDS) read at every connect; the server's authorization block decides
 *   what each role may publish and subscribe to (docs/operations.md).
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { credsAuthenticator, headers as natsHeaders } from '@nats-io/nats-core';
import { JetStreamApiCodes, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { BusEvent, EventBus, SubscribeOptions, Subscription } from './bus';
import { ensureConsumer, isConsumerGone, serverSupportsMultipleFilters, type ConsumerPlace } from './nats-consumer';
import { anonymousRemoteServers, natsServers } from './nats-credentials';
import { setBusAnonymous } from '../telemetry';
import { DEFAULT_STREAM_LIMITS, apiErrorCode, ensureStream, streamConfigFor, type StreamLimits } from './nats-stream';
import { NatsSubscription, type SubscriptionContext } from './nats-subscription';
import { ConsumerWatch } from './nats-consumer-watch';
import { logEvent, type Logger } from '../base';

const PREFIX_PATTERN = /^[a-z][a-z0-9_-]*$/;
const DURABLE_PATTERN = /^[A-Za-z0-9_-]+$/;

/** The URL without user, password or token, for log lines. */
function safeUrl(url: string): string {
  return url
    .split(',')
    .map((one) => {
      try {
        const u = new URL(one.includes('://') ? one : `nats://${one}`);
        return `${u.protocol}//${u.hostname}${u.port ? `:${u.port}` : ''}`;
      } catch {
        return '[unparseable url]';
      }
    })
    .join(',');
}

/** The connection's server list and credentials: user/password from the URL, or the `.creds` file. */
function connectionAuth(url: string, credsFile: string | undefined) {
  const { servers, user, pass } = natsServers(url);
  if (credsFile) return { servers, authenticator: credsAuthenticator(() => readFileSync(credsFile)) };
  return user === undefined ? { servers } : { servers, user, pass };
}

/** Inbox subjects (request replies: JetStream acks, pulled messages) start with `_INBOX_<inboxOwner>.`. */
export function inboxPrefixOf(owner: string): string {
  return `_INBOX_${owner}`;
}

/**
 * Connects to NATS, ensures the stream exists, and returns the bus. `credsFile`: a
 * NATS `.creds` file (NATS_CREDS); otherwise credentials come from the URL, if any.
 * `inboxOwner` (the process's role) gives the connection inboxes of its own, so the
 * server can let each role subscribe only to its own replies: with the shared
 * `_INBOX.>` any client could read the messages another one pulls.
 */
export async function connectNatsBus(opts: {
  url: string;
  credsFile?: string;
  inboxOwner?: string;
  prefix: string;
  /** NATS_STREAM_*: the stream's replicas and limits, applied to an existing stream too. Unset: a new stream gets the defaults, an existing one stays as it is. */
  stream?: StreamLimits;
  log: Logger;
}): Promise<EventBus> {
  const { url, prefix } = opts;
  const log = opts.log;
  if (!PREFIX_PATTERN.test(prefix)) throw new Error(`bus: invalid subject prefix "${prefix}" (want ${PREFIX_PATTERN})`);
  const limits = opts.stream ?? DEFAULT_STREAM_LIMITS;
  const wanted = streamConfigFor(prefix, limits);
  const stream = wanted.name;
  const where = safeUrl(url);

  const nc = await connect({
    ...connectionAuth(url, opts.credsFile),
    ...(opts.inboxOwner ? { inboxPrefix: inboxPrefixOf(opts.inboxOwner) } : {}),
    name: `psync-${prefix}-${randomBytes(3).toString('hex')}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
    waitOnFirstConnect: false,
    pingInterval: 20_000,
    // nats.js otherwise builds an Error per request (every JetStream publish) only to
    // keep its stack for a later failure: 3–4 % of a busy relay's CPU (docs/performance.md,
    // Calendar). Failures still carry their message, class and cause.
    noAsyncTraces: true,
  });
  log.info({ event: logEvent('bus.opened'), backend: 'nats', server: where, server_version: nc.info?.version, stream }, 'bus: connected to NATS JetStream');
  const anonymous = anonymousRemoteServers(url, opts.credsFile);
  setBusAnonymous(anonymous.length > 0);
  if (anonymous.length > 0) {
    log.warn(
      { event: logEvent('bus.nats.anonymous'), servers: anonymous },
      'bus: connected to NATS without credentials on a non-loopback address: anyone who reaches the server can read and publish events; give NATS_URL a user or set NATS_CREDS (docs/operations.md "NATS authentication")',
    );
  }

  // Connection state changes, for operators; ends when the connection closes.
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') log.warn({ server: where }, 'bus: disconnected from NATS, reconnecting');
      else if (s.type === 'reconnect') log.info({ event: logEvent('bus.nats.reconnected'), server: where }, 'bus: reconnected to NATS');
      else if (s.type === 'error') log.warn({ server: where, status: String(s.error) }, 'bus: NATS connection error');
    }
  })().catch(() => {});

  let jsm: JetStreamManager;
  let js: JetStreamClient;
  let place: ConsumerPlace;
  try {
    jsm = await jetstreamManager(nc);
    js = jetstream(nc);
    // nats-server refuses to create such a stream outside a cluster, but (2.9) accepts
    // the update of an existing one: refuse both the same way.
    if (limits.replicas > 1 && !nc.info?.cluster) {
      throw new Error(`NATS_STREAM_REPLICAS=${limits.replicas} needs a clustered JetStream; the server at ${where} is not clustered (set it to 1)`);
    }
    const effective = await ensureStream(jsm, wanted, opts.stream !== undefined, log);
    // Durable consumers take the stream's replica count.
    place = { jsm, stream, prefix, replicas: effective.num_replicas || 1, multipleFilters: serverSupportsMultipleFilters(nc), log };
  } catch (err) {
    await nc.close().catch(() => {});
    throw err;
  }

  const subscriptions = new Set<NatsSubscription>();
  let closed = false;
  const watches = new Map<string, ConsumerWatch>();
  const context: SubscriptionContext = {
    place,
    js,
    closed: () => closed,
    stopped: (s: NatsSubscription) => subscriptions.delete(s),
    watchOf: (durable, subjects) => {
      let w = watches.get(durable);
      if (!w) watches.set(durable, (w = new ConsumerWatch(place, durable, subjects)));
      return w;
    },
  };

  return {
    kind: 'nats',

    async publish(event: BusEvent): Promise<void> {
      if (closed) throw new Error('bus: closed');
      let h;
      if (event.headers && Object.keys(event.headers).length > 0) {
        h = natsHeaders();
        for (const [k, v] of Object.entries(event.headers)) h.set(k, v);
      }
      await js.publish(`${prefix}.${event.subject}`, event.data, { msgID: event.id, headers: h });
    },

    async subscribe(sub: SubscribeOptions): Promise<Subscription> {
      if (closed) throw new Error('bus: closed');
      if (!DURABLE_PATTERN.test(sub.durable)) throw new Error(`bus: invalid durable name "${sub.durable}"`);
      if (sub.subjects.length === 0) throw new Error('bus: subscribe needs at least one subject');
      await ensureConsumer(place, sub.durable, sub.subjects);
      const s = new NatsSubscription(sub, context);
      subscriptions.add(s);
      s.start();
      return s;
    },

    async forgetConsumer(durable: string): Promise<boolean> {
      try {
        return await jsm.consumers.delete(stream, durable);
      } catch (err) {
        if (apiErrorCode(err) === JetStreamApiCodes.ConsumerNotFound) return false;
        throw err;
      }
    },

    async consumerInUse(durable: string): Promise<boolean> {
      // A subscriber renews its pull before the last expires, but read three times
      // over a second rather than trust one sample.
      for (let i = 0; i < 3; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 400));
        try {
          if ((await jsm.consumers.info(stream, durable)).num_waiting > 0) return true;
        } catch (err) {
          if (isConsumerGone(err)) return false;
          throw err;
        }
      }
      return false;
    },

    async ping(): Promise<void> {
      if (closed || nc.isClosed()) throw new Error('bus: connection closed');
      await nc.flush();
      await jsm.getAccountInfo();
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await Promise.all([...subscriptions].map((s) => s.stop()));
      if (!nc.isClosed()) {
        await nc.drain().catch((err) => log.warn({ err }, 'bus: drain failed'));
      }
      log.info({ server: where }, 'bus: NATS connection closed');
    },
  };
}
