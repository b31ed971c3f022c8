/**
 * The events feed (services/notifications/event-feed.ts), recorded by the intake
 * (intake.ts) and read by ListEvents, on the real migrations: real PostgreSQL when
 * DATABASE_URL is set, else embedded PGlite. The calendar's read-back is played by an
 * owner that knows the bookings and erasures these tests made.
 *
 * - every proven event is recorded, delivered or not (no endpoint, a paused one), each
 *   exactly the body its delivery carries;
 * - paging by position; a redelivered event is recorded once; two intakes writing one
 *   workspace's events at once number them without a gap in order or a duplicate;
 * - an erasure takes the guest's name out of the feed's confirmations, and of those
 *   recorded after it;
 * - the retention prunes by age and a reader resuming from a pruned position is told.
 */
import { randomUUID } from 'node:crypto';
import { create, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { BookingCancelledSchema, BookingConfirmedSchema, CancellationInitiator, UserErasedSchema } from '../../gen/psync/calendar/v1/events_pb';
import { BookingSchema, BookingStatus, GetErasureResponseSchema, type Booking, type GetErasureResponse } from '../../gen/psync/calendar/v1/calendar_pb';
import { ListEventsRequestSchema } from '../../gen/psync/notifications/v1/notifications_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import type { ReceivedEvent } from '../../services/kit/events';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import type { EventOwner } from '../../services/notifications/event-proof';
import { listEvents, pruneEventFeedOnce } from '../../services/notifications/event-feed';
import { notificationsModule } from '../../services/notifications/module';
import { CALENDAR_SUBJECTS, DeliveryIntake } from '../../services/notifications/intake';
import { testLogger } from '../support/bus';
import { startTestDatabase, type TestDatabase } from '../support/database';

let db: TestDatabase;
let intake: DeliveryIntake;
const bookings = new Map<string, Booking>();
const erasures = new Map<string, GetErasureResponse>();
const owner: EventOwner = {
  booking: async (reference) => bookings.get(reference),
  erasure: async (erasureId) => erasures.get(erasureId) ?? create(GetErasureResponseSchema, {}),
};

beforeAll(async () => {
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'notifications', sources: [KIT_MIGRATIONS, notificationsModule.migrations] });
  intake = new DeliveryIntake({ sql: db.sql, log: testLogger(), owner, onDeliveryCreated: () => undefined });
}, 60_000);
afterAll(async () => db?.stop());

const at = new Date('2031-01-01T10:00:00.123Z');

function confirmed(workspaceId: string, reference = `BK-${randomUUID().slice(0, 8)}`): ReceivedEvent {
  const eventId = randomUUID();
  const msg = create(BookingConfirmedSchema, {
    eventId,
    occurredAt: timestampFromDate(at),
    workspaceId,
    environment: Environment.SANDBOX,
    bookingReference: reference,
    listingId: 'L1',
    checkIn: '2031-02-01',
    checkOut: '2031-02-03',
    checkInTime: '15:00',
    checkOutTime: '11:00',
    partySize: 2,
    amountPaid: { value: '123.45', currency: 'EUR' },
  });
  bookings.set(
    reference,
    create(BookingSchema, {
      bookingReference: reference,
      listingId: 'L1',
      workspaceId,
      environment: Environment.SANDBOX,
      checkIn: msg.checkIn,
      checkOut: msg.checkOut,
      checkInTime: msg.checkInTime,
      checkOutTime: msg.checkOutTime,
      partySize: 2,
      amountPaid: msg.amountPaid,
      guestName: 'Ada Lovelace',
      status: BookingStatus.CONFIRMED,
      confirmedAt: msg.occurredAt,
    }),
  );
  return { id: eventId, subject: CALENDAR_SUBJECTS.bookingConfirmed, data: toBinary(BookingConfirmedSchema, msg), headers: {}, deliveryCount: 1 };
}

function cancelled(workspaceId: string, reference: string): ReceivedEvent {
  const eventId = randomUUID();
  const booking = bookings.get(reference)!;
  booking.status = BookingStatus.CANCELLED;
  booking.cancelledAt = timestampFromDate(at);
  booking.initiatedBy = CancellationInitiator.GUEST;
  const msg = create(BookingCancelledSchema, {
    eventId,
    occurredAt: timestampFromDate(at),
    cancelledAt: timestampFromDate(at),
    workspaceId,
    environment: Environment.SANDBOX,
    bookingReference: reference,
    listingId: 'L1',
    initiatedBy: CancellationInitiator.GUEST,
  });
  return { id: eventId, subject: CALENDAR_SUBJECTS.bookingCancelled, data: toBinary(BookingCancelledSchema, msg), headers: {}, deliveryCount: 1 };
}

function erased(workspaceId: string, references: string[]): ReceivedEvent {
  const eventId = randomUUID();
  const erasureId = randomUUID();
  erasures.set(erasureId, create(GetErasureResponseSchema, { bookingReferences: references, providerIds: [], environment: Environment.SANDBOX, erasedAt: timestampFromDate(at) }));
  const msg = create(UserErasedSchema, {
    eventId,
    erasureId,
    occurredAt: timestampFromDate(at),
    workspaceId,
    environment: Environment.SANDBOX,
    bookingReferences: references,
    providerIds: [],
  });
  return { id: eventId, subject: CALENDAR_SUBJECTS.userErased, data: toBinary(UserErasedSchema, msg), headers: {}, deliveryCount: 1 };
}

