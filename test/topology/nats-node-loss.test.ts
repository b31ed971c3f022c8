/**
 * A NATS node lost under traffic (docs/operations.md "NATS cluster").
 *
 * The whole system runs on its own PostgreSQL and a three-node JetStream cluster on
 * loopback (NATS_URL naming all three servers). Its stream is first created with one
 * replica (a start with the default NATS_STREAM_REPLICAS=1, as an older release left
 * it), then brought in place to NATS_STREAM_REPLICAS=3 with limits, which the servers'
 * monitoring endpoint must show for the stream and its durable consumer.
 *
 * With block pushes through the gateway, bookings confirmed and cancelled through the
 * calendar's internal API, webhook deliveries to a local receiver and a WatchEvents
 * reader running throughout, the stream's leader is SIGKILLed (`nats-leader-lost`) and
 * later a follower (`nats-follower-lost`), each started again after a while. Per fault:
 * every committed event (the outbox rows of every schema) is on the stream once, in
 * per-listing order; every booking event is delivered to the partner exactly once;
 * WatchEvents streams every calendar event once, in per-listing order; the public and
 * internal answers are 2xx (503 at worst); the relay publishes and a delivery arrives
 * again within 30 s of the kill.
 */
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import { createSql, type Sql } from '../../services/kit/db';
import { Partners } from '../gateway/partners';
import { SystemClients } from '../notifications/support/harness';
import { Receiver } from '../notifications/support/receiver';
import { internalClients, type InternalClients } from '../support/internal-clients';
import { hasNatsServer } from '../support/private-nats';
import { privatePostgresUnavailable, startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres';
import { firstLogEvent, jsonLogs, logEvents, randomKey, startSystem, stopAllSystems, uniqueBusPrefix, type RunningSystem } from '../support/system';
import { createCertificates, type Certificates } from '../support/tls';
import { recordFigures, type FaultFigures } from './support/figures';
import { startNatsCluster, type NatsCluster } from './support/nats-cluster';
import { NatsTraffic, type Statuses, type TrafficListing } from './support/nats-traffic';
import { sleep } from '../support/eventually';

const MAX_AGE = '2d';
const MAX_AGE_NS = 2 * 86_400 * 1e9;
const MAX_BYTES = 256 * 1024 * 1024;
/** How long a killed node stays down. */
const DOWN_MS = 15_000;
const RECOVERY_LIMIT_S = 30;

const unavailable = privatePostgresUnavailable() ?? (hasNatsServer() ? undefined : 'no nats-server binary');
const describeIf = unavailable ? describe.skip : describe;
if (unavailable) test.skip(`NATS node loss needs a private PostgreSQL and nats-server: ${unavailable}`, () => undefined);

/** The one row of a query that returns exactly one. */
const first = <T>(rows: readonly T[]): T => rows[0]!;
let pg: PrivatePostgres | undefined;
let cluster: NatsCluster | undefined;
let certs: Certificates | undefined;
let receiver: Receiver | undefined;
let system: RunningSystem;
let partners: Partners | undefined;
let clients: InternalClients | undefined;
let streamClients: InternalClients | undefined;
let notifications: SystemClients | undefined;
let sql: Sql | undefined;
let nc: NatsConnection | undefined;
let jsm: JetStreamManager;
let traffic: NatsTraffic | undefined;

/** The bus prefix and stream the system under test uses (a fresh one for the faults). */
let prefix = uniqueBusPrefix();
let STREAM = prefix.toUpperCase();
/** When the system the faults run on was started: outbox rows before it went to the upgraded stream. */
let faultsFrom = 0;
const CONSUMER = 'notifications-webhook-deliveries';

/** A cluster answers with a time-out (or 503) while it elects a leader; ask again, as a client does. */
async function asking<T>(fn: () => Promise<T>, tries = 20): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i >= tries) throw err;
      await sleep(250);
    }
  }
}

