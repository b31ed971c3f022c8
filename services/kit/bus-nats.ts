/**
 * NATS JetStream implementation of the event bus (see bus.ts).
 *
 * - One stream `<PREFIX>` (prefix upper-cased) over `<prefix>.>`, file storage, a
 *   2-minute duplicate window: `publish` sends the event id as `msgID`, so a relay that
 *   re-publishes after a crash (outbox.ts) does not create a second copy.
 * - One durable pull consumer per `subscribe`, explicit ack, unlimited redelivery;
 *   a throwing handler gets a `nak` with a growing delay.
 * - Stream and consumers are created idempotently: several replicas may start at the
 *   same time and race to create them.
 * - Credentials (nats-credentials.ts): user and password from the URL, or a `.creds`
 *   file (NATS_CREDS) read at every connect; the server's authorization block decides
 *   what each role may publish and subscribe to (docs/operations.md).
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import {
  AckPolicy,
  ConsumerMessages,
  DeliverPolicy,
  DiscardPolicy,
  Events,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
  NatsConnection,
  NatsError,
  RetentionPolicy,
  StorageType,
  StreamConfig,
  connect,
  credsAuthenticator,
  headers as natsHeaders,
  nanos,
} from 'nats';
import type { BusEvent, EventBus, ReceivedEvent, SubscribeOptions, Subscription } from './bus';
import { subjectMatches } from './bus-memory';
import { natsServers } from './nats-credentials';
import type { Logger } from './logger';
import { inConsumerSpan } from './telemetry';
import { backoffMs, Worker, type RoundResult } from './worker';

/** JetStream API error codes we react to (nats-server `server/errors.json`). */
const JS_STREAM_NOT_FOUND = 10059;
const JS_STREAM_NAME_IN_USE = 10058;
const JS_CONSUMER_NOT_FOUND = 10014;
const JS_CONSUMER_NAME_IN_USE = 10013;
const JS_CONSUMER_EXISTS = 10148;

const PREFIX_PATTERN = /^[a-z][a-z0-9_-]*$/;
const DURABLE_PATTERN = /^[A-Za-z0-9_-]+$/;
const DUPLICATE_WINDOW_MS = 2 * 60 * 1000;
const ACK_WAIT_MS = 30_000;
/** How often a long-running handler tells the server it is still working (< ack_wait). */
const WORKING_INTERVAL_MS = 10_000;
/** Messages buffered per pull; small, because a stopping subscription naks what it holds. */
const PULL_BATCH = 32;

/** Redelivery delay after the n-th failed delivery: 250 ms, 500 ms, 1 s … capped at 30 s, with jitter. */
export function redeliveryDelayMs(deliveryCount: number): number {
  return backoffMs(deliveryCount, { baseMs: 250, maxMs: 30_000 });
}

function apiErrorCode(err: unknown): number | undefined {
  if (err instanceof NatsError) return err.api_error?.err_code;
  return undefined;
}

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

/** nats-server version as [major, minor]; filter_subjects (several filters) needs 2.10. */
function serverSupportsMultipleFilters(nc: NatsConnection): boolean {
  const m = /^(\d+)\.(\d+)/.exec(nc.info?.version ?? '');
  if (!m) return false;
  const major = Number(m[1]);
  const minor = Number(m[2]);
  return major > 2 || (major === 2 && minor >= 10);
}

