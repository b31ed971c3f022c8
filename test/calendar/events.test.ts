/**
 * Calendar events against the running system: the resumable
 * WatchEvents stream, guest erasure, and the events the outbox puts on the bus
 * (checked on the bus with NATS_URL, in the outbox table with DATABASE_URL; the
 * embedded default keeps both inside the system's process).
 */
import { Code } from '@connectrpc/connect';
import { fromBinary } from '@bufbuild/protobuf';
import { createSql, type Sql } from '../../services/kit/db';
import { connectNatsBus } from '../../services/kit/events';
import type { EventBus, ReceivedEvent, Subscription } from '../../services/kit/events';
import { type WatchEventsResponse } from '../../gen/psync/calendar/v1/calendar_pb';
import {
  CalendarChangeKind,
  BookingCancelledSchema,
  BookingConfirmedSchema,
  CalendarChangedSchema,
  CancellationInitiator,
  UserErasedSchema,
  type UserErased,
} from '../../gen/psync/calendar/v1/events_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { encodeOutboxRow } from '../../services/calendar/event-codec';
import type { OutboxRow } from '../../services/kit/events';
import { startSystem, stopAllSystems, type RunningSystem } from '../support/system';
import { testLogger } from '../support/bus';
import { startPhotoServer, type PhotoServer } from '../catalog/support/photo-server';
import { clientsFor, connectErrorOf, day, eventually, newListing, newWorkspace, pushedListing, reasonOf, uid, violationsOf, watch, type Clients } from './support';

jest.setTimeout(120_000);

let system: RunningSystem;
let c: Clients;
let photos: PhotoServer;
let ws: string;
/** Everything the system published on the bus (NATS_URL only). */
const onBus: ReceivedEvent[] = [];
let bus: EventBus | undefined;
let sub: Subscription | undefined;
let db: Sql | undefined;

/** The calendar's outbox rows as the relay publishes them (event-codec.ts encodes the plain ones). */
async function outboxMessages(sql: Sql) {
  const rows = await sql<OutboxRow[]>`select id::text, subject, data, body, headers from calendar.outbox order by seq`;
  return rows.map((r) => ({ id: r.id, ...encodeOutboxRow(r) }));
}

beforeAll(async () => {
  photos = await startPhotoServer();
  await photos.image('/villa.jpg', 1200, 800, 'jpeg', 3);
  system = await startSystem({ env: { EGRESS_ALLOW_CIDRS: '127.0.0.0/8' } });
  c = clientsFor(system.internalUrl);
  ws = await newWorkspace(c);
  if (process.env.NATS_URL) {
    bus = await connectNatsBus({ url: process.env.NATS_URL, prefix: system.env.BUS_PREFIX!, log: testLogger() });
    sub = await bus.subscribe({ durable: `calendar-test-${uid('d').replace(/[^a-z0-9-]/gi, '')}`, subjects: ['psync.calendar.v1.>'], handler: async (e) => void onBus.push(e) });
  }
  if (system.env.DATABASE_URL) db = createSql(system.env.DATABASE_URL, { max: 2 });
}, 120_000);

afterAll(async () => {
  await sub?.stop();
  await bus?.close();
  await db?.end({ timeout: 5 });
  c?.close();
  await stopAllSystems();
  await photos?.close();
});

const book = (listingId: string, checkIn: string, checkOut: string, guestId: string, guestName: string) =>
  c.calendar.confirmBooking({ listingId, checkIn, checkOut, guestId, guestName, partySize: 2, amountPaid: { value: '99.90', currency: 'EUR' } });

/** A compact description of a stream message, for order comparisons. */
const describe_ = (m: WatchEventsResponse) =>
  m.event.case === 'calendarChanged'
    ? `changed:${m.event.value.kind}:${m.event.value.holder?.id}`
    : m.event.case === 'bookingConfirmed'
      ? `confirmed:${m.event.value.bookingReference}`
      : m.event.case === 'bookingCancelled'
        ? `cancelled:${m.event.value.bookingReference}`
        : 'none';

