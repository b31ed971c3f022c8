/**
 * House rule 15, "the bus carries facts, not people", end to end (docs/decisions.md
 * "No guest data on the bus"; docs/notifications.md "Events are proven by their owner"):
 *
 * - A booking is confirmed for a guest with a unique name, delivered to the partner
 *   (the name read back from the calendar), then the guest is erased: afterwards the
 *   name is in no message of the JetStream stream (real NATS) and in no row of any
 *   table of any schema (text and bytea columns; real PostgreSQL, or the embedded
 *   database opened after the system stopped). The in-process bus keeps its messages
 *   in the system's memory only, gone with the process.
 * - Forged events published straight to NATS (the machine's server, no credentials
 *   needed there): a BookingConfirmed for another workspace naming a real booking, one
 *   naming no booking, a UserErased naming no erasure. None becomes a delivery; each
 *   is counted in psync_bus_events_refused_total.
 * - A private nats-server with the documented authorization block and the system
 *   signed in with its own user: bookings are still delivered; a publish without
 *   credentials is refused by the server, one with another role's credentials by its
 *   permissions, and one with the system's own (stolen) credentials by the calendar's
 *   read-back, counted. The partner receives none of them. In split mode (real
 *   PostgreSQL) each service signs in as its own role: the calendar's user publishes,
 *   notifications' user pulls, catalog's user cannot publish a booking event.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate, timestampNow } from '@bufbuild/protobuf/wkt';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { BookingConfirmedSchema, UserErasedSchema } from '../../gen/psync/calendar/v1/events_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import type { EventBus } from '../../services/kit/events';
import { connectNatsBus } from '../../services/kit/events';
import { createSql, type Sql } from '../../services/kit/db';
import { CALENDAR_SUBJECTS } from '../../services/notifications/intake';
import { testLogger } from '../support/bus';
import { waitForLine, ROOT } from '../support/process';
import { startPrivateNats, type PrivateNats } from '../support/private-nats';
import { freePort, logEvents, stopAllSystems, uniqueBusPrefix, type RunningSystem } from '../support/system';
import { createCertificates, type Certificates } from '../support/tls';
import { SERVICE_ROLES } from '../../services/kit/rpc';
import { canSplit, startSplitSystem, type PerRoleEnv } from '../support/split-system';
import { eventDriver, eventually, holdsFor, SystemClients, startWebhookSystem, webhookEnv, type EventDriver } from './support/harness';
import { Receiver } from './support/receiver';

const ALL = [WebhookEventType.BOOKING_CONFIRMED, WebhookEventType.BOOKING_CANCELLED, WebhookEventType.USER_ERASED];
/** Long enough for a forged event to have been delivered if it were going to be. */
const QUIET_MS = 3000;
const realNats = Boolean(process.env.NATS_URL);

let certs: Certificates;
let receiver: Receiver;

beforeAll(async () => {
  certs = await createCertificates();
  receiver = new Receiver(certs);
  await receiver.listen(); // waits while another test file holds port 8443
}, 600_000);

afterAll(async () => {
  await stopAllSystems();
  await receiver?.close();
  certs?.remove();
});

/** One running system with its clients, driver and metrics port. */
interface Running {
  system: RunningSystem;
  c: SystemClients;
  d: EventDriver;
  metricsPort: number;
  close(): Promise<void>;
}

async function start(env: Record<string, string> = {}, dataDir?: string): Promise<Running> {
  const metricsPort = await freePort();
  const system = await startWebhookSystem(certs, { env: { METRICS_PORT: String(metricsPort), ...env }, ...(dataDir ? { dataDir } : {}) });
  const c = new SystemClients(system.internalUrl);
  const d = await eventDriver(system, c);
  return {
    system,
    c,
    d,
    metricsPort,
    async close() {
      await d.close();
      c.close();
      await system.stop();
    },
  };
}

/** A new sandbox workspace with an active endpoint on its own receiver path. */
async function partner(r: Running) {
  const ws = await r.d.newWorkspace();
  const path = `/partner/${ws}`;
  await r.c.notifications.putEndpoint({ workspaceId: ws, url: `${receiver.baseUrl}${path}`, events: ALL });
  return { ws, path };
}

const deliveries = (path: string, kind?: string) => receiver.at(path, 'delivery').filter((x) => kind === undefined || x.json?.event_type === kind);

