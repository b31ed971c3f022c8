/**
 * NATS JetStream implementation of the event bus (see bus.ts).
 *
 * - One stream `<PREFIX>` (prefix upper-cased) over `<prefix>.>`, file storage, a
 *   2-minute duplicate window: `publish` sends the event id as `msgID`, so a relay that
 *   re-publishes after a crash (outbox-relay.ts) does not create a second copy.
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
import { DEFAULT_STREAM_MAX_AGE_MS, formatDuration } from './config';
import { natsServers } from './nats-credentials';
import type { Logger } from './logger';
import { registerBusConsumerBacklog } from './metrics';
import { inConsumerSpan } from './telemetry';
import { backoffMs, Worker, type RoundResult } from './worker';

/** JetStream API error codes we react to (nats-server `server/errors.json`). */
const JS_STREAM_NOT_FOUND = 10059;
const JS_STREAM_NAME_IN_USE = 10058;
const JS_CONSUMER_NOT_FOUND = 10014;
const JS_CONSUMER_NAME_IN_USE = 10013;
const JS_CONSUMER_EXISTS = 10148;
/** `replicas > 1 not supported in non-clustered mode`. */
const JS_REPLICAS_NOT_SUPPORTED = 10074;

const PREFIX_PATTERN = /^[a-z][a-z0-9_-]*$/;
const DURABLE_PATTERN = /^[A-Za-z0-9_-]+$/;
const DUPLICATE_WINDOW_MS = 2 * 60 * 1000;
const ACK_WAIT_MS = 30_000;
/** How often a long-running handler tells the server it is still working (< ack_wait). */
const WORKING_INTERVAL_MS = 10_000;
/** Messages buffered per pull; small, because a stopping subscription naks what it holds. */
const PULL_BATCH = 32;
/**
 * How long one pull request waits on the server. nats.js asks for a heartbeat every half
 * of it and pulls again after two missed ones: a pull request held by a consumer leader
 * that dies (a NATS node lost) is noticed after about this long. With nats.js's default
 * (30 s) a lost consumer leader stalled deliveries for over 30 s
 * (test/topology/nats-node-loss.test.ts).
 */
const PULL_EXPIRES_MS = 5_000;

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

/**
 * Replication and retention of the stream (NATS_STREAM_REPLICAS, NATS_STREAM_MAX_AGE,
 * NATS_STREAM_MAX_BYTES). Durable consumers take the stream's replica count.
 */
export interface StreamLimits {
  /** num_replicas: 1 to 5; more than 1 needs a clustered nats-server. */
  replicas: number;
  /** max_age in milliseconds (0: unlimited, as nats-server reads it). */
  maxAgeMs: number;
  /** max_bytes (-1: unlimited). */
  maxBytes: number;
}

/** The configuration's defaults (config.ts): one replica, 7 days, no size limit. */
export const DEFAULT_STREAM_LIMITS: StreamLimits = { replicas: 1, maxAgeMs: DEFAULT_STREAM_MAX_AGE_MS, maxBytes: -1 };

/** A stream limit for the log line: durations in the largest whole unit, -1/0 as unlimited. */
function describeLimit(field: 'num_replicas' | 'max_age' | 'max_bytes', v: number | undefined): string {
  if (field === 'num_replicas') return String(v || 1);
  if (!v || v < 0) return 'unlimited';
  if (field === 'max_bytes') return String(v);
  return formatDuration(v / 1e6);
}

/** Whether `err` is the server refusing this connection's user a subject (no permission). */
function isPermissionError(err: unknown): boolean {
  return err instanceof NatsError && err.isPermissionError();
}

/**
 * Ensures the stream exists with our configuration; safe when replicas race. `managed`
 * (the process's NATS_STREAM_* settings): replicas and limits of an existing stream are
 * brought to them in place, with one log line naming each change; without it (tools,
 * tests) an existing stream's replicas and limits are left as they are. Returns the
 * stream's configuration as it is afterwards.
 */