/** The stream and its consumer as the monitoring endpoint of node `name` (default: the first running node that has the stream) shows them. */
async function monitoredStream(name?: string): Promise<{ config: any; cluster: any; state: any; consumers: any[] } | undefined> {
  for (const node of cluster!.nodes.filter((n) => n.running && (name === undefined || n.name === name))) {
    const res = await fetch(`http://127.0.0.1:${node.monitorPort}/jsz?streams=true&consumers=true&config=true`);
    const jsz = (await res.json()) as any;
    for (const a of jsz.account_details ?? []) {
      const s = (a.stream_detail ?? []).find((d: any) => d.name === STREAM);
      if (s) return { config: s.config, cluster: s.cluster, state: s.state, consumers: s.consumer_detail ?? [] };
    }
  }
  return undefined;
}

interface Phase {
  fault: string;
  from: number;
  killedAt: number;
  restartedAt: number;
  to: number;
  victim: string;
  leaderBefore: string;
  consumerLeaderBefore: string;
  /** Each node's copy of the stream at the end of the phase. */
  copies: string;
  connectedBefore: string[];
  leaderAfter: string;
  electionMs: number;
  catchUpMs: number;
  statuses: Statuses;
}

const phases: Phase[] = [];

/** Each running node's copy of the stream: `<node> <messages> msgs <first>..<last>`. */
async function nodeCopies(): Promise<string> {
  const out: string[] = [];
  for (const node of cluster!.nodes.filter((n) => n.running)) {
    const st = (await monitoredStream(node.name).catch(() => undefined))?.state;
    out.push(st ? `${node.name} ${st.messages} msgs ${st.first_seq}..${st.last_seq}` : `${node.name} none`);
  }
  return out.join('; ');
}

/** Nodes the system under test holds its NATS connection to (named `psync-<prefix>-…`), from each node's `/connz`. */
async function systemNodes(): Promise<string[]> {
  const found: string[] = [];
  for (const node of cluster!.nodes.filter((n) => n.running)) {
    const connz = (await (await fetch(`http://127.0.0.1:${node.monitorPort}/connz`)).json()) as { connections?: { name?: string }[] };
    if ((connz.connections ?? []).some((c) => (c.name ?? '').startsWith(`psync-${prefix}-`))) found.push(node.name);
  }
  return found;
}

/**
 * Asks the leader of the stream (or of its consumer) to step down until `wanted(leader)`
 * holds (JetStream elects another of the current replicas each time); at most 10 times.
 */
async function moveLeader(what: 'stream' | 'consumer', wanted: (leader: string) => boolean): Promise<void> {
  const leader = async () =>
    what === 'stream' ? (await asking(() => jsm.streams.info(STREAM))).cluster?.leader : (await asking(() => jsm.consumers.info(STREAM, CONSUMER))).cluster?.leader;
  const subject = what === 'stream' ? `$JS.API.STREAM.LEADER.STEPDOWN.${STREAM}` : `$JS.API.CONSUMER.LEADER.STEPDOWN.${STREAM}.${CONSUMER}`;
  for (let i = 0; i < 10; i++) {
    const now = await leader();
    if (now && wanted(now)) return;
    await nc!.request(subject, undefined, { timeout: 5_000 }).catch(() => undefined);
    for (let t = 0; t < 50; t++) {
      const next = await leader().catch(() => undefined);
      if (next && next !== now) break;
      await sleep(200);
    }
  }
}

/**
 * Kills a node under traffic, restarts it after DOWN_MS and waits until it caught up.
 * `leader`: the worst case, one node that is the stream's leader, its consumer's leader
 * and the node the system is connected to (leaders moved there first). `follower`: the
 * node the system is connected to, with both leaders moved elsewhere first.
 */