/** psync_bus_events_refused_total by `event_type/reason`, scraped from the system's /metrics. */
async function refusals(r: Running): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${r.metricsPort}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('psync_bus_events_refused_total{')) continue;
    const type = /event_type="([^"]*)"/.exec(line)?.[1];
    const reason = /reason="([^"]*)"/.exec(line)?.[1];
    out.set(`${type}/${reason}`, Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

/** A well-formed BookingConfirmed as the calendar would publish it. */
function forgedConfirmation(workspaceId: string, over: Partial<{ bookingReference: string; listingId: string }> = {}) {
  const eventId = randomUUID();
  const msg = create(BookingConfirmedSchema, {
    eventId,
    occurredAt: timestampNow(),
    workspaceId,
    environment: Environment.SANDBOX,
    bookingReference: over.bookingReference ?? `BK${randomBytes(5).toString('hex').toUpperCase()}`,
    listingId: over.listingId ?? `L${randomBytes(4).toString('hex')}`,
    checkIn: '2031-06-01',
    checkOut: '2031-06-03',
    checkInTime: '15:00',
    checkOutTime: '11:00',
    partySize: 2,
    amountPaid: { value: '1.00', currency: 'EUR' },
  });
  return { id: eventId, subject: CALENDAR_SUBJECTS.bookingConfirmed, data: toBinary(BookingConfirmedSchema, msg) };
}

function forgedErasure(workspaceId: string, bookingReference: string) {
  const eventId = randomUUID();
  const msg = create(UserErasedSchema, {
    eventId,
    occurredAt: timestampFromDate(new Date()),
    workspaceId,
    environment: Environment.SANDBOX,
    erasureId: randomUUID(),
    bookingReferences: [bookingReference],
    providerIds: [],
  });
  return { id: eventId, subject: CALENDAR_SUBJECTS.userErased, data: toBinary(UserErasedSchema, msg) };
}

/** Rows of every table of every schema holding `needle` as text (any column) or bytes (bytea columns): `schema.table` → count. */
async function tablesHolding(sql: Sql, needle: string): Promise<Record<string, number>> {
  const tables = await sql<{ s: string; t: string }[]>`
    select table_schema as s, table_name as t from information_schema.tables
    where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`;
  const bytea = await sql<{ s: string; t: string; c: string }[]>`
    select table_schema as s, table_name as t, column_name as c from information_schema.columns
    where data_type = 'bytea' and table_schema not in ('pg_catalog', 'information_schema')`;
  const found: Record<string, number> = {};
  for (const { s, t } of tables) {
    const [r] = await sql<{ n: number }[]>`select count(*)::int as n from ${sql(s)}.${sql(t)} x where x::text like ${`%${needle}%`}`;
    if (r!.n > 0) found[`${s}.${t}`] = r!.n;
  }
  for (const { s, t, c } of bytea) {
    const [r] = await sql<{ n: number }[]>`select count(*)::int as n from ${sql(s)}.${sql(t)} where position(${Buffer.from(needle)}::bytea in ${sql(c)}) > 0`;
    if (r!.n > 0) found[`${s}.${t}.${c}`] = (found[`${s}.${t}.${c}`] ?? 0) + r!.n;
  }
  return found;
}

/** The system's database: its DATABASE_URL, or its embedded data directory served once the system stopped. */
async function withDatabaseOf(system: RunningSystem, fn: (sql: Sql) => Promise<void>): Promise<void> {
  if (system.env.DATABASE_URL) {
    const sql = createSql(system.env.DATABASE_URL, { max: 1 });
    try {
      return await fn(sql);
    } finally {
      await sql.end({ timeout: 5 });
    }
  }
  await system.stop();
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/support/embedded-postgres-server.ts'), join(system.dataDir, 'postgres')], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const url = /^url (\S+)/.exec(await waitForLine(child, /^url (\S+)/, 120_000))![1]!;
    const sql = createSql(url, { max: 1 });
    try {
      await fn(sql);
    } finally {
      await sql.end({ timeout: 5 });
    }
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  }
}

/** Every message of the system's JetStream stream, as raw bytes. */
async function streamMessages(system: RunningSystem): Promise<{ subject: string; data: Uint8Array }[]> {
  const nc = await connect({ servers: system.env.NATS_URL!.split(',') });
  try {
    const jsm = await jetstreamManager(nc);
    const stream = system.env.BUS_PREFIX!.toUpperCase().replace(/-/g, '_');
    const info = await jsm.streams.info(stream);
    const out: { subject: string; data: Uint8Array }[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      // null: a sequence the stream no longer holds (deleted or expired).
      const m = await jsm.streams.getMessage(stream, { seq });
      if (m) out.push({ subject: m.subject, data: m.data });
    }
    return out;
  } finally {
    await nc.close();
  }
}