describe('WatchEvents', () => {
  test('streams in order, resumes right after a cursor, then tails new events', async () => {
    const listing = await newListing(c, ws);
    const w1 = watch(c.calendar, { listingId: listing });
    const h1 = (await c.calendar.placeHold({ listingId: listing, checkIn: day(0), checkOut: day(2) })).hold!;
    const b = (await book(listing, day(3), day(5), 'g-order', 'Order Guest')).booking!;
    await c.calendar.releaseHold({ holdId: h1.holdId });
    const first = await w1.until((m) => m.event.case === 'calendarChanged' && m.event.value.holder?.id === h1.holdId && !!m.event.value.released);
    await w1.stop();
    // hold placed, booking (changed + confirmed), hold released
    expect(w1.received.map(describe_)).toEqual([`changed:4:${h1.holdId}`, `changed:7:${b.bookingReference}`, `confirmed:${b.bookingReference}`, `changed:5:${h1.holdId}`]);
    const cursors = w1.received.map((m) => m.cursor);
    expect(new Set(cursors).size).toBe(4);
    expect(first.cursor).toBe(cursors[3]);

    // Changes while nobody watches.
    await c.calendar.cancelBooking({ bookingReference: b.bookingReference, initiatedBy: CancellationInitiator.GUEST });

    // Resume after the second message: the rest, in the same order, then what happened since.
    const w2 = watch(c.calendar, { listingId: listing, cursor: cursors[1] });
    try {
      await w2.until((m) => m.event.case === 'bookingCancelled');
      expect(w2.received.map(describe_)).toEqual([
        `confirmed:${b.bookingReference}`,
        `changed:5:${h1.holdId}`,
        `changed:8:${b.bookingReference}`,
        `cancelled:${b.bookingReference}`,
      ]);
      expect(w2.received.slice(0, 2).map((m) => m.cursor)).toEqual(cursors.slice(2));
      // ... and keeps tailing.
      const h2 = (await c.calendar.placeHold({ listingId: listing, checkIn: day(8), checkOut: day(9) })).hold!;
      await w2.until((m) => m.event.case === 'calendarChanged' && m.event.value.holder?.id === h2.holdId);
    } finally {
      await w2.stop();
    }
    // Resuming from the newest cursor gives nothing old.
    const w3 = watch(c.calendar, { listingId: listing, cursor: cursors[3] });
    try {
      await w3.until((m) => m.event.case === 'calendarChanged' && m.event.value.kind === CalendarChangeKind.BOOKING_CANCELLED);
      expect(w3.received.map(describe_)[0]).toBe(`changed:8:${b.bookingReference}`);
    } finally {
      await w3.stop();
    }
  });

  test('filters by workspace; without a cursor starts at the oldest event', async () => {
    const other = await newWorkspace(c);
    const l1 = await newListing(c, other);
    const l2 = await newListing(c, other);
    await c.calendar.placeHold({ listingId: l1, checkIn: day(0), checkOut: day(1) });
    await c.calendar.placeHold({ listingId: l2, checkIn: day(0), checkOut: day(1) });
    const w = watch(c.calendar, { workspaceId: other });
    try {
      await eventually(async () => w.received.length >= 2, 10000, 'two events');
      expect(w.received.map((m) => (m.event.value as { listingId: string }).listingId)).toEqual([l1, l2]);
      expect(w.received.every((m) => (m.event.value as { workspaceId: string }).workspaceId === other)).toBe(true);
    } finally {
      await w.stop();
    }
  });

  test('a malformed or unknown cursor is INVALID_ARGUMENT', async () => {
    for (const cursor of ['abc', '0', '999999999999']) {
      const w = watch(c.calendar, { cursor });
      await eventually(async () => w.error() !== undefined, 10000, 'the stream to fail');
      const err = w.error() as { code: Code };
      expect(err.code).toBe(Code.InvalidArgument);
      await w.stop();
    }
  });
});