async function loseNode(fault: string, which: 'leader' | 'follower'): Promise<void> {
  const victim = (await systemNodes())[0] ?? cluster!.nodes.find((n) => n.running)!.name;
  const where = which === 'leader' ? (l: string) => l === victim : (l: string) => l !== victim;
  await moveLeader('stream', where);
  await moveLeader('consumer', where);
  const from = Date.now();
  traffic!.takeStatuses();
  await sleep(5_000);
  const leaderBefore = (await asking(() => jsm.streams.info(STREAM))).cluster!.leader!;
  const consumerLeaderBefore = (await asking(() => jsm.consumers.info(STREAM, CONSUMER))).cluster!.leader!;
  const connectedBefore = await systemNodes();
  const killedAt = Date.now();
  await cluster!.node(victim).kill();
  // The stream answers again (with a leader that is not the lost node).
  let leaderAfter: string | undefined;
  while (!leaderAfter) {
    const info = await jsm.streams.info(STREAM).catch(() => undefined);
    if (info?.cluster?.leader && info.cluster.leader !== victim) leaderAfter = info.cluster.leader;
    else if (Date.now() - killedAt > 60_000) throw new Error(`no stream leader 60 s after ${victim} was killed`);
    else await sleep(100);
  }
  const electionMs = Date.now() - killedAt;
  await sleep(Math.max(0, killedAt + DOWN_MS - Date.now()));
  const target = (await asking(() => jsm.streams.info(STREAM))).state.last_seq;
  await cluster!.node(victim).start();
  const restartedAt = Date.now();
  // Caught up: the restarted node's copy holds everything the stream held when it came back.
  for (;;) {
    const copy = await monitoredStream(victim).catch(() => undefined);
    if ((copy?.state.last_seq ?? 0) >= target) break;
    if (Date.now() - restartedAt > 60_000) throw new Error(`${victim} did not catch up within 60 s: ${JSON.stringify(copy?.state)}`);
    await sleep(100);
  }
  const catchUpMs = Date.now() - restartedAt;
  await sleep(5_000);
  const copies = await nodeCopies();
  phases.push({
    copies,
    fault,
    from,
    killedAt,
    restartedAt,
    to: Date.now(),
    victim,
    leaderBefore,
    consumerLeaderBefore,
    connectedBefore,
    leaderAfter,
    electionMs,
    catchUpMs,
    statuses: traffic!.takeStatuses(),
  });
}

