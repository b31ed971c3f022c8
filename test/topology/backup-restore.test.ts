/**
 * Backup and restore under traffic (docs/operations.md "Backup and restore"): the whole
 * system on a private PostgreSQL with WAL archiving and a private nats-server; partners
 * push blocks through the gateway, the marketplace confirms bookings through the
 * calendar's internal API, and every booking becomes a webhook to a local receiver that
 * acknowledges it. A base backup is taken mid-traffic, the archive is closed a few
 * seconds later (as `archive_timeout` does), traffic goes on, and the server is lost
 * (crashed; its data directory is never used again). The backup is restored into a fresh
 * server with the archive replayed to its end, the operator rewinds the notifications
 * intake on the bus (the documented step), and the system starts on the restored database
 * and the same NATS, as an SRE restoring a database has them.
 *
 * Promises asserted: the restored system serves the contract; every acknowledged block
 * push and booking the restore point covers is there; every booking there is delivered to
 * its partner (the outbox resumes; events relayed or handled after the restore point are
 * handled again); no delivery whose acknowledgement the restored database records is sent
 * again; no night sold twice; no 5xx but 503 and no dropped connection; recovery (restore
 * + start to the first served request) within 30 s. What the gap (after the last archived
 * WAL) held is counted, not asserted: lost writes there, and deliveries sent again with
 * the same event_id (which the contract tells receivers to deduplicate).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Code, ConnectError } from '@connectrpc/connect';
import { connect } from '@nats-io/transport-node';
import postgres from 'postgres';
import { send, jsonRequest, type Received as Answer } from '../gateway/http-client';
import { Partners, type Partner } from '../gateway/partners';
import { TEST_TOKENS, testCallerEnv } from '../support/credentials';
import { internalClients, type InternalClients } from '../support/internal-clients';
import { privatePostgresUnavailable } from '../support/private-postgres';
import { hasNatsServer } from '../support/private-nats';
import { freePort, linesOf, logEvents, randomKey, runMain, startSystem, stopAllSystems, uniqueBusPrefix, type RunningSystem } from '../support/system';
import { createCertificates, type Certificates } from '../support/tls';
import { webhookEnv } from '../notifications/support/harness';
import { Receiver, type Received } from '../notifications/support/receiver';
import { INTAKE_CONSUMER } from '../../services/notifications/intake';
import { recordFigures } from './support/figures';
import { restoreBackup, startArchivingPostgres, type ArchivingPostgres, type BaseBackup, type RestoredPostgres } from './support/postgres-backup';
import { sleep } from '../support/eventually';

jest.setTimeout(420_000);

const why = privatePostgresUnavailable() ?? (hasNatsServer() ? undefined : 'no nats-server binary');
const describeIfPossible = why ? describe.skip : describe;
if (why) test.skip(`backup and restore needs a private PostgreSQL and nats-server: ${why}`, () => undefined);

const PARTNERS = 3;
const BLOCK_PAUSE_MS = 40;
const BOOKING_PAUSE_MS = 150;
const DAY_MS = 86_400_000;
const day = (base: number, n: number) => new Date(base + n * DAY_MS).toISOString().slice(0, 10);
const BLOCKS_FROM = Date.UTC(2030, 0, 1);
const BOOKINGS_FROM = Date.UTC(2033, 0, 1);
interface PlainNats {
  url: string;
  /** Freezes the server (SIGSTOP) or lets it go on (SIGCONT): publishes wait meanwhile. */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