describe('guest erasure', () => {
  test("scrubs the guest's data at once and names, per partner workspace, the booking references and that partner's provider ids", async () => {
    // Workspace A: a property the partner pushed (so it has a provider_id) and a marketplace listing.
    const providerId = uid('villa');
    const partnerListing = await pushedListing(c, ws, providerId, `${photos.base}/villa.jpg`);
    const marketListing = await newListing(c, ws);
    // Workspace B: one marketplace listing.
    const wsB = await newWorkspace(c);
    const listingB = await newListing(c, wsB);

    const guest = uid('guest');
    const b1 = (await book(partnerListing, day(0), day(2), guest, 'Grace Hopper')).booking!;
    const b2 = (await book(marketListing, day(0), day(2), guest, 'Grace Hopper')).booking!;
    const b3 = (await book(listingB, day(0), day(2), guest, 'Grace Hopper')).booking!;
    const other = (await book(partnerListing, day(5), day(6), uid('guest'), 'Alan Turing')).booking!;
    // booking.confirmed of a pushed property names its provider_id; the booking keeps it too.
    expect(b1.providerId).toBe(providerId);
    expect(b1).toMatchObject({ guestName: 'Grace Hopper' });

    const res = await c.calendar.eraseGuest({ guestId: guest });
    expect(res.erasureId).toMatch(/^[0-9a-f-]{36}$/);
    expect(res).toMatchObject({ bookingsErased: 3, workspacesNotified: 2 });
    // GetErasure, the read-back that proves a UserErased to notifications: per workspace.
    expect(await c.calendar.getErasure({ erasureId: res.erasureId, workspaceId: ws })).toMatchObject({
      environment: Environment.SANDBOX,
      bookingReferences: [b1.bookingReference, b2.bookingReference].sort(),
      providerIds: [providerId],
    });
    expect((await c.calendar.getErasure({ erasureId: res.erasureId, workspaceId: wsB })).bookingReferences).toEqual([b3.bookingReference]);
    expect((await c.calendar.getErasure({ erasureId: '00000000-0000-4000-8000-000000000000', workspaceId: ws })).bookingReferences).toEqual([]);

    for (const ref of [b1, b2, b3].map((b) => b.bookingReference)) {
      expect((await c.calendar.getBooking({ bookingReference: ref })).booking?.guestName).toBe('');
    }
    expect((await c.calendar.getBooking({ bookingReference: other.bookingReference })).booking?.guestName).toBe('Alan Turing');

    // Streamed events carry no guest name, erased or not (GetBooking has it).
    const w = watch(c.calendar, { listingId: partnerListing });
    try {
      const confirmed = await eventually(
        async () => {
          const all = w.received.filter((m) => m.event.case === 'bookingConfirmed');
          return all.length >= 2 ? all : undefined;
        },
        10000,
        'both booking.confirmed events',
      );
      const byRef = new Map(confirmed.map((m) => [(m.event.value as { bookingReference: string }).bookingReference, m.event.value as { guestName: string; providerId?: string }]));
      expect(byRef.get(b1.bookingReference)).toMatchObject({ guestName: '', providerId });
      expect(byRef.get(other.bookingReference)).toMatchObject({ guestName: '', providerId });
    } finally {
      await w.stop();
    }

    const expected = [
      { workspaceId: ws, bookingReferences: [b1.bookingReference, b2.bookingReference].sort(), providerIds: [providerId] },
      { workspaceId: wsB, bookingReferences: [b3.bookingReference], providerIds: [] },
    ].sort((x, y) => x.workspaceId.localeCompare(y.workspaceId));
    const shape = (e: UserErased) => ({ workspaceId: e.workspaceId, bookingReferences: [...e.bookingReferences], providerIds: [...e.providerIds] });

    if (db) {
      const rows = (await outboxMessages(db)).filter((m) => m.subject === 'psync.calendar.v1.UserErased');
      const erased = rows.map((r) => fromBinary(UserErasedSchema, r.data)).filter((e) => e.erasureId === res.erasureId);
      expect(erased.map(shape).sort((x, y) => x.workspaceId.localeCompare(y.workspaceId))).toEqual(expected);
      expect(erased.every((e) => e.environment === Environment.SANDBOX && e.eventId !== '')).toBe(true);
      // No guest id anywhere in the calendar's tables any more.
      const [left] = await db<{ n: number }[]>`select count(*)::int as n from calendar.bookings where guest_id = ${guest}`;
      expect(left!.n).toBe(0);
      // Nor the guest's name in an event body (or encoded message) of the log or the outbox.
      const [named] = await db<{ n: number }[]>`
        select count(*)::int as n from (
          select data, body from calendar.outbox union all select data, body from calendar.events
        ) e
        where position(convert_to(${'Grace Hopper'}, 'UTF8') in coalesce(e.data, convert_to(e.body::text, 'UTF8'))) > 0`;
      expect(named!.n).toBe(0);
    }
    if (bus) {
      const erased = await eventually(
        async () => {
          const got = onBus
            .filter((e) => e.subject === 'psync.calendar.v1.UserErased')
            .map((e) => fromBinary(UserErasedSchema, e.data))
            .filter((e) => e.erasureId === res.erasureId);
          return got.length === 2 ? got : undefined;
        },
        20000,
        'two user.erased events on the bus',
      );
      expect(erased.map(shape).sort((x, y) => x.workspaceId.localeCompare(y.workspaceId))).toEqual(expected);
    }

    // Nothing is left to erase.
    await expect(c.calendar.eraseGuest({ guestId: guest })).resolves.toMatchObject({ bookingsErased: 0, workspacesNotified: 0 });
    expect(violationsOf(await connectErrorOf(c.calendar.eraseGuest({ guestId: '' })))).toEqual([{ field: 'guest_id', code: 'required' }]);
  });
});