const feed = (workspaceId: string, after?: bigint, limit = 0) =>
  listEvents(db.sql, create(ListEventsRequestSchema, { workspaceId, ...(after === undefined ? {} : { after }), limit }));
const envelopes = async (ws: string) => (await feed(ws)).events.map((e) => JSON.parse(e.envelope) as { event_id: string; event_type: string; data: Record<string, unknown> });

test('every proven event is recorded whether or not an endpoint takes it, exactly as its delivery body', async () => {
  const none = randomUUID();
  const paused = randomUUID();
  const active = randomUUID();
  await db.sql`
    insert into notifications.endpoints (workspace_id, url, events, status, secret_ciphertext) values
      (${paused}, 'https://partner.example/p', '{}'::text[], 'active', '\\x00'),
      (${active}, 'https://partner.example/a', ${db.sql.array(['booking.confirmed'])}::text[], 'active', '\\x00')`;
  for (const ws of [none, paused, active]) await intake.handle(confirmed(ws));

  for (const ws of [none, paused]) {
    const page = await feed(ws);
    expect(page.events.map((e) => e.position)).toEqual([1n]);
    expect(JSON.parse(page.events[0]!.envelope)).toMatchObject({ event_type: 'booking.confirmed', data: { guest_name: 'Ada Lovelace', listing_id: 'L1' } });
    expect(await db.sql`select 1 from notifications.deliveries where workspace_id = ${ws}`).toHaveLength(0);
  }
  const [delivery] = await db.sql<{ body: string; event_id: string }[]>`select body, event_id from notifications.deliveries where workspace_id = ${active}`;
  const [entry] = (await feed(active)).events;
  expect(entry!.envelope).toBe(delivery!.body);
  expect(JSON.parse(entry!.envelope).event_id).toBe(delivery!.event_id);
});

test('pages by position; a redelivered event is recorded once; reading past the end answers nothing', async () => {
  const ws = randomUUID();
  const first = confirmed(ws);
  const ref = bookings.get([...bookings.keys()].at(-1)!)!.bookingReference;
  await intake.handle(first);
  await intake.handle({ ...first, deliveryCount: 2 });
  await intake.handle(cancelled(ws, ref));
  await intake.handle(confirmed(ws));

  const one = await feed(ws, undefined, 2);
  expect([one.events.map((e) => e.position), one.nextAfter, one.hasMore, one.afterExpired]).toEqual([[1n, 2n], 2n, true, false]);
  expect(JSON.parse(one.events[0]!.envelope).event_id).toBe(first.id);
  expect(JSON.parse(one.events[1]!.envelope)).toMatchObject({ event_type: 'booking.cancelled', data: { booking_reference: ref, initiated_by: 'guest' } });
  const two = await feed(ws, one.nextAfter, 2);
  expect([two.events.map((e) => e.position), two.nextAfter, two.hasMore]).toEqual([[3n], 3n, false]);
  const past = await feed(ws, 3n);
  expect([past.events, past.nextAfter, past.hasMore]).toEqual([[], 3n, false]);
  expect((await feed(randomUUID())).nextAfter).toBeUndefined();
});

test("two intakes writing one workspace's events at once: increasing positions, each event once", async () => {
  const ws = randomUUID();
  const other = new DeliveryIntake({ sql: db.sql, log: testLogger(), owner, onDeliveryCreated: () => undefined });
  const events = Array.from({ length: 40 }, () => confirmed(ws));
  await Promise.all(events.map((e, i) => (i % 2 ? intake : other).handle(e)));
  const page = await feed(ws, undefined, 200);
  expect(page.events).toHaveLength(40);
  expect(new Set(page.events.map((e) => JSON.parse(e.envelope).event_id))).toEqual(new Set(events.map((e) => e.id)));
  const positions = page.events.map((e) => Number(e.position));
  expect(positions).toEqual([...positions].sort((a, b) => a - b));
  expect(new Set(positions).size).toBe(40);
});

test("an erasure takes the guest's name out of the feed's confirmations, before and after it", async () => {
  const ws = randomUUID();
  const before = confirmed(ws);
  const ref = [...bookings.keys()].at(-1)!;
  // A second booking of the guest whose confirmation is handled after the erasure (events are handled concurrently).
  const late = confirmed(ws);
  const lateRef = [...bookings.keys()].at(-1)!;
  await intake.handle(before);
  await intake.handle(erased(ws, [ref, lateRef].sort()));
  await intake.handle(late);
  const items = await envelopes(ws);
  expect(items.map((e) => [e.event_type, e.data.guest_name])).toEqual([
    ['booking.confirmed', null],
    ['user.erased', undefined],
    ['booking.confirmed', null],
  ]);
  expect(items[1]!.data).toEqual({ booking_references: [ref, lateRef].sort(), provider_ids: [] });
});

test('the retention prunes by age; resuming from a pruned position says so', async () => {
  const ws = randomUUID();
  for (let i = 0; i < 3; i++) await intake.handle(confirmed(ws));
  await db.sql`update notifications.event_feed set recorded_at = now() - interval '40 days' where workspace_id = ${ws} and position <= 2`;
  expect(await pruneEventFeedOnce(db.sql, 35, 10_000)).toBeGreaterThanOrEqual(2);
  const resumed = await feed(ws, 1n);
  expect([resumed.events.map((e) => e.position), resumed.afterExpired]).toEqual([[3n], true]);
  expect((await feed(ws, 2n)).afterExpired).toBe(false);
  expect((await feed(ws)).afterExpired).toBe(false);
});