test('after erasure the guest name is on no message of the stream and in no table of any schema', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'psync-bus-trust-'));
  const r = await start({}, dataDir);
  try {
    const p = await partner(r);
    const name = `Zq${randomBytes(8).toString('hex')}`;
    const guestId = `guest-${randomUUID()}`;
    const booking = await r.d.confirmBooking(p.ws, { guestId, guestName: name });
    // The partner gets the name: notifications read it back from the calendar.
    const [confirmed] = await receiver.waitFor(() => deliveries(p.path, 'booking.confirmed').length > 0 && deliveries(p.path, 'booking.confirmed'));
    expect(confirmed!.json.data).toMatchObject({ booking_reference: booking.bookingReference, guest_name: name });
    await r.d.eraseGuest(guestId);
    await receiver.waitFor(() => deliveries(p.path, 'user.erased').length > 0);
    // The calendar now answers the scrubbed booking.
    expect((await r.c.calendar.getBooking({ bookingReference: booking.bookingReference })).booking!.guestName).toBe('');

    if (realNats) {
      const messages = await streamMessages(r.system);
      expect(messages.some((m) => m.subject.endsWith(CALENDAR_SUBJECTS.bookingConfirmed))).toBe(true);
      expect(messages.some((m) => m.subject.endsWith(CALENDAR_SUBJECTS.userErased))).toBe(true);
      expect(messages.filter((m) => Buffer.from(m.data).includes(name))).toEqual([]);
    }
    await withDatabaseOf(r.system, async (sql) => {
      // The check finds what it looks for: the (not personal) booking reference is in several tables.
      expect(Object.keys(await tablesHolding(sql, booking.bookingReference)).length).toBeGreaterThan(1);
      expect(await tablesHolding(sql, name)).toEqual({});
    });
  } finally {
    await r.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 300_000);

(realNats ? describe : describe.skip)('forged events on the NATS server (real NATS only: the in-process bus has no network)', () => {
  test('a forged BookingConfirmed for another workspace, one for no booking and a forged UserErased: no delivery, each refusal counted', async () => {
    const r = await start();
    let bus: EventBus | undefined;
    try {
      const victim = await partner(r);
      const other = await partner(r);
      // A real booking of the other workspace, then events about it and about nothing.
      const real = await r.d.confirmBooking(other.ws, { guestId: `guest-${randomUUID()}`, guestName: 'Real Guest' });
      await receiver.waitFor(() => deliveries(other.path, 'booking.confirmed').length > 0);
      const before = await refusals(r);
      bus = await connectNatsBus({ url: process.env.NATS_URL!, prefix: r.system.env.BUS_PREFIX!, log: testLogger() });
      await bus.publish(forgedConfirmation(victim.ws, { bookingReference: real.bookingReference }));
      await bus.publish(forgedConfirmation(victim.ws));
      await bus.publish(forgedErasure(victim.ws, real.bookingReference));
      const after = await eventually(
        async () => {
          const now = await refusals(r);
          const grew = (k: string) => (now.get(k) ?? 0) - (before.get(k) ?? 0);
          return grew('booking.confirmed/mismatch') >= 1 && grew('booking.confirmed/unknown_booking') >= 1 && grew('user.erased/unknown_erasure') >= 1 && now;
        },
        30_000,
        'refusals counted',
      );
      expect(after.size).toBeGreaterThan(0);
      await holdsFor(
        'nothing forged delivered',
        () => deliveries(victim.path).length === 0 && deliveries(other.path, 'user.erased').length === 0 && deliveries(other.path, 'booking.confirmed').length === 1,
        QUIET_MS,
      );
      // Logged without the event's content.
      expect(logEvents(r.system.logs(), 'webhook.domain_event.refused').length).toBeGreaterThanOrEqual(3);
    } finally {
      await bus?.close();
      await r.close();
    }
  }, 300_000);
});

