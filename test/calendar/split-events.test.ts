/**
 * Calendar events in the Kubernetes shape (one process per service; needs DATABASE_URL
 * and NATS_URL): the calendar process's outbox relay encodes the plain rows with the
 * calendar module's encoder (event-codec.ts), so an event written inside `put_block`
 * and events written from TypeScript (a booking) reach NATS as their protobuf messages,
 * under their full names, with the ids and content WatchEvents streams.
 */
import { fromBinary, toBinary, type DescMessage } from '@bufbuild/protobuf';
import { BookingConfirmedSchema, CalendarChangedSchema, CalendarChangeKind } from '../../gen/psync/calendar/v1/events_pb';
import { connectNatsBus } from '../../services/kit/events';
import type { EventBus, ReceivedEvent, Subscription } from '../../services/kit/events';
import { testLogger } from '../support/bus';
import { internalClients, type InternalClients } from '../support/internal-clients';
import { canSplit, startSplitSystem, type SplitSystem } from '../support/split-system';
import { day, eventually, newListing, newWorkspace, uid, watch, type Clients } from './support';

jest.setTimeout(180_000);

(canSplit ? describe : describe.skip)('calendar events with one process per service (needs DATABASE_URL and NATS_URL)', () => {
  let split: SplitSystem;
  const opened: InternalClients[] = [];
  let c: Clients;
  let bus: EventBus;
  let sub: Subscription;
  const onBus: ReceivedEvent[] = [];

  beforeAll(async () => {
    split = await startSplitSystem();
    const at = (url: string) => {
      const clients = internalClients(url);
      opened.push(clients);
      return clients;
    };
    c = { identity: at(split.urls.identity).identity, catalog: at(split.urls.catalog).catalog, calendar: at(split.urls.calendar).calendar, close: () => undefined };
    bus = await connectNatsBus({ url: process.env.NATS_URL!, prefix: split.shared.BUS_PREFIX!, log: testLogger() });
    sub = await bus.subscribe({ durable: `split-events-${uid('d').replace(/[^a-z0-9-]/gi, '')}`, subjects: ['psync.calendar.v1.>'], handler: async (e) => void onBus.push(e) });
  }, 180_000);

  afterAll(async () => {
    await sub?.stop();
    await bus?.close();
    for (const clients of opened) clients.close();
    await split?.stop();
  });

  test('a block pushed in SQL and a booking written in TypeScript reach the bus as the messages WatchEvents streams', async () => {
    const ws = await newWorkspace(c);
    const listing = await newListing(c, ws);
    const blockUid = uid('b');
    await c.calendar.putBlock({ workspaceId: ws, externalUid: blockUid, target: { case: 'listingId', value: listing }, checkIn: day(0), checkOut: day(3) });
    await c.calendar.confirmBooking({
      listingId: listing,
      checkIn: day(10),
      checkOut: day(12),
      guestId: uid('g'),
      guestName: 'Split Guest',
      partySize: 2,
      amountPaid: { value: '100.00', currency: 'EUR' },
    });

    const w = watch(c.calendar, { listingId: listing });
    try {
      await w.until((m) => m.event.case === 'bookingConfirmed');
    } finally {
      await w.stop();
    }
    const streamed = w.received;
    // BLOCK_CREATED (put_block), BOOKING_CONFIRMED (the nights) and BookingConfirmed.
    expect(streamed.map((m) => m.event.case)).toEqual(['calendarChanged', 'calendarChanged', 'bookingConfirmed']);
    expect((streamed[0]!.event.value as { kind: CalendarChangeKind }).kind).toBe(CalendarChangeKind.BLOCK_CREATED);

    const published = await eventually(
      async () => {
        const ids = new Set(streamed.map((m) => (m.event.value as { eventId: string }).eventId));
        const got = onBus.filter((e) => ids.has(e.id));
        return got.length === ids.size ? got : undefined;
      },
      30_000,
      'the three events on NATS',
    );
    for (const m of streamed) {
      const value = m.event.value as { eventId: string };
      const e = published.find((x) => x.id === value.eventId)!;
      const schema: DescMessage = m.event.case === 'bookingConfirmed' ? BookingConfirmedSchema : CalendarChangedSchema;
      expect(e.subject).toBe(schema.typeName);
      expect(e.headers).toMatchObject({ workspace_id: ws });
      // The same message on the bus as on the stream.
      expect(Buffer.from(e.data).toString('hex')).toBe(Buffer.from(toBinary(schema, value as never)).toString('hex'));
      expect(fromBinary(schema, e.data)).toEqual(value);
    }
  });
});