describe('events through the outbox', () => {
  // The embedded default keeps its outbox (PGlite) and bus inside the system's process:
  // nothing outside can look, so this runs with DATABASE_URL and/or NATS_URL only.
  const realOnly = process.env.DATABASE_URL || process.env.NATS_URL ? test : test.skip;
  realOnly('booking confirmed/cancelled and calendar changes reach the outbox and the bus with the ids WatchEvents shows (real PostgreSQL/NATS only)', async () => {
    const listing = await newListing(c, ws, { checkInTime: '14:00', checkOutTime: '09:30' });
    const b = (await book(listing, day(40), day(42), uid('g'), 'Bus Guest')).booking!;
    await c.calendar.cancelBooking({ bookingReference: b.bookingReference, initiatedBy: CancellationInitiator.HOST });
    const w = watch(c.calendar, { listingId: listing });
    let streamIds: string[];
    try {
      await w.until((m) => m.event.case === 'bookingCancelled');
      streamIds = w.received.map((m) => (m.event.value as { eventId: string }).eventId);
    } finally {
      await w.stop();
    }
    expect(streamIds).toHaveLength(4);

    const decodeAll = (items: { subject: string; data: Uint8Array; id: string }[]) =>
      items
        .map((e) => {
          switch (e.subject) {
            case 'psync.calendar.v1.BookingConfirmed':
              return { id: e.id, msg: fromBinary(BookingConfirmedSchema, e.data) };
            case 'psync.calendar.v1.BookingCancelled':
              return { id: e.id, msg: fromBinary(BookingCancelledSchema, e.data) };
            case 'psync.calendar.v1.CalendarChanged':
              return { id: e.id, msg: fromBinary(CalendarChangedSchema, e.data) };
            default:
              return undefined;
          }
        })
        .filter((x) => x && x.msg.listingId === listing) as { id: string; msg: { eventId: string } }[];

    if (db) {
      const mine = decodeAll(await outboxMessages(db));
      expect(mine.map((m) => m.id)).toEqual(streamIds);
      expect(mine.every((m) => m.id === m.msg.eventId)).toBe(true);
      // The relay publishes them.
      await eventually(
        async () => {
          const [r] = await db!<{ n: number }[]>`select count(*)::int as n from calendar.outbox where id in ${db!(streamIds)} and published_at is null`;
          return r!.n === 0;
        },
        20000,
        'the outbox relay',
      );
    }
    if (bus) {
      const mine = await eventually(
        async () => {
          const got = decodeAll(onBus);
          return got.length >= 4 ? got : undefined;
        },
        20000,
        'the events on the bus',
      );
      expect(mine.map((m) => m.id)).toEqual(streamIds);
      const confirmed = fromBinary(BookingConfirmedSchema, onBus.find((e) => e.id === streamIds[1])!.data);
      expect(confirmed).toMatchObject({ bookingReference: b.bookingReference, checkInTime: '14:00', checkOutTime: '09:30', guestName: '', partySize: 2 });
      // No personal data on the bus: the name is only the calendar's.
      expect(Buffer.from(onBus.find((e) => e.id === streamIds[1])!.data).includes('Bus Guest')).toBe(false);
      const cancelled = fromBinary(BookingCancelledSchema, onBus.find((e) => e.id === streamIds[3])!.data);
      expect(cancelled).toMatchObject({ bookingReference: b.bookingReference, initiatedBy: CancellationInitiator.HOST });
    }
  });

  test('an unknown listing is refused before anything is written', async () => {
    const err = await connectErrorOf(book('lst_unknown0000000000000000', day(0), day(1), 'g', 'G'));
    expect(reasonOf(err)).toBe(ErrorReason.LISTING_NOT_FOUND);
  });
});

describe('shutdown', () => {
  // Last in this file: it stops the system.
  test('SIGTERM ends open WatchEvents streams cleanly and the process exits 0', async () => {
    const w = watch(c.calendar, {});
    await eventually(async () => w.received.length > 0, 10000, 'the backlog');
    const t0 = Date.now();
    expect(await system.stop()).toBe(0);
    expect(Date.now() - t0).toBeLessThan(5000); // not held until SHUTDOWN_GRACE_MS by the open stream
    await w.stop();
    expect(w.error()).toBeUndefined();
  });
});