describe('a private nats-server with per-role authorization', () => {
  let nats: PrivateNats | undefined;
  afterAll(async () => nats?.stop());

  test('the system works with its own credentials; forged publishes are refused by the server, its permissions or the read-back', async () => {
    const prefix = uniqueBusPrefix();
    nats = await startPrivateNats(prefix);
    const r = await start({ NATS_URL: nats.urlFor('psync'), BUS_PREFIX: prefix });
    let stolen: EventBus | undefined;
    try {
      const victim = await partner(r);
      const ok = await partner(r);
      const real = await r.d.confirmBooking(ok.ws, { guestId: `guest-${randomUUID()}`, guestName: 'Grace Hopper' });
      const [delivered] = await receiver.waitFor(() => deliveries(ok.path, 'booking.confirmed').length > 0 && deliveries(ok.path, 'booking.confirmed'));
      expect(delivered!.json.data).toMatchObject({ booking_reference: real.bookingReference, guest_name: 'Grace Hopper' });
      const before = await refusals(r);

      // No credentials: the server refuses the connection.
      await expect(connectNatsBus({ url: nats.url, prefix, log: testLogger() })).rejects.toThrow(/Authorization Violation/i);
      // Another role's credentials: the server refuses the publish.
      const catalog = await connectNatsBus({ url: nats.urlFor('catalog'), inboxOwner: 'catalog', prefix, log: testLogger() });
      try {
        await expect(catalog.publish(forgedConfirmation(victim.ws))).rejects.toThrow();
      } finally {
        await catalog.close();
      }
      // The system's own credentials, stolen: accepted by NATS, refused by the read-back and counted.
      stolen = await connectNatsBus({ url: nats.urlFor('psync'), inboxOwner: 'psync', prefix, log: testLogger() });
      await stolen.publish(forgedConfirmation(victim.ws, { bookingReference: real.bookingReference }));
      await eventually(async () => ((await refusals(r)).get('booking.confirmed/mismatch') ?? 0) > (before.get('booking.confirmed/mismatch') ?? 0), 30_000, 'refusal counted');
      await holdsFor('nothing forged delivered', () => deliveries(victim.path).length === 0 && deliveries(ok.path, 'booking.confirmed').length === 1, QUIET_MS);
    } finally {
      await stolen?.close();
      await r.close();
    }
  }, 300_000);

  (canSplit ? test : test.skip)(
    'split mode, each service with its own NATS user: deliveries work; catalog cannot publish a booking event, the calendar user only true ones',
    async () => {
      const prefix = uniqueBusPrefix();
      const own = await startPrivateNats(prefix);
      const metricsPort = await freePort();
      const perRole: PerRoleEnv = Object.fromEntries(SERVICE_ROLES.map((role) => [role, { NATS_URL: own.urlFor(role) }]));
      perRole.notifications = { ...perRole.notifications, METRICS_PORT: String(metricsPort) };
      let r: Running | undefined;
      let stolen: EventBus | undefined;
      try {
        const split = await startSplitSystem({ ...webhookEnv(certs), BUS_PREFIX: prefix }, 'http', perRole);
        const c = new SystemClients(split.urls);
        const d = await eventDriver(split.services.calendar, c);
        r = {
          system: split.services.notifications,
          c,
          d,
          metricsPort,
          async close() {
            await d.close();
            c.close();
            await split.stop();
          },
        };
        const victim = await partner(r);
        const ok = await partner(r);
        const real = await d.confirmBooking(ok.ws, { guestId: `guest-${randomUUID()}`, guestName: 'Katherine Johnson' });
        const [delivered] = await receiver.waitFor(() => deliveries(ok.path, 'booking.confirmed').length > 0 && deliveries(ok.path, 'booking.confirmed'));
        expect(delivered!.json.data).toMatchObject({ booking_reference: real.bookingReference, guest_name: 'Katherine Johnson' });
        const before = await refusals(r);

        const catalog = await connectNatsBus({ url: own.urlFor('catalog'), inboxOwner: 'catalog', prefix, log: testLogger() });
        try {
          await expect(catalog.publish(forgedConfirmation(victim.ws))).rejects.toThrow();
        } finally {
          await catalog.close();
        }
        stolen = await connectNatsBus({ url: own.urlFor('calendar'), inboxOwner: 'calendar', prefix, log: testLogger() });
        await stolen.publish(forgedConfirmation(victim.ws));
        await eventually(
          async () => ((await refusals(r!)).get('booking.confirmed/unknown_booking') ?? 0) > (before.get('booking.confirmed/unknown_booking') ?? 0),
          30_000,
          'refusal counted',
        );
        await holdsFor('nothing forged delivered', () => deliveries(victim.path).length === 0, QUIET_MS);
      } finally {
        await stolen?.close();
        await r?.close();
        await own.stop();
      }
    },
    300_000,
  );
});
