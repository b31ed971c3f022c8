/**
 * The consumer-side dedupe on the kit's processed_events table, through its consumer,
 * the notifications intake (services/notifications/intake.ts): a redelivered event
 * creates nothing twice, concurrent deliveries of one event create one delivery, and
 * a failed write leaves no mark, so the redelivery creates the delivery; a cancellation
 * handled before its booking's confirmation waits for it (the pullers run concurrently),
 * and a confirmation after the cancellation was told is refused.
 *
 * Schemas from the real migrations; real PostgreSQL when DATABASE_URL is set, else
 * embedded PGlite. The calendar's read-back (event-proof.ts) is played by an owner that
 * knows the bookings these tests made; test/notifications/forged-events.test.ts runs it
 * against the real calendar.
 */
import { randomUUID } from 'node:crypto';
import { create, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { BookingCancelledSchema, BookingConfirmedSchema, CancellationInitiator, type BookingConfirmed } from '../../gen/psync/calendar/v1/events_pb';
import { BookingSchema, BookingStatus, GetErasureResponseSchema, type Booking } from '../../gen/psync/calendar/v1/calendar_pb';
import type { EventOwner } from '../../services/notifications/event-proof';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import type { ReceivedEvent } from '../../services/kit/events';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { notificationsModule } from '../../services/notifications/module';
import { CALENDAR_SUBJECTS, DeliveryIntake, INTAKE_CONSUMER } from '../../services/notifications/intake';
import { testLogger } from '../support/bus';
import { startTestDatabase, type TestDatabase } from '../support/database';

let db: TestDatabase;
let intake: DeliveryIntake;
let created = 0;
/** The bookings the calendar would know of: those of the events made below. */
const bookings = new Map<string, Booking>();
const owner: EventOwner = {
  booking: async (reference) => bookings.get(reference),
  erasure: async () => create(GetErasureResponseSchema, {}),
};

function booked(e: BookingConfirmed): void {
  bookings.set(
    e.bookingReference,
    create(BookingSchema, {
      bookingReference: e.bookingReference,
      listingId: e.listingId,
      workspaceId: e.workspaceId,
      environment: e.environment,
      checkIn: e.checkIn,
      checkOut: e.checkOut,
      checkInTime: e.checkInTime,
      checkOutTime: e.checkOutTime,
      partySize: e.partySize,
      amountPaid: e.amountPaid,
      guestName: 'Ada Lovelace',
      status: BookingStatus.CONFIRMED,
      confirmedAt: e.occurredAt,
    }),
  );
}

beforeAll(async () => {
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'notifications', sources: [KIT_MIGRATIONS, notificationsModule.migrations] });
  intake = new DeliveryIntake({ sql: db.sql, log: testLogger(), owner, onDeliveryCreated: () => void created++ });
}, 60_000);
afterAll(async () => db?.stop());

/** A sandbox workspace whose active endpoint takes booking.confirmed. */
async function endpoint(events = ['booking.confirmed']): Promise<string> {
  const ws = randomUUID();
  await db.sql`
    insert into notifications.endpoints (workspace_id, url, events, status, secret_ciphertext)
    values (${ws}, ${`https://partner.example/${ws}`}, ${db.sql.array(events)}::text[], 'active', '\\x00')`;
  return ws;
}

function confirmed(workspaceId: string, eventId = randomUUID(), deliveryCount = 1): ReceivedEvent {
  const msg = create(BookingConfirmedSchema, {
    eventId,
    occurredAt: timestampFromDate(new Date()),
    workspaceId,
    environment: Environment.SANDBOX,
    bookingReference: `BK-${eventId.slice(0, 8)}`,
    listingId: 'L1',
    checkIn: '2031-01-01',
    checkOut: '2031-01-03',
    checkInTime: '15:00',
    checkOutTime: '11:00',
    partySize: 2,
    amountPaid: { value: '123.45', currency: 'EUR' },
  });
  booked(msg);
  return { id: eventId, subject: CALENDAR_SUBJECTS.bookingConfirmed, data: toBinary(BookingConfirmedSchema, msg), headers: {}, deliveryCount };
}