async function ensureStream(jsm: JetStreamManager, cfg: Partial<StreamConfig> & { name: string }, managed: boolean, log: Logger): Promise<StreamConfig> {
  for (let attempt = 0; attempt < 5; attempt++) {
    let info;
    try {
      info = await jsm.streams.info(cfg.name);
    } catch (err) {
      if (apiErrorCode(err) !== JS_STREAM_NOT_FOUND) throw err;
      try {
        const created = await jsm.streams.add(cfg);
        log.info(
          {
            stream: cfg.name,
            subjects: cfg.subjects,
            num_replicas: created.config.num_replicas,
            max_age: describeLimit('max_age', created.config.max_age),
            max_bytes: describeLimit('max_bytes', created.config.max_bytes),
          },
          'bus: stream created',
        );
        return created.config;
      } catch (addErr) {
        // Another replica created it between our info and add: look again.
        if (apiErrorCode(addErr) === JS_STREAM_NAME_IN_USE) continue;
        if (isReplicasRefusal(addErr)) throw replicasRefused(cfg, addErr);
        throw addErr;
      }
    }
    const have = info.config;
    if (have.storage !== cfg.storage) {
      log.warn({ stream: cfg.name, storage: have.storage }, 'bus: stream storage differs from the configured one and cannot be changed in place');
    }
    const changes: string[] = [];
    if (JSON.stringify([...(have.subjects ?? [])].sort()) !== JSON.stringify([...(cfg.subjects ?? [])].sort())) {
      changes.push(`subjects ${(have.subjects ?? []).join(',')}→${(cfg.subjects ?? []).join(',')}`);
    }
    if (have.duplicate_window !== cfg.duplicate_window) changes.push(`duplicate_window ${have.duplicate_window}→${cfg.duplicate_window}`);
    // An older release's stream: one replica, no limits (0 / -1).
    const limitFields = managed ? (['num_replicas', 'max_age', 'max_bytes'] as const) : [];
    for (const field of limitFields) {
      const before = describeLimit(field, have[field]);
      const after = describeLimit(field, cfg[field]);
      if (before !== after) changes.push(`${field} ${before}→${after}`);
    }
    if (changes.length === 0) return have;
    const next: StreamConfig = { ...have, subjects: cfg.subjects ?? have.subjects, duplicate_window: cfg.duplicate_window ?? have.duplicate_window };
    for (const field of limitFields) next[field] = cfg[field] ?? have[field];
    try {
      const updated = await jsm.streams.update(cfg.name, next);
      log.info({ stream: cfg.name, changes }, `bus: stream configuration updated (${changes.join('; ')})`);
      return updated.config;
    } catch (err) {
      if (isReplicasRefusal(err)) throw replicasRefused(cfg, err);
      // A role the server does not let change the stream (the chart's example
      // authorization: only calendar may) works on the stream as it is; the role that
      // may, brings it to the configuration when it starts.
      if (!isPermissionError(err)) throw err;
      log.warn({ stream: cfg.name, changes, err: String(err) }, 'bus: stream differs from the configuration but this NATS user may not update it; using it as it is');
      return have;
    }
  }
  throw new Error(`bus: could not create or read stream ${cfg.name}`);
}

function isReplicasRefusal(err: unknown): boolean {
  return apiErrorCode(err) === JS_REPLICAS_NOT_SUPPORTED || /replicas > 1 not supported/i.test(String(err));
}

/** The server's refusal of replicas > 1 (not clustered), as one line naming the setting. */
function replicasRefused(cfg: Partial<StreamConfig>, err: unknown): Error {
  return new Error(`NATS_STREAM_REPLICAS=${cfg.num_replicas} needs a clustered JetStream (${String((err as Error).message ?? err)})`, { cause: err });
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
  /** The stream's replica count, which durable consumers take (ensureConsumer). */
  let streamReplicas: number;
  try {
    jsm = await nc.jetstreamManager();
    js = nc.jetstream();
    const limits = opts.stream ?? DEFAULT_STREAM_LIMITS;
    // nats-server refuses to create such a stream outside a cluster, but (2.9) accepts
    // the update of an existing one: refuse both the same way.
    if (limits.replicas > 1 && !nc.info?.cluster) {
      throw new Error(`NATS_STREAM_REPLICAS=${limits.replicas} needs a clustered JetStream; the server at ${where} is not clustered (set it to 1)`);
    }
    const effective = await ensureStream(
      jsm,
      {
        name: stream,
        subjects: [`${prefix}.>`],
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.Old,
        duplicate_window: nanos(DUPLICATE_WINDOW_MS),
        num_replicas: limits.replicas,
        max_age: nanos(limits.maxAgeMs),
        max_bytes: limits.maxBytes,
      },
      opts.stream !== undefined,
      log,
    );
    streamReplicas = effective.num_replicas || 1;
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
      // As many copies as the stream: an R1 consumer on an R3 stream would lose its
      // position with its one node.
      num_replicas: streamReplicas,
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
        have.ack_policy === wanted.ack_policy &&
        // 0 (an older release's consumer): the stream's count when it was created, 1 then.
        (have.num_replicas || 1) === wanted.num_replicas;
      if (!same) {
        // A changed filter keeps the consumer's position (updating filters needs nats-server 2.10).
        await jsm.consumers.update(stream, durable, {
          ack_wait: wanted.ack_wait,
          max_deliver: wanted.max_deliver,
          num_replicas: wanted.num_replicas,
          ...(wanted.filter_subjects ? { filter_subjects: wanted.filter_subjects, filter_subject: undefined } : {}),
          ...(wanted.filter_subject !== undefined ? { filter_subject: wanted.filter_subject } : {}),
        });
        log.info({ stream, durable, subjects, num_replicas: `${have.num_replicas || 1}→${wanted.num_replicas}` }, 'bus: durable consumer updated');
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
    private unregisterBacklog: () => void = () => {};

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
      this.unregisterBacklog = registerBusConsumerBacklog(this.sub.durable, async () => {
        const info = await jsm.consumers.info(stream, this.sub.durable);
        return info.num_pending + info.num_ack_pending;
      });
    }

    private async session(): Promise<RoundResult> {
      let handled = 0;
      try {
        const consumer = await js.consumers.get(stream, this.sub.durable);
        if (this.worker.isStopping) return { items: 0, more: false };
        this.iter = await consumer.consume({ max_messages: PULL_BATCH, expires: PULL_EXPIRES_MS });
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
      this.unregisterBacklog();
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

    async forgetConsumer(durable: string): Promise<boolean> {
      try {
        return await jsm.consumers.delete(stream, durable);
      } catch (err) {
        if (err instanceof Error && /consumer not found/i.test(err.message)) return false;
        throw err;
      }
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