/** A nats-server with JetStream and no authorization (the operator's view of it). */
async function startNats(): Promise<PlainNats> {
  const dir = mkdtempSync(join(tmpdir(), 'psync-nats-restore-'));
  const port = await freePort();
  const child: ChildProcess = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', join(dir, 'store')], { stdio: 'ignore' });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGCONT');
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const url = `nats://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      await (await connect({ servers: url, reconnect: false })).close();
      return { url, stop, pause: () => child.kill('SIGSTOP'), resume: () => child.kill('SIGCONT') };
    } catch (err) {
      if (i > 100) {
        await stop();
        throw err;
      }
      await sleep(100);
    }
  }
}

interface PartnerUnderLoad extends Partner {
  blockListing: string;
  bookingListing: string;
  path: string;
}

/** One acknowledged write: when it was sent and when its answer came. */
interface Write {
  key: string;
  workspaceId: string;
  sentAt: number;
  ackAt: number;
}

let certs: Certificates;
let receiver: Receiver;
let nats: PlainNats;
let primary: ArchivingPostgres | undefined;
let restored: RestoredPostgres | undefined;
let system: RunningSystem;
let clients: InternalClients | undefined;
let partners: Partners | undefined;
const env: Record<string, string> = {};
const prefix = uniqueBusPrefix();

/** Public answers (and the marketplace's RPC outcomes: OK 200, UNAVAILABLE 503, anything else 500; a dropped exchange 0). */
const statuses: Record<string, number> = {};
const problems: string[] = [];
const count = (status: number, what: string) => {
  statuses[String(status)] = (statuses[String(status)] ?? 0) + 1;
  if (status === 0 || (status >= 500 && status !== 503)) problems.push(`${status} ${what}`);
};

const fire = async (req: Parameters<typeof send>[1]): Promise<Answer> => {
  const res = await send(system.gatewayUrl, req).catch((err: Error) => ({ status: 0, headers: {}, text: err.message, json: undefined }));
  count(res.status, `${req.method ?? 'GET'} ${req.path}: ${res.text.slice(0, 120)}`);
  return res;
};

const blocks: Write[] = [];
const bookings: Write[] = [];
let blockNo = 0;
let bookingNo = 0;

async function pushBlock(p: PartnerUnderLoad): Promise<void> {
  const n = blockNo++;
  const uid = `restore-${n}`;
  const sentAt = Date.now();
  const res = await fire(
    jsonRequest('PUT', `/v1/blocks/${uid}`, { listing_id: p.blockListing, check_in: day(BLOCKS_FROM, n), check_out: day(BLOCKS_FROM, n + 1), reason: 'maintenance' }, p.auth),
  );
  if (res.status === 200) blocks.push({ key: uid, workspaceId: p.workspaceId, sentAt, ackAt: Date.now() });
}

async function confirmBooking(p: PartnerUnderLoad): Promise<void> {
  const n = bookingNo++;
  const sentAt = Date.now();
  try {
    const res = await clients!.calendar.confirmBooking({
      listingId: p.bookingListing,
      checkIn: day(BOOKINGS_FROM, 2 * n),
      checkOut: day(BOOKINGS_FROM, 2 * n + 1),
      guestId: `guest-${randomUUID()}`,
      guestName: 'Grace Hopper',
      partySize: 2,
      amountPaid: { value: '210.00', currency: 'EUR' },
      requiresPayment: false,
      idempotencyKey: randomUUID(),
    });
    count(200, 'ConfirmBooking');
    bookings.push({ key: res.booking!.bookingReference, workspaceId: p.workspaceId, sentAt, ackAt: Date.now() });
  } catch (err) {
    const e = ConnectError.from(err);
    count(e.code === Code.Unavailable ? 503 : 500, `ConfirmBooking: ${Code[e.code]} ${e.rawMessage}`);
  }
}

/** Runs block pushes and bookings for every partner until `stop()`. */
function traffic(ps: PartnerUnderLoad[]): { stop(): Promise<void> } {
  let running = true;
  const loops = ps.flatMap((p) => [
    (async () => {
      while (running) {
        await pushBlock(p);
        await sleep(BLOCK_PAUSE_MS);
      }
    })(),
    (async () => {
      while (running) {
        await confirmBooking(p);
        await sleep(BOOKING_PAUSE_MS);
      }
    })(),
  ]);
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

async function provision(): Promise<PartnerUnderLoad[]> {
  const out: PartnerUnderLoad[] = [];
  for (let i = 0; i < PARTNERS; i++) {
    const p = await partners!.partner('sandbox');
    const blockListing = (await clients!.catalog.createListing({ workspaceId: p.workspaceId })).listing!.listingId;
    const bookingListing = (await clients!.catalog.createListing({ workspaceId: p.workspaceId })).listing!.listingId;
    const path = `/partner/${p.workspaceId}`;
    const res = await send(
      system.gatewayUrl,
      jsonRequest('PUT', '/v1/webhooks/endpoint', { url: `${receiver.baseUrl}${path}`, events: ['booking.confirmed', 'booking.cancelled', 'user.erased'] }, p.auth),
    );
    if (res.status !== 200 || res.json?.status !== 'active') throw new Error(`endpoint registration answered ${res.status}: ${res.text}`);
    out.push({ ...p, blockListing, bookingListing, path });
  }
  return out;
}

/** Booking deliveries the receiver got (challenges left out), in arrival order. */
const deliveries = (from = 0): Received[] => receiver.received.slice(from).filter((r) => r.json?.event_type === 'booking.confirmed');

async function startOn(databaseUrl: string): Promise<void> {
  system = await startSystem({ env: { ...env, DATABASE_URL: databaseUrl }, timeoutMs: 120_000 });
  clients = internalClients(system.internalUrl);
}

async function stopSystem(): Promise<void> {
  clients?.close();
  clients = undefined;
  await stopAllSystems();
}

/** What the restored database holds, read before the system starts on it. */
interface RestoredState {
  blocks: Set<string>;
  bookings: Set<string>;
  /** Delivery state by event_id. */
  deliveryState: Map<string, string>;
  /** Bookings whose booking.confirmed delivery is recorded delivered. */
  deliveredBookings: Set<string>;
  /** Outbox rows committed but not relayed at the restore point. */
  unrelayed: number;
  /** Events relayed but without the intake's processed mark at the restore point. */
  relayedNotHandled: number;
  /** The highest seq of the restored calendar event log (WatchEvents cursors). */
  maxEventSeq: bigint;
  /** Pairs of claims on one listing whose nights overlap across sides or between marketplace claims. */
  doubleSold: number;
}

async function readRestored(url: string): Promise<RestoredState> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const bl = await sql<{ workspace_id: string; external_uid: string }[]>`select workspace_id, external_uid from calendar.blocks`;
    const bk = await sql<{ booking_reference: string }[]>`select booking_reference from calendar.bookings`;
    const dl = await sql<{ event_id: string; state: string; event_type: string; booking_reference: string | null }[]>`
      select event_id, state, event_type, booking_reference from notifications.deliveries`;
    const [inFlight] = await sql<{ unrelayed: number; relayed_not_handled: number }[]>`
      select count(*) filter (where o.published_at is null)::int as unrelayed,
             count(*) filter (where o.published_at is not null and p.event_id is null)::int as relayed_not_handled
      from calendar.outbox o
      left join notifications.processed_events p on p.consumer = ${INTAKE_CONSUMER} and p.event_id = o.id
      where o.subject ~* 'booking|erase'`;
    const [events] = await sql<{ max: string | null }[]>`select max(seq)::text as max from calendar.events`;
    const [overlaps] = await sql<{ n: number }[]>`
      select count(*)::int as n
      from calendar.claims a join calendar.claims b
        on a.listing_id = b.listing_id and a.nights && b.nights and (a.holder_kind, a.holder_id) < (b.holder_kind, b.holder_id)
      where a.side <> b.side or a.side = 'marketplace'`;
    return {
      blocks: new Set(bl.map((r) => `${r.workspace_id}/${r.external_uid}`)),
      bookings: new Set(bk.map((r) => r.booking_reference)),
      deliveryState: new Map(dl.map((r) => [r.event_id, r.state])),
      deliveredBookings: new Set(dl.filter((r) => r.event_type === 'booking.confirmed' && r.state === 'delivered').map((r) => r.booking_reference!)),
      unrelayed: inFlight!.unrelayed,
      relayedNotHandled: inFlight!.relayed_not_handled,
      doubleSold: overlaps!.n,
      maxEventSeq: BigInt(events!.max ?? '0'),
    };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** The system's exit and last output, when it is no longer running (for failure messages). */
function exitReport(): string {
  const c = system.child;
  if (c.exitCode === null && c.signalCode === null) return '';
  // log text on purpose: the last lines, for a person reading the failure
  return `\nthe system exited (${c.exitCode ?? c.signalCode}):\n${[...system.logs().slice(-15), ...system.stderr().slice(-15)].join('\n')}`;
}

/** Every block of `p` the public API lists. */
async function listedBlocks(p: PartnerUnderLoad): Promise<Set<string>> {
  const out = new Set<string>();
  for (let page = 1; ; page++) {
    const res = await fire({ method: 'GET', path: `/v1/blocks?page=${page}&page_size=200`, headers: p.auth });
    if (res.status !== 200) throw new Error(`GET /v1/blocks answered ${res.status}: ${res.text}${exitReport()}`);
    for (const b of res.json.items as { external_uid: string }[]) out.add(`${p.workspaceId}/${b.external_uid}`);
    if (!res.json.has_more) return out;
  }
}

describeIfPossible('backup and restore under traffic', () => {
  beforeAll(async () => {
    certs = await createCertificates();
    receiver = new Receiver(certs);
    await receiver.listen();
    nats = await startNats();
    // archive_timeout off: the test closes the archive where it wants the restore point.
    primary = await startArchivingPostgres({ archiveTimeoutSeconds: 0 });
    Object.assign(env, webhookEnv(certs), {
      NATS_URL: nats.url,
      BUS_PREFIX: prefix,
      // Kept outside the database: the restored system needs the same ones.
      TOKEN_SIGNING_KEY: randomKey(),
      SECRETS_ENCRYPTION_KEY: randomKey(),
      RATE_LIMIT_PER_HOUR: '1000000',
      TOKEN_RATE_LIMIT_PER_HOUR: '1000000',
    });
    await startOn(primary.url);
    partners = new Partners(system);
  }, 300_000);

  afterAll(async () => {
    partners?.close();
    await stopSystem();
    await restored?.destroy();
    await primary?.destroy();
    await nats?.stop();
    await receiver?.close();
    certs?.remove();
  });

  test('a base backup taken mid-traffic, restored with the archive into a fresh server: nothing covered is lost or sent twice', async () => {
    const ps = await provision();

    // Traffic, the base backup in the middle of it, the archive closed a few seconds later.
    const load = traffic(ps);
    const trafficStarted = Date.now();
    // The marketplace follows the calendar's event log meanwhile; its last cursor is from the gap.
    let lastCursor: string | undefined;
    const watching = (async () => {
      try {
        for await (const m of clients!.calendar.watchEvents({}, { timeoutMs: 300_000 })) lastCursor = m.cursor;
      } catch {
        // the stream ends with the server
      }
    })();
    await sleep(4000);
    const backup: BaseBackup = await primary!.baseBackup();
    await sleep(6000);
    // The last archived segment ends while the bus stalls for a moment, so the restore
    // point holds bookings whose events were not yet relayed (and then were, and were
    // delivered, in the gap): the outbox and the intake must pick them up again.
    nats.pause();
    await sleep(1000);
    const lastSegment = await primary!.archiveNow().finally(() => nats.resume());
    // The gap: written after the last archived segment, lost with the server.
    await sleep(3000);
    const lostAt = Date.now();
    await primary!.stop('immediate');
    await sleep(2000);
    await load.stop();
    const trafficSeconds = (lostAt - trafficStarted) / 1000;
    await stopSystem();
    await watching;
    partners!.close();
    const before = receiver.received.length;

    // Restore into a fresh server, run after-restore, start the system on it.
    const restoreStarted = Date.now();
    restored = await restoreBackup(backup, primary!.archiveDir);
    const restorePoint = restored.restoredTo.getTime();
    const state = await readRestored(restored.url);
    // The operator's one command after a restore (docs/operations.md "Backup and restore"):
    // the intake reads the stream again from its oldest event, the event log skips the gap.
    const afterDir = mkdtempSync(join(tmpdir(), 'psync-after-restore-'));
    // As the operator (PSYNC_TOKEN, accepted by the system's OPERATOR_TOKEN), with the stopped system's internal port free.
    const operator = { ...testCallerEnv(), PSYNC_TOKEN: TEST_TOKENS.operator, INTERNAL_PORT: String(await freePort()) };
    const restoreSteps = await runMain(['after-restore'], { ...env, ...operator, DATABASE_URL: restored.url, DATA_DIR: afterDir }, 120_000);
    rmSync(afterDir, { recursive: true, force: true });
    expect({ code: restoreSteps.code, stderr: restoreSteps.code === 0 ? '' : restoreSteps.stderr }).toEqual({ code: 0, stderr: '' });
    const done = JSON.parse(linesOf(restoreSteps.stdout)[0]!) as { restored: boolean; services: Record<string, Record<string, unknown>> };
    expect(done).toEqual({
      restored: true,
      services: { calendar: { next_event_seq_after: expect.any(String) }, notifications: { intake_consumer_rewound: true } },
    });
    await startOn(restored.url);
    partners = new Partners(system);
    let firstServed: number | undefined;
    for (const deadline = Date.now() + 60_000; !firstServed && Date.now() < deadline;) {
      const res = await fire({ method: 'GET', path: '/v1/blocks?page_size=1', headers: ps[0]!.auth });
      if (res.status === 200) firstServed = Date.now();
      else await sleep(100);
    }
    expect(firstServed).toBeDefined();
    const recoverySeconds = Math.round((firstServed! - restoreStarted) / 100) / 10;

    // Contract smoke: tokens, block writes and reads, a booking delivered.
    for (const p of ps) {
      const token = await fire({ method: 'POST', path: '/v1/token', headers: { Authorization: `Bearer ${p.apiKey}` } });
      expect(token.status).toBe(200);
    }
    const after = traffic(ps);
    await sleep(4000);
    await after.stop();

    // A WatchEvents cursor from the gap is expired (resynchronise), never resumed elsewhere.
    let gapCursor: string | undefined;
    if (lastCursor !== undefined && BigInt(lastCursor) > state.maxEventSeq) {
      gapCursor = lastCursor;
      const resumed = (async () => {
        for await (const m of clients!.calendar.watchEvents({ cursor: gapCursor }, { timeoutMs: 5000 })) return m.cursor;
        return 'ended';
      })();
      await expect(resumed).rejects.toMatchObject({ code: Code.OutOfRange });
    }

    // The outbox resumes and the intake catches up: every booking the restored database
    // holds without a recorded acknowledgement of its delivery, and every one confirmed
    // since, is delivered by the restored system.
    const afterRestore = bookings.filter((b) => b.sentAt > restoreStarted).map((b) => b.key);
    const mustArrive = new Set([...[...state.bookings].filter((ref) => !state.deliveredBookings.has(ref)), ...afterRestore]);
    const refs = (rs: Received[]) => new Set(rs.map((r) => r.json.data.booking_reference as string));
    await receiver
      .waitFor(
        () => {
          const got = refs(deliveries(before));
          return [...mustArrive].every((ref) => got.has(ref));
        },
        90_000,
        'every undelivered booking of the restored database delivered',
      )
      .catch(() => undefined);
    await sleep(3000); // anything that would be sent again arrives by now

    const listed = new Set<string>();
    for (const p of ps) for (const b of await listedBlocks(p)) listed.add(b);

    // Covered: acknowledged before the restore point. Gap: sent after it.
    const covered = (w: Write) => w.ackAt < restorePoint;
    const inGap = (w: Write) => w.sentAt > restorePoint && w.sentAt < restoreStarted;
    const blocksLost = blocks.filter((b) => covered(b) && !listed.has(`${b.workspaceId}/${b.key}`));
    const bookingsLost = bookings.filter((b) => covered(b) && !state.bookings.has(b.key));
    const sentAfter = refs(deliveries(before));
    const sentBefore = refs(deliveries().slice(0, before));
    const deliveriesLost = [
      ...[...mustArrive].filter((ref) => !sentAfter.has(ref)),
      // Recorded delivered in the restored database: the receiver had it before the loss.
      ...[...state.deliveredBookings].filter((ref) => !sentBefore.has(ref)),
    ];
    const gapBlocks = blocks.filter((b) => inGap(b) && !listed.has(`${b.workspaceId}/${b.key}`)).length;
    const gapBookings = bookings.filter((b) => inGap(b) && !state.bookings.has(b.key)).length;

    // Sent again: an event_id the receiver had acknowledged before the loss and got again
    // from the restored system. Duplicated when the restored database recorded it
    // delivered; from the gap when its acknowledgement (or the delivery) was not restored.
    const firstPhase = new Set(
      deliveries()
        .slice(0, before)
        .map((r) => r.json.event_id as string),
    );
    const secondPhase = receiver.received.slice(before).filter((r) => r.json?.event_type && r.json.event_type !== 'endpoint.challenge');
    const resent = secondPhase.filter((r) => firstPhase.has(r.json.event_id as string));
    const duplicatedCovered = resent.filter((r) => state.deliveryState.get(r.json.event_id as string) === 'delivered');
    const resentFromGap = resent.length - duplicatedCovered.length;
    const seenTwiceAfter = secondPhase.length - new Set(secondPhase.map((r) => r.json.event_id as string)).size;
    const resentAckedLongBefore = resent.filter((r) => deliveries().find((d) => d.json.event_id === r.json.event_id)!.at < restorePoint - 1000).length;

    // Events of the gap are still on the stream; the rewound intake meets them and the
    // calendar does not know their bookings: refused, never delivered again.
    const refusedFromGap = logEvents(system.logs(), 'webhook.domain_event.refused').filter((l) => l.reason === 'unknown_booking').length;
    const lost = blocksLost.length + bookingsLost.length + deliveriesLost.length;
    const duplicated = duplicatedCovered.length + seenTwiceAfter;
    const figures = {
      fault: 'backup-restore',
      load: `${PARTNERS} partners: block pushes through the gateway and bookings through the calendar's internal API, each booking a webhook to a local receiver; ${blocks.length} blocks and ${bookings.length} bookings acknowledged in the ${Math.round(trafficSeconds)} s before the loss and the 4 s after the restore; base backup mid-traffic, archive closed 6 s later, server lost 3 s after that; restored to the end of the archive; same NATS, intake rewound`,
      lost,
      duplicated,
      doubleSold: state.doubleSold,
      statuses,
      recoverySeconds,
      extra: {
        'backup MiB': Math.round(backup.bytes / 1048576),
        'backup s': backup.seconds,
        'restore s': restored.seconds,
        'gap s': Math.round((lostAt - restorePoint) / 100) / 10,
        'lost in gap (blocks)': gapBlocks,
        'lost in gap (bookings)': gapBookings,
        're-sent from gap': resentFromGap,
        'gap events refused (unknown_booking)': refusedFromGap,
        're-sent, acknowledged over 1 s before the restore point': resentAckedLongBefore,
        'unrelayed at restore point': state.unrelayed,
        'relayed, not yet handled at restore point': state.relayedNotHandled,
        'last archived segment': lastSegment,
        'WatchEvents cursor from the gap': gapCursor === undefined ? 'none' : 'expired',
      },
    };
    recordFigures(figures);
    console.log(JSON.stringify(figures, null, 2));

    expect({ blocksLost: blocksLost.map((b) => b.key), bookingsLost: bookingsLost.map((b) => b.key), deliveriesLost }).toEqual({
      blocksLost: [],
      bookingsLost: [],
      deliveriesLost: [],
    });
    expect(blocks.length).toBeGreaterThan(50);
    expect({ duplicatedCovered: duplicatedCovered.map((r) => r.json.event_id as string), seenTwiceAfter }).toEqual({ duplicatedCovered: [], seenTwiceAfter: 0 });
    // The bus stalled while the archive was closed: the restore point held events not yet relayed.
    expect(state.unrelayed).toBeGreaterThan(0);
    expect(state.doubleSold).toBe(0);
    expect(problems).toEqual([]);
    expect(recoverySeconds).toBeLessThanOrEqual(30);
  });
});