async function deliveries(ws: string): Promise<string[]> {
  return (await db.sql<{ event_id: string }[]>`select event_id from notifications.deliveries where workspace_id = ${ws} order by id`).map((r) => r.event_id);
}

async function marks(eventId: string): Promise<string[]> {
  return (await db.sql<{ consumer: string }[]>`select consumer from notifications.processed_events where event_id = ${eventId}`).map((r) => r.consumer);
}

test('a redelivered event is marked once and creates one delivery; concurrent deliveries of one event too', async () => {
  const ws = await endpoint();
  const first = confirmed(ws);
  const before = created;
  await intake.handle(first);
  await intake.handle({ ...first, deliveryCount: 2 });
  expect(await deliveries(ws)).toEqual([first.id]);
  expect(await marks(first.id)).toEqual([INTAKE_CONSUMER]);
  expect(created).toBe(before + 1);

  const second = confirmed(ws);
  await Promise.all([1, 2, 3, 4].map((n) => intake.handle({ ...second, deliveryCount: n })));
  expect(await deliveries(ws)).toEqual([first.id, second.id]);
  expect(await marks(second.id)).toEqual([INTAKE_CONSUMER]);
});

test('a failed write rolls back the mark with it: the redelivery creates the delivery', async () => {
  const ws = await endpoint();
  const event = confirmed(ws);
  await db.sql`alter table notifications.deliveries rename to deliveries_away`;
  try {
    await expect(intake.handle(event)).rejects.toMatchObject({ code: '42P01' });
  } finally {
    await db.sql`alter table notifications.deliveries_away rename to deliveries`;
  }
  expect(await marks(event.id)).toEqual([]);
  await intake.handle({ ...event, deliveryCount: 2 });
  expect(await deliveries(ws)).toEqual([event.id]);
  expect(await marks(event.id)).toEqual([INTAKE_CONSUMER]);
});

/** The cancellation of the booking `confirmation` made (now, by the guest), as the calendar would publish it. */
function cancellation(confirmation: ReceivedEvent, deliveryCount = 1): ReceivedEvent {
  // confirmed() names each booking after its event.
  const ref = bookings.get(`BK-${confirmation.id.slice(0, 8)}`)!;
  const at = timestampFromDate(new Date());
  ref.status = BookingStatus.CANCELLED;
  ref.cancelledAt = at;
  ref.initiatedBy = CancellationInitiator.GUEST;
  const eventId = randomUUID();
  const msg = create(BookingCancelledSchema, {
    eventId,
    occurredAt: at,
    cancelledAt: at,
    workspaceId: ref.workspaceId,
    environment: Environment.SANDBOX,
    bookingReference: ref.bookingReference,
    listingId: ref.listingId,
    initiatedBy: CancellationInitiator.GUEST,
  });
  return { id: eventId, subject: CALENDAR_SUBJECTS.bookingCancelled, data: toBinary(BookingCancelledSchema, msg), headers: {}, deliveryCount };
}

test('a cancellation handled before its confirmation waits for it; a confirmation after a told cancellation is refused', async () => {
  const ws = await endpoint(['booking.confirmed', 'booking.cancelled']);
  const confirmation = confirmed(ws);
  const cancel = cancellation(confirmation);
  // The cancellation first (another puller has the confirmation): handed back to the bus.
  await expect(intake.handle(cancel)).rejects.toThrow(/confirmation is not recorded yet/);
  await intake.handle(confirmation);
  await intake.handle({ ...cancel, deliveryCount: 2 });
  expect(await deliveries(ws)).toEqual([confirmation.id, cancel.id]);

  // A confirmation that never came in time: the cancellation goes after its last wait, the late confirmation is refused.
  const late = confirmed(ws);
  const lateCancel = cancellation(late, 10);
  await intake.handle(lateCancel);
  await intake.handle(late);
  expect(await deliveries(ws)).toEqual([confirmation.id, cancel.id, lateCancel.id]);
});