describeIf('a NATS node lost under traffic (three-node JetStream cluster)', () => {
  beforeAll(async () => {
    [pg, cluster, certs] = await Promise.all([startPrivatePostgres(), startNatsCluster(), createCertificates()]);
    receiver = new Receiver(certs);
    await receiver.listen();
    nc = await connect({ servers: cluster.url.split(','), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    jsm = await jetstreamManager(nc, { timeout: 2_000 });
  }, 600_000);

  afterAll(async () => {
    await traffic?.stop().catch(() => undefined);
    await traffic?.stopWatching().catch(() => undefined);
    partners?.close();
    clients?.close();
    streamClients?.close();
    notifications?.close();
    await stopAllSystems('SIGKILL');
    await nc?.close().catch(() => undefined);
    await sql?.end({ timeout: 5 }).catch(() => undefined);
    await receiver?.close();
    certs?.remove();
    await cluster?.stop();
    await pg?.destroy();
  }, 120_000);

  test('a stream created with one replica is brought to three, with its limits and an R3 consumer, visible on the monitoring endpoint', async () => {
    const env = {
      DATABASE_URL: pg!.url,
      NATS_URL: cluster!.url,
      BUS_PREFIX: prefix,
      TOKEN_SIGNING_KEY: randomKey(),
      SECRETS_ENCRYPTION_KEY: randomKey(),
      EGRESS_ALLOW_CIDRS: '127.0.0.0/8',
      NODE_EXTRA_CA_CERTS: certs!.caFile,
      WEBHOOK_RETRY_SCHEDULE: '1,1,2,5,10',
      RATE_LIMIT_PER_HOUR: '1000000',
      TOKEN_RATE_LIMIT_PER_HOUR: '1000000',
    };
    // As an older release left it: the stream and its consumer with one replica.
    const old = await startSystem({ env: { ...env, NATS_STREAM_REPLICAS: '1' }, timeoutMs: 120_000 });
    await old.stop();
    const r1 = await monitoredStream();
    expect(r1?.config.num_replicas).toBe(1);
    expect([0, 1]).toContain(r1?.consumers.find((c) => c.name === CONSUMER)?.config.num_replicas);

    system = await startSystem({ env: { ...env, NATS_STREAM_REPLICAS: '3', NATS_STREAM_MAX_AGE: MAX_AGE, NATS_STREAM_MAX_BYTES: String(MAX_BYTES) }, timeoutMs: 120_000 });
    const updated = firstLogEvent(system.logs(), 'bus.stream.updated');
    expect(updated?.changes).toEqual(['num_replicas 1→3', 'max_age 7d→2d', `max_bytes unlimited→${MAX_BYTES}`]);

    let seen: Awaited<ReturnType<typeof monitoredStream>>;
    for (let i = 0; ; i++) {
      seen = await monitoredStream();
      const consumer = seen?.consumers.find((c) => c.name === CONSUMER);
      if (seen?.cluster?.replicas?.length === 2 && consumer?.cluster?.replicas?.length === 2) break;
      if (i > 150) throw new Error(`the stream or its consumer did not get three replicas: ${JSON.stringify(seen)}`);
      await sleep(200);
    }
    expect(seen.config).toMatchObject({ num_replicas: 3, max_age: MAX_AGE_NS, max_bytes: MAX_BYTES });
    const consumer = seen.consumers.find((c) => c.name === CONSUMER);
    expect(consumer.config).toMatchObject({ num_replicas: 3, ack_policy: 'explicit' });

    // The faults run on a stream created with three replicas: on nats-server 2.9.10 a
    // replica of a stream brought from one to three in place can come back from a crash
    // without the stream's oldest messages (docs/operations.md "NATS cluster").
    await system.stop();
    prefix = uniqueBusPrefix();
    STREAM = prefix.toUpperCase();
    faultsFrom = Date.now();
    system = await startSystem({
      env: { ...env, BUS_PREFIX: prefix, NATS_STREAM_REPLICAS: '3', NATS_STREAM_MAX_AGE: MAX_AGE, NATS_STREAM_MAX_BYTES: String(MAX_BYTES) },
      timeoutMs: 120_000,
    });
    expect((await monitoredStream())?.config).toMatchObject({ num_replicas: 3, max_age: MAX_AGE_NS, max_bytes: MAX_BYTES });
  }, 300_000);

  test('the stream leader, then a follower, lost under traffic: nothing lost or duplicated, order kept, recovery within 30 s', async () => {
    expect(system).toBeDefined();
    sql = createSql(pg!.url, { max: 2 });
    partners = new Partners(system);
    clients = internalClients(system.internalUrl);
    streamClients = internalClients(system.internalUrl, 3_600_000);
    notifications = new SystemClients(system.internalUrl);

    // Three partners, two listings each, each partner's webhooks to its own receiver path.
    const listings: TrafficListing[] = [];
    for (let p = 0; p < 3; p++) {
      const partner = await partners.partner('sandbox');
      await notifications.notifications.putEndpoint({
        workspaceId: partner.workspaceId,
        url: `${receiver!.baseUrl}/nats/${partner.workspaceId}`,
        events: [WebhookEventType.BOOKING_CONFIRMED, WebhookEventType.BOOKING_CANCELLED],
      });
      for (let i = 0; i < 2; i++) listings.push({ partner, listingId: (await clients.catalog.createListing({ workspaceId: partner.workspaceId })).listing!.listingId });
    }
    traffic = new NatsTraffic(system.gatewayUrl, clients, streamClients, listings);
    traffic.startWatching();
    traffic.start();
    const started = Date.now();

    await loseNode('nats-leader-lost', 'leader');
    await loseNode('nats-follower-lost', 'follower');
    await traffic.stop();
    const trafficSeconds = (Date.now() - started) / 1000;

    // Drain: every outbox row published, every booking event delivered, WatchEvents caught up.
    const deliveries = () => receiver!.received.filter((r) => r.path.startsWith('/nats/') && r.json?.event_type !== 'endpoint.challenge');
    const deadline = Date.now() + 90_000;
    for (;;) {
      const { unpublished } = first(
        await sql<{ unpublished: number }[]>`
        select (select count(*) from calendar.outbox where published_at is null)::int
             + (select count(*) from catalog.outbox where published_at is null)::int as unpublished`,
      );
      const bookingEvents = await sql<{ id: string }[]>`select id from calendar.events where type in ('booking_confirmed', 'booking_cancelled')`;
      const delivered = new Set(deliveries().map((r) => r.json.event_id as string));
      const { events } = first(await sql<{ events: number }[]>`select count(*)::int as events from calendar.events`);
      if ((unpublished === 0 && bookingEvents.every((e) => delivered.has(e.id)) && traffic.watched.length >= events) || Date.now() > deadline) break;
      await sleep(500);
    }
    await sleep(3_000); // late duplicates, if any, arrive now
    await traffic.stopWatching();

    // What the database committed: every outbox row (all schemas) and calendar event.
    const outbox = await sql<{ id: string; seq: string; schema: string; created_at: Date; published_at: Date | null }[]>`
      select id, seq, 'calendar' as schema, created_at, published_at from calendar.outbox where created_at >= ${new Date(faultsFrom)}
      union all select id, seq, 'catalog', created_at, published_at from catalog.outbox where created_at >= ${new Date(faultsFrom)} order by schema, seq`;
    const events = await sql<{ id: string; seq: string; listing_id: string; type: string; booking_reference: string | null; created_at: Date }[]>`
      select id, seq, listing_id, type, booking_reference, created_at from calendar.events order by seq`;
    const { double_sold: doubleSold } = first(
      await sql<{ double_sold: number }[]>`
      select count(*)::int as double_sold from calendar.claims a join calendar.claims b
        on a.listing_id = b.listing_id and (a.holder_kind, a.holder_id) < (b.holder_kind, b.holder_id) and a.nights && b.nights
       where a.holder_kind <> 'withdrawn' and b.holder_kind <> 'withdrawn' and (a.side = 'marketplace' or b.side = 'marketplace')`,
    );

    // What the stream holds, in its order.
    const stream: { id: string; seq: number }[] = [];
    const copiesAtEnd = await nodeCopies();
    const streamState = (await asking(() => jsm.streams.info(STREAM))).state;
    const last = streamState.last_seq;
    const oc = await jetstream(nc!).consumers.get(STREAM);
    const iter = await oc.consume();
    for await (const m of iter) {
      stream.push({ id: m.headers?.get('Nats-Msg-Id') ?? '', seq: m.seq });
      if (m.seq >= last) iter.stop();
    }

    const streamPos = new Map<string, number>();
    const streamCopies = new Map<string, number>();
    stream.forEach((m, i) => {
      if (!streamPos.has(m.id)) streamPos.set(m.id, i);
      streamCopies.set(m.id, (streamCopies.get(m.id) ?? 0) + 1);
    });
    const watchPos = new Map<string, number>();
    const watchCopies = new Map<string, number>();
    traffic.watched.forEach((w, i) => {
      if (!watchPos.has(w.eventId)) watchPos.set(w.eventId, i);
      watchCopies.set(w.eventId, (watchCopies.get(w.eventId) ?? 0) + 1);
    });
    const receipts = new Map<string, number[]>();
    for (const r of deliveries()) receipts.set(r.json.event_id as string, [...(receipts.get(r.json.event_id as string) ?? []), r.at]);
    const bookingRefsWithEvent = new Set(events.filter((e) => e.type === 'booking_confirmed').map((e) => e.booking_reference));

    const logs = jsonLogs(system.logs());
    for (const [i, ph] of phases.entries()) {
      // Events committed before the first fault count toward it; after the last, toward the last.
      const inPhase = (t: number) => (i === 0 || t >= ph.from) && (i === phases.length - 1 || t < phases[i + 1]!.from);
      const rows = outbox.filter((r) => inPhase(r.created_at.getTime()));
      const evs = events.filter((e) => inPhase(e.created_at.getTime()));
      const booking = evs.filter((e) => e.type !== 'calendar_changed');

      const notOnStream = rows.filter((r) => !streamPos.has(r.id));
      const notWatched = evs.filter((e) => !watchPos.has(e.id));
      const notDelivered = booking.filter((e) => !receipts.has(e.id));
      const lost = notOnStream.length + notWatched.length + notDelivered.length;
      const dupStream = rows.reduce((n, r) => n + Math.max(0, (streamCopies.get(r.id) ?? 0) - 1), 0);
      const dupWatch = evs.reduce((n, e) => n + Math.max(0, (watchCopies.get(e.id) ?? 0) - 1), 0);
      const dupDeliveries = booking.reduce((n, e) => n + Math.max(0, (receipts.get(e.id)?.length ?? 0) - 1), 0);

      // Per-listing order: the stream and WatchEvents keep each listing's commit order.
      const byListing = new Map<string, typeof evs>();
      for (const e of evs) byListing.set(e.listing_id, [...(byListing.get(e.listing_id) ?? []), e]);
      let outOfOrderStream = 0;
      let outOfOrderWatch = 0;
      for (const list of byListing.values()) {
        const s = list.map((e) => streamPos.get(e.id)).filter((p): p is number => p !== undefined);
        const w = list.map((e) => watchPos.get(e.id)).filter((p): p is number => p !== undefined);
        for (let k = 1; k < s.length; k++) if (s[k]! < s[k - 1]!) outOfOrderStream++;
        for (let k = 1; k < w.length; k++) if (w[k]! < w[k - 1]!) outOfOrderWatch++;
      }

      // Publish stall: the longest an outbox row committed around the fault waited for the stream.
      const published = rows.filter((r) => r.published_at);
      const stallMs = Math.max(0, ...published.filter((r) => r.created_at.getTime() >= ph.killedAt - 2_000).map((r) => r.published_at!.getTime() - r.created_at.getTime()));
      const afterKill = published.filter((r) => r.created_at.getTime() >= ph.killedAt);
      const firstPublish = Math.min(...afterKill.map((r) => r.published_at!.getTime()));
      const deliveredAfterKill = booking.filter((e) => e.created_at.getTime() >= ph.killedAt).flatMap((e) => receipts.get(e.id) ?? []);
      const firstDelivery = Math.min(...deliveredAfterKill);
      const recoverySeconds = Math.round((Math.max(firstPublish, firstDelivery) - ph.killedAt) / 100) / 10;
      // Log lines carry ISO times.
      const inWindow = (l: Record<string, unknown>) => Date.parse(String(l.time)) >= ph.from && Date.parse(String(l.time)) < ph.to;
      const publishFailures = logEvents(logs, 'outbox.publish.failed').filter(inWindow).length;
      const busReconnects = logEvents(logs, 'bus.nats.reconnected').filter(inWindow).length;
      const acknowledgedWithoutEvent = traffic.confirmed.filter((ref) => !bookingRefsWithEvent.has(ref)).length;
      const answered = Object.values(ph.statuses).reduce((a, b) => a + b, 0);
      const windowS = (ph.to - ph.from) / 1000;

      const figures: FaultFigures = {
        fault: ph.fault,
        load: `3 partners, 6 listings: ${answered} answers in ${windowS.toFixed(0)} s (block PUT/DELETE through the gateway, ConfirmBooking/CancelBooking on the calendar API), ${rows.length} events published, ${booking.length} webhook deliveries, 1 WatchEvents reader; ${ph.victim} (${ph.fault === 'nats-leader-lost' ? 'leader of the stream and its consumer' : 'a follower of both'}, the system's NATS server) SIGKILLed for ${DOWN_MS / 1000} s`,
        lost: lost + (i === phases.length - 1 ? acknowledgedWithoutEvent : 0),
        duplicated: dupStream + dupWatch + dupDeliveries,
        doubleSold: i === phases.length - 1 ? doubleSold : 0,
        statuses: ph.statuses,
        recoverySeconds,
        extra: {
          killed: ph.victim,
          stream_leader_before: ph.leaderBefore,
          consumer_leader_before: ph.consumerLeaderBefore,
          system_connected_to: ph.connectedBefore.join('+'),
          stream_leader_after: ph.leaderAfter,
          stream_answered_again_s: ph.electionMs / 1000,
          publish_stall_s: stallMs / 1000,
          publish_failures_logged: publishFailures,
          system_reconnected_to_nats: busReconnects,
          first_publish_after_kill_s: (firstPublish - ph.killedAt) / 1000,
          first_delivery_after_kill_s: (firstDelivery - ph.killedAt) / 1000,
          node_caught_up_after_restart_s: ph.catchUpMs / 1000,
          out_of_order_stream: outOfOrderStream,
          out_of_order_watch: outOfOrderWatch,
          stream_copies_after_phase: ph.copies,
          stream_copies_at_end: copiesAtEnd,
          not_on_stream: notOnStream.length,
          ...(notOnStream.length > 0
            ? {
                missing_published_s_after_kill: `${(Math.min(...notOnStream.map((r) => r.published_at?.getTime() ?? NaN)) - ph.killedAt) / 1000}..${(Math.max(...notOnStream.map((r) => r.published_at?.getTime() ?? NaN)) - ph.killedAt) / 1000}`,
                missing_created_s_after_kill: `${(Math.min(...notOnStream.map((r) => r.created_at.getTime())) - ph.killedAt) / 1000}..${(Math.max(...notOnStream.map((r) => r.created_at.getTime())) - ph.killedAt) / 1000}`,
                stream_state: JSON.stringify({
                  messages: streamState.messages,
                  first: streamState.first_seq,
                  last: streamState.last_seq,
                  deleted: streamState.num_deleted,
                  read: stream.length,
                }),
                seq_gaps: stream.filter((m, k) => k > 0 && m.seq !== stream[k - 1]!.seq + 1).length,
              }
            : {}),
          not_watched: notWatched.length,
          not_delivered: notDelivered.length,
          duplicate_on_stream: dupStream,
          duplicate_deliveries: dupDeliveries,
          watch_reconnects: traffic.watchReconnects,
          traffic_s: Math.round(trafficSeconds),
        },
      };
      recordFigures(figures);

      expect({
        fault: ph.fault,
        lost: figures.lost,
        notOnStream: notOnStream.map((r) => r.id),
        notWatched: notWatched.length,
        notDelivered: notDelivered.map((e) => e.id),
      }).toEqual({
        fault: ph.fault,
        lost: 0,
        notOnStream: [],
        notWatched: 0,
        notDelivered: [],
      });
      expect({ fault: ph.fault, duplicated: figures.duplicated, doubleSold: figures.doubleSold }).toEqual({ fault: ph.fault, duplicated: 0, doubleSold: 0 });
      expect({ fault: ph.fault, outOfOrderStream, outOfOrderWatch }).toEqual({ fault: ph.fault, outOfOrderStream: 0, outOfOrderWatch: 0 });
      expect(Object.keys(ph.statuses).filter((s) => !['200', '201', '204', '503'].includes(s))).toEqual([]);
      expect(afterKill.length).toBeGreaterThan(0);
      expect(deliveredAfterKill.length).toBeGreaterThan(0);
      expect(recoverySeconds).toBeLessThanOrEqual(RECOVERY_LIMIT_S);
    }
    expect(traffic.oddities).toEqual([]);
    expect(system.child.exitCode).toBeNull();

    // Still three current copies of the stream and its consumer, with the limits.
    const after = await monitoredStream();
    expect(after?.config).toMatchObject({ num_replicas: 3, max_age: MAX_AGE_NS, max_bytes: MAX_BYTES });
    expect(after?.cluster?.replicas?.length).toBe(2);
  }, 600_000);
});