/** Ensures the stream exists with our configuration; safe when replicas race. */
async function ensureStream(jsm: JetStreamManager, cfg: Partial<StreamConfig> & { name: string }, log: Logger): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    let info;
    try {
      info = await jsm.streams.info(cfg.name);
    } catch (err) {
      if (apiErrorCode(err) !== JS_STREAM_NOT_FOUND) throw err;
      try {
        await jsm.streams.add(cfg);
        log.info({ stream: cfg.name, subjects: cfg.subjects }, 'bus: stream created');
        return;
      } catch (addErr) {
        // Another replica created it between our info and add: look again.
        if (apiErrorCode(addErr) === JS_STREAM_NAME_IN_USE) continue;
        throw addErr;
      }
    }
    const have = info.config;
    const same = JSON.stringify([...(have.subjects ?? [])].sort()) === JSON.stringify([...(cfg.subjects ?? [])].sort()) && have.duplicate_window === cfg.duplicate_window;
    if (have.storage !== cfg.storage) {
      log.warn({ stream: cfg.name, storage: have.storage }, 'bus: stream storage differs from the configured one and cannot be changed in place');
    }
    if (!same) {
      await jsm.streams.update(cfg.name, { ...have, subjects: cfg.subjects, duplicate_window: cfg.duplicate_window });
      log.info({ stream: cfg.name }, 'bus: stream configuration updated');
    }
    return;
  }
  throw new Error(`bus: could not create or read stream ${cfg.name}`);
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
export async function connectNatsBus(opts: { url: string; credsFile?: string; inboxOwner?: string; prefix: string; log: Logger }): Promise<EventBus> {
  const { url, prefix } = opts;
  const log = opts.log;
  if (!PREFIX_PATTERN.test(prefix)) throw new Error(`bus: invalid subject prefix "${prefix}" (want ${PREFIX_PATTERN})`);
  const stream = prefix.toUpperCase().replace(/-/g, '_');
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
    // Calendar). Failures still carry their message and code.
    noAsyncTraces: true,
  });
  log.info({ backend: 'nats', server: where, server_version: nc.info?.version, stream }, 'bus: connected to NATS JetStream');

  // Connection state changes, for operators; ends when the connection closes.
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === Events.Disconnect) log.warn({ server: where }, 'bus: disconnected from NATS, reconnecting');
      else if (s.type === Events.Reconnect) log.info({ server: where }, 'bus: reconnected to NATS');
      else if (s.type === Events.Error) log.warn({ server: where, status: String(s.data) }, 'bus: NATS connection error');
    }
  })().catch(() => {});

  let jsm: JetStreamManager;
  let js: JetStreamClient;
  try {
    jsm = await nc.jetstreamManager();
    js = nc.jetstream();
    await ensureStream(
      jsm,
      {
        name: stream,
        subjects: [`${prefix}.>`],
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.Old,
        duplicate_window: nanos(DUPLICATE_WINDOW_MS),
      },
      log,
    );
  } catch (err) {
    await nc.close().catch(() => {});
    throw err;
  }

  const multipleFilters = serverSupportsMultipleFilters(nc);
  const subscriptions = new Set<NatsSubscription>();
  let closed = false;

  async function ensureConsumer(durable: string, subjects: string[]): Promise<void> {
    const full = subjects.map((s) => `${prefix}.${s}`);
    // One subject: filter_subject (any server). Several: filter_subjects on 2.10+,
    // otherwise no server filter and the loop drops what does not match.
    const filter: { filter_subject?: string; filter_subjects?: string[] } = full.length === 1 ? { filter_subject: full[0] } : multipleFilters ? { filter_subjects: full } : {};
    const wanted = {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(ACK_WAIT_MS),
      max_deliver: -1,
      max_ack_pending: 1000,
      ...filter,
    };
    for (let attempt = 0; attempt < 5; attempt++) {
      let info;
      try {
        info = await jsm.consumers.info(stream, durable);
      } catch (err) {
        if (apiErrorCode(err) !== JS_CONSUMER_NOT_FOUND) throw err;
        try {
          await jsm.consumers.add(stream, wanted);
          log.info({ stream, durable, subjects }, 'bus: durable consumer created');
          return;
        } catch (addErr) {
          const code = apiErrorCode(addErr);
          if (code === JS_CONSUMER_EXISTS || code === JS_CONSUMER_NAME_IN_USE) continue;
          throw addErr;
        }
      }
      const have = info.config;
      const haveFilters = [...(have.filter_subjects ?? (have.filter_subject ? [have.filter_subject] : []))].sort();
      const wantFilters = [...(wanted.filter_subjects ?? (wanted.filter_subject ? [wanted.filter_subject] : []))].sort();
      const same =
        JSON.stringify(haveFilters) === JSON.stringify(wantFilters) &&
        have.ack_wait === wanted.ack_wait &&
        (have.max_deliver ?? -1) === wanted.max_deliver &&
        have.ack_policy === wanted.ack_policy;
      if (!same) {
        // A changed filter keeps the consumer's position (updating filters needs nats-server 2.10).
        await jsm.consumers.update(stream, durable, {
          ack_wait: wanted.ack_wait,
          max_deliver: wanted.max_deliver,
          ...(wanted.filter_subjects ? { filter_subjects: wanted.filter_subjects, filter_subject: undefined } : {}),
          ...(wanted.filter_subject !== undefined ? { filter_subject: wanted.filter_subject } : {}),
        });
        log.info({ stream, durable, subjects }, 'bus: durable consumer updated');
      }
      return;
    }
    throw new Error(`bus: could not create or read consumer ${durable}`);
  }

  /**
   * One durable pull consumer. Its worker's round is one `consume` session, handling
   * messages one by one until the session ends (then the next starts at once) or fails
   * (then the next starts after a back-off, recreating the consumer if it is gone).
   */
  class NatsSubscription implements Subscription {
    private iter: ConsumerMessages | null = null;
    private readonly worker: Worker;

    constructor(private readonly sub: SubscribeOptions) {
      this.worker = new Worker({
        name: `bus-${sub.durable}`,
        idleMs: 0,
        backoff: { baseMs: 500, maxMs: 10_000 },
        round: () => this.session(),
        onError: (err, retryInMs) => {
          log.warn({ err, durable: sub.durable, retry_in_ms: retryInMs }, 'bus: consumer loop failed; restarting');
          if (apiErrorCode(err) === JS_CONSUMER_NOT_FOUND || /consumer not found/i.test(String(err))) {
            ensureConsumer(sub.durable, sub.subjects).catch((e) => log.warn({ err: e, durable: sub.durable }, 'bus: could not recreate consumer'));
          }
        },
      });
    }

    start(): void {
      this.worker.start();
    }

    private async session(): Promise<RoundResult> {
      let handled = 0;
      try {
        const consumer = await js.consumers.get(stream, this.sub.durable);
        if (this.worker.isStopping) return { items: 0, more: false };
        this.iter = await consumer.consume({ max_messages: PULL_BATCH, expires: 30_000 });
        if (this.worker.isStopping) this.iter.stop();
        for await (const m of this.iter) {
          if (this.worker.isStopping) {
            // Already fetched but not ours to handle any more: hand it back at once
            // rather than letting it wait out ack_wait.
            m.nak();
            continue;
          }
          await this.handle(m);
          handled++;
        }
      } catch (err) {
        if (this.worker.isStopping || closed) return { items: handled, more: false };
        throw err;
      } finally {
        this.iter = null;
      }
      return { items: handled, more: true };
    }

    private async handle(m: JsMsg): Promise<void> {
      const fullSubject = m.subject;
      const subject = fullSubject.startsWith(`${prefix}.`) ? fullSubject.slice(prefix.length + 1) : fullSubject;
      if (!this.sub.subjects.some((p) => subjectMatches(p, subject))) {
        // Only without server-side filtering (nats-server < 2.10 with several subjects).
        m.ack();
        return;
      }
      const hdrs: Record<string, string> = {};
      let id = '';
      if (m.headers) {
        for (const k of m.headers.keys()) {
          if (k.toLowerCase() === 'nats-msg-id') id = m.headers.get(k);
          else if (!/^nats-/i.test(k)) hdrs[k] = m.headers.get(k);
        }
      }
      const event: ReceivedEvent = { id, subject, data: m.data, headers: hdrs, deliveryCount: m.info.deliveryCount };
      const working = setInterval(() => m.working(), WORKING_INTERVAL_MS);
      try {
        await inConsumerSpan(event, this.sub.durable, () => this.sub.handler(event));
      } catch (err) {
        clearInterval(working);
        const delay = redeliveryDelayMs(event.deliveryCount);
        log.warn({ err, durable: this.sub.durable, subject, event_id: id, delivery: event.deliveryCount, retry_in_ms: delay }, 'bus: handler failed; event will be redelivered');
        m.nak(delay);
        return;
      }
      clearInterval(working);
      try {
        await m.ackAck({ timeout: 5000 });
      } catch (err) {
        // The event was handled; without a confirmed ack it comes again after ack_wait,
        // which idempotent handlers absorb.
        log.warn({ err, durable: this.sub.durable, event_id: id }, 'bus: ack not confirmed');
      }
    }

    async stop(): Promise<void> {
      const stopping = this.worker.stop();
      // stop(), not close(): with nats.js, awaiting close() after leaving the loop hangs.
      this.iter?.stop();
      await stopping;
      subscriptions.delete(this);
    }
  }

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
      await ensureConsumer(sub.durable, sub.subjects);
      const s = new NatsSubscription(sub);
      subscriptions.add(s);
      s.start();
      return s;
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
