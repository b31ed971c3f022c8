/**
 * The marketplace side of the calendar against the running system:
 * holds with expiry, bookings from a hold or direct, cancellation by guest and by host,
 * availability, and the sandbox's refusal of anything that would end in a real charge.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { BlockReason, BookingStatus } from '../../gen/psync/calendar/v1/calendar_pb';
import { CalendarChangeKind, CancellationInitiator, NightHolderKind } from '../../gen/psync/calendar/v1/events_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { useSystem } from '../support/system';
import { conflictDatesOf, connectErrorOf, day, eventually, newListing, newWorkspace, reasonOf, uid, violationsOf, watch, type Clients } from './support';

jest.setTimeout(120_000);

let c: Clients;
let ws: string;
let prodWs: string;

const inUse = useSystem();

beforeAll(async () => {
  c = inUse.clients;
  ws = await newWorkspace(c);
  prodWs = await newWorkspace(c, 'production');
});

const hold = (listingId: string, checkIn: string, checkOut: string, extra: { ttlSeconds?: number; requiresPayment?: boolean } = {}) =>
  c.calendar.placeHold({ listingId, checkIn, checkOut, ...extra });

const booking = (listingId: string, checkIn: string, checkOut: string, extra: Record<string, unknown> = {}) =>
  c.calendar.confirmBooking({
    listingId,
    checkIn,
    checkOut,
    guestId: uid('guest'),
    guestName: 'Ada Lovelace',
    partySize: 2,
    amountPaid: { value: '123.40', currency: 'EUR' },
    ...extra,
  });

const block = (listingId: string, checkIn: string, checkOut: string, workspaceId = ws) =>
  c.calendar.putBlock({ workspaceId, externalUid: uid('b'), target: { case: 'listingId', value: listingId }, checkIn, checkOut, reason: BlockReason.RESERVED });

async function available(listingId: string, checkIn: string, checkOut: string): Promise<string[]> {
  const res = await c.calendar.getAvailability({ listingId, checkIn, checkOut });
  return res.nights.filter((n) => n.available).map((n) => n.date);
}

describe('holds', () => {
  test('a hold takes free nights, lives HOLD_TTL_SECONDS (900 s) by default and shows in availability', async () => {
    const listing = await newListing(c, ws);
    const before = Date.now();
    const res = await hold(listing, day(0), day(3));
    const h = res.hold!;
    expect(h).toMatchObject({ listingId: listing, checkIn: day(0), checkOut: day(3), requiresPayment: false });
    const ttl = (timestampDate(h.expiresAt!).getTime() - before) / 1000;
    expect(ttl).toBeGreaterThan(895);
    expect(ttl).toBeLessThan(905);
    const av = await c.calendar.getAvailability({ listingId: listing, checkIn: day(0), checkOut: day(4) });
    expect(av.nights.map((n) => [n.date, n.available, n.holders.map((x) => [x.kind, x.id])])).toEqual([
      [day(0), false, [[NightHolderKind.HOLD, h.holdId]]],
      [day(1), false, [[NightHolderKind.HOLD, h.holdId]]],
      [day(2), false, [[NightHolderKind.HOLD, h.holdId]]],
      [day(3), true, []],
    ]);
  });

  test('a hold never takes a night held by a block, a live hold or a booking', async () => {
    const listing = await newListing(c, ws);
    await block(listing, day(0), day(2));
    await hold(listing, day(4), day(6));
    await booking(listing, day(8), day(10));
    const err = await connectErrorOf(hold(listing, day(1), day(9)));
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(reasonOf(err)).toBe(ErrorReason.CONFLICT);
    expect(conflictDatesOf(err)).toEqual([day(1), day(4), day(5), day(8)]);
    expect(await available(listing, day(0), day(10))).toEqual([day(2), day(3), day(6), day(7)]);
  });

  test('release frees the nights; releasing again is harmless; unknown holds are NOT_FOUND', async () => {
    const listing = await newListing(c, ws);
    const h = (await hold(listing, day(0), day(2))).hold!;
    await expect(c.calendar.releaseHold({ holdId: h.holdId })).resolves.toMatchObject({ holdId: h.holdId, released: true });
    expect(await available(listing, day(0), day(2))).toEqual([day(0), day(1)]);
    await expect(c.calendar.releaseHold({ holdId: h.holdId })).resolves.toMatchObject({ released: true });
    for (const id of ['4b0f2a64-8f5e-4c8e-9a59-7d1f3b0c9e21', 'not-a-hold']) {
      const err = await connectErrorOf(c.calendar.releaseHold({ holdId: id }));
      expect(err.code).toBe(Code.NotFound);
      expect(reasonOf(err)).toBe(ErrorReason.HOLD_NOT_FOUND);
    }
  });

  test('an expired hold no longer holds anything: the nights are free and it expires with an event', async () => {
    const listing = await newListing(c, ws);
    const w = watch(c.calendar, { listingId: listing });
    try {
      const h = (await hold(listing, day(0), day(3), { ttlSeconds: 1 })).hold!;
      // Free once the database's clock passes expires_at (a second after the hold).
      await eventually(async () => (await available(listing, day(0), day(3))).length === 3, 10_000, 'the expired nights free');
      expect(await available(listing, day(0), day(3))).toEqual([day(0), day(1), day(2)]);
      const err = await connectErrorOf(c.calendar.confirmBooking({ holdId: h.holdId, guestId: 'g', guestName: 'G', partySize: 1, amountPaid: { value: '1', currency: 'EUR' } }));
      expect(err.code).toBe(Code.FailedPrecondition);
      expect(reasonOf(err)).toBe(ErrorReason.HOLD_NOT_LIVE);
      // The background sweeper expires it even when nobody writes on the listing.
      const expired = await w.until((m) => m.event.case === 'calendarChanged' && m.event.value.kind === CalendarChangeKind.HOLD_EXPIRED);
      expect(expired.event.value).toMatchObject({ holder: { kind: NightHolderKind.HOLD, id: h.holdId }, released: { checkIn: day(0), checkOut: day(3) } });
      await expect(hold(listing, day(0), day(3))).resolves.toBeDefined();
      await expect(c.calendar.releaseHold({ holdId: h.holdId })).resolves.toMatchObject({ released: true });
    } finally {
      await w.stop();
    }
  });

  test('an expired hold does not block a writer even before the sweeper ran', async () => {
    const listing = await newListing(c, ws);
    await hold(listing, day(0), day(3), { ttlSeconds: 1 });
    // Refused while the hold is live (nothing written), accepted as soon as it has expired: the sweeper runs every 2 s, later.
    const written = await eventually(
      () =>
        block(listing, day(0), day(3)).catch((err: unknown) => {
          if (reasonOf(ConnectError.from(err)) === ErrorReason.CONFLICT) return undefined;
          throw err;
        }),
      10_000,
      'the block accepted once the hold expired',
    );
    expect(written).toMatchObject({ nights: 3 });
  });

  test('hold validation: ttl 1 s to 1 day, a range of 1 to 730 nights, a known listing', async () => {
    const listing = await newListing(c, ws);
    expect(violationsOf(await connectErrorOf(hold(listing, day(0), day(1), { ttlSeconds: 0 })))).toEqual([{ field: 'ttl_seconds', code: 'minimum' }]);
    expect(violationsOf(await connectErrorOf(hold(listing, day(0), day(1), { ttlSeconds: 86_401 })))).toEqual([{ field: 'ttl_seconds', code: 'maximum' }]);
    expect(violationsOf(await connectErrorOf(hold(listing, day(0), day(731))))).toEqual([{ field: 'check_out', code: 'maximum' }]);
    expect(violationsOf(await connectErrorOf(hold('', 'x', '')))).toEqual([
      { field: 'listing_id', code: 'required' },
      { field: 'check_in', code: 'format' },
      { field: 'check_out', code: 'required' },
    ]);
    const unknown = await connectErrorOf(hold('lst_unknown0000000000000000', day(0), day(1)));
    expect(unknown.code).toBe(Code.NotFound);
    expect(reasonOf(unknown)).toBe(ErrorReason.LISTING_NOT_FOUND);
  });
});

describe('sandbox never reaches a payment provider', () => {
  test('a hold or booking that would end in a real charge is refused on a sandbox listing; nothing is held', async () => {
    const listing = await newListing(c, ws);
    const a = await connectErrorOf(hold(listing, day(0), day(2), { requiresPayment: true }));
    const b = await connectErrorOf(booking(listing, day(0), day(2), { requiresPayment: true }));
    for (const e of [a, b]) {
      expect(e.code).toBe(Code.FailedPrecondition);
      expect(reasonOf(e)).toBe(ErrorReason.SANDBOX_PAYMENT_REFUSED);
    }
    // Converting a hold into a charged booking is refused too.
    const h = (await hold(listing, day(0), day(2))).hold!;
    const conv = await connectErrorOf(
      c.calendar.confirmBooking({ holdId: h.holdId, guestId: 'g', guestName: 'G', partySize: 1, amountPaid: { value: '5', currency: 'EUR' }, requiresPayment: true }),
    );
    expect(reasonOf(conv)).toBe(ErrorReason.SANDBOX_PAYMENT_REFUSED);
    await c.calendar.releaseHold({ holdId: h.holdId });
    expect(await available(listing, day(0), day(2))).toEqual([day(0), day(1)]);
  });

  test('production listings take charged holds and bookings (the real marketplace flow)', async () => {
    const listing = await newListing(c, prodWs);
    const h = (await hold(listing, day(0), day(2), { requiresPayment: true })).hold!;
    expect(h.requiresPayment).toBe(true);
    const b = await c.calendar.confirmBooking({
      holdId: h.holdId,
      guestId: 'g',
      guestName: 'G',
      partySize: 1,
      amountPaid: { value: '5.00', currency: 'EUR' },
      requiresPayment: true,
    });
    expect(b.booking?.status).toBe(BookingStatus.CONFIRMED);
  });
});

describe('bookings', () => {
  test('a direct booking on free nights; GetBooking returns it with the amount exactly as sent', async () => {
    const listing = await newListing(c, ws);
    const res = await booking(listing, day(0), day(3), { partySize: 3, amountPaid: { value: '1234.50', currency: 'CHF' } });
    const b = res.booking!;
    expect(b.bookingReference).toMatch(/^BK[0-9A-HJKMNP-TV-Z]{10}$/);
    const got = (await c.calendar.getBooking({ bookingReference: b.bookingReference })).booking!;
    expect(got).toMatchObject({
      bookingReference: b.bookingReference,
      listingId: listing,
      workspaceId: ws,
      checkIn: day(0),
      checkOut: day(3),
      partySize: 3,
      guestName: 'Ada Lovelace',
      amountPaid: { value: '1234.50', currency: 'CHF' },
      status: BookingStatus.CONFIRMED,
    });
    expect(got.providerId).toBeUndefined();
    expect(got.holdId).toBeUndefined();
    expect(await available(listing, day(0), day(4))).toEqual([day(3)]);
  });

  test('a booking from a live hold takes its nights in place; the hold is then used up', async () => {
    const listing = await newListing(c, ws);
    const h = (await hold(listing, day(0), day(2))).hold!;
    const mismatch = await connectErrorOf(
      c.calendar.confirmBooking({
        holdId: h.holdId,
        listingId: listing,
        checkIn: day(0),
        checkOut: day(3),
        guestId: 'g',
        guestName: 'G',
        partySize: 1,
        amountPaid: { value: '1', currency: 'EUR' },
      }),
    );
    expect(violationsOf(mismatch)).toEqual([{ field: 'check_out', code: 'invalid' }]);
    const b = (await c.calendar.confirmBooking({ holdId: h.holdId, guestId: 'g', guestName: 'G', partySize: 1, amountPaid: { value: '1', currency: 'EUR' } })).booking!;
    expect(b).toMatchObject({ listingId: listing, checkIn: day(0), checkOut: day(2), holdId: h.holdId });
    const av = await c.calendar.getAvailability({ listingId: listing, checkIn: day(0), checkOut: day(2) });
    expect(av.nights.flatMap((n) => n.holders)).toEqual([
      expect.objectContaining({ kind: NightHolderKind.BOOKING, id: b.bookingReference }),
      expect.objectContaining({ kind: NightHolderKind.BOOKING, id: b.bookingReference }),
    ]);
    const again = await connectErrorOf(c.calendar.confirmBooking({ holdId: h.holdId, guestId: 'g', guestName: 'G', partySize: 1, amountPaid: { value: '1', currency: 'EUR' } }));
    expect(reasonOf(again)).toBe(ErrorReason.HOLD_NOT_LIVE);
    const release = await connectErrorOf(c.calendar.releaseHold({ holdId: h.holdId }));
    expect(reasonOf(release)).toBe(ErrorReason.HOLD_NOT_LIVE);
    expect(await available(listing, day(0), day(2))).toEqual([]);
  });

  test('a booking never takes a night held by a block, hold or booking', async () => {
    const listing = await newListing(c, ws);
    await block(listing, day(0), day(1));
    await hold(listing, day(2), day(3));
    await booking(listing, day(4), day(5));
    const err = await connectErrorOf(booking(listing, day(0), day(6)));
    expect(conflictDatesOf(err)).toEqual([day(0), day(2), day(4)]);
  });

  test('booking validation names every bad field', async () => {
    const listing = await newListing(c, ws);
    const err = await connectErrorOf(
      c.calendar.confirmBooking({
        listingId: listing,
        checkIn: day(0),
        checkOut: day(1),
        guestId: '',
        guestName: ' ',
        partySize: 0,
        amountPaid: { value: '12,5', currency: 'eur' },
      }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
    expect(violationsOf(err)).toEqual([
      { field: 'guest_id', code: 'required' },
      { field: 'guest_name', code: 'required' },
      { field: 'party_size', code: 'minimum' },
      { field: 'amount_paid.value', code: 'pattern' },
      { field: 'amount_paid.currency', code: 'pattern' },
    ]);
    const noHold = await connectErrorOf(
      c.calendar.confirmBooking({ holdId: '4b0f2a64-8f5e-4c8e-9a59-7d1f3b0c9e21', guestId: 'g', guestName: 'G', partySize: 1, amountPaid: { value: '1', currency: 'EUR' } }),
    );
    expect(reasonOf(noHold)).toBe(ErrorReason.HOLD_NOT_FOUND);
    const noListing = await connectErrorOf(booking('lst_unknown0000000000000000', day(0), day(1)));
    expect(reasonOf(noListing)).toBe(ErrorReason.LISTING_NOT_FOUND);
  });

  test('booking.confirmed carries the property check-in/out times, party size and amount but no guest name (GetBooking has it); provider_id null for a listing the partner did not push', async () => {
    const listing = await newListing(c, ws, { checkInTime: '16:30', checkOutTime: '10:15' });
    const w = watch(c.calendar, { listingId: listing });
    try {
      const b = (await booking(listing, day(5), day(7), { partySize: 4 })).booking!;
      const m = await w.until((x) => x.event.case === 'bookingConfirmed');
      expect(m.event.case).toBe('bookingConfirmed');
      const e = m.event.value as import('../../gen/psync/calendar/v1/events_pb').BookingConfirmed;
      expect(e).toMatchObject({
        workspaceId: ws,
        environment: Environment.SANDBOX,
        bookingReference: b.bookingReference,
        listingId: listing,
        checkIn: day(5),
        checkOut: day(7),
        checkInTime: '16:30',
        checkOutTime: '10:15',
        partySize: 4,
        guestName: '',
        amountPaid: { value: '123.40', currency: 'EUR' },
      });
      expect((await c.calendar.getBooking({ bookingReference: b.bookingReference })).booking!.guestName).toBe('Ada Lovelace');
      expect(e.providerId).toBeUndefined();
      expect(e.eventId).toMatch(/^[0-9a-f-]{36}$/);
      expect(timestampDate(e.occurredAt!).getTime()).toBe(timestampDate(b.confirmedAt!).getTime());
      const changed = await w.until((x) => x.event.case === 'calendarChanged' && x.event.value.kind === CalendarChangeKind.BOOKING_CONFIRMED);
      expect(changed.event.value).toMatchObject({ holder: { kind: NightHolderKind.BOOKING, id: b.bookingReference }, held: { checkIn: day(5), checkOut: day(7) } });
    } finally {
      await w.stop();
    }
  });
});

describe('cancellation', () => {
  test('by the guest: the nights can be re-sold; cancelling again answers the first cancellation', async () => {
    const listing = await newListing(c, ws);
    const w = watch(c.calendar, { listingId: listing });
    try {
      const b = (await booking(listing, day(0), day(3))).booking!;
      const res = await c.calendar.cancelBooking({ bookingReference: b.bookingReference, initiatedBy: CancellationInitiator.GUEST });
      expect(res).toMatchObject({ bookingReference: b.bookingReference, cancelled: true });
      expect(await available(listing, day(0), day(3))).toEqual([day(0), day(1), day(2)]);
      await expect(hold(listing, day(0), day(3))).resolves.toBeDefined();
      const got = (await c.calendar.getBooking({ bookingReference: b.bookingReference })).booking!;
      expect(got).toMatchObject({ status: BookingStatus.CANCELLED, initiatedBy: CancellationInitiator.GUEST });
      const second = await c.calendar.cancelBooking({ bookingReference: b.bookingReference, initiatedBy: CancellationInitiator.HOST });
      expect(second.cancelledAt).toEqual(res.cancelledAt);
      const ev = await w.until((m) => m.event.case === 'bookingCancelled');
      expect(ev.event.value).toMatchObject({
        bookingReference: b.bookingReference,
        listingId: listing,
        workspaceId: ws,
        initiatedBy: CancellationInitiator.GUEST,
        environment: Environment.SANDBOX,
      });
      const cancelledAt = (ev.event.value as { cancelledAt?: import('@bufbuild/protobuf/wkt').Timestamp }).cancelledAt!;
      expect(timestampDate(cancelledAt).getTime()).toBe(timestampDate(res.cancelledAt!).getTime());
      const changed = await w.until((m) => m.event.case === 'calendarChanged' && m.event.value.kind === CalendarChangeKind.BOOKING_CANCELLED);
      expect(changed.event.value).toMatchObject({ holder: { kind: NightHolderKind.BOOKING, id: b.bookingReference }, released: { checkIn: day(0), checkOut: day(3) } });
      // One cancellation, one event.
      await hold(listing, day(10), day(11));
      await w.until((m) => m.event.case === 'calendarChanged' && m.event.value.held?.checkIn === day(10));
      expect(w.received.filter((m) => m.event.case === 'bookingCancelled')).toHaveLength(1);
    } finally {
      await w.stop();
    }
  });

  test('by the host: the property withdrew, the nights stay closed to the marketplace (blocks still allowed)', async () => {
    const listing = await newListing(c, ws);
    const b = (await booking(listing, day(0), day(3))).booking!;
    await c.calendar.cancelBooking({ bookingReference: b.bookingReference, initiatedBy: CancellationInitiator.HOST });
    expect(await available(listing, day(0), day(3))).toEqual([]);
    const av = await c.calendar.getAvailability({ listingId: listing, checkIn: day(0), checkOut: day(1) });
    expect(av.nights[0]?.holders).toEqual([expect.objectContaining({ kind: NightHolderKind.WITHDRAWN, id: b.bookingReference })]);
    expect(conflictDatesOf(await connectErrorOf(hold(listing, day(2), day(4))))).toEqual([day(2)]);
    expect(conflictDatesOf(await connectErrorOf(booking(listing, day(0), day(1))))).toEqual([day(0)]);
    await expect(block(listing, day(0), day(3))).resolves.toMatchObject({ nights: 3 });
    const got = (await c.calendar.getBooking({ bookingReference: b.bookingReference })).booking!;
    expect(got.initiatedBy).toBe(CancellationInitiator.HOST);
  });

  test('unknown bookings are NOT_FOUND; initiated_by is required', async () => {
    const err = await connectErrorOf(c.calendar.cancelBooking({ bookingReference: 'BK0000000000', initiatedBy: CancellationInitiator.GUEST }));
    expect(err.code).toBe(Code.NotFound);
    expect(reasonOf(err)).toBe(ErrorReason.BOOKING_NOT_FOUND);
    const bad = await connectErrorOf(c.calendar.cancelBooking({ bookingReference: 'BK0000000000' }));
    expect(violationsOf(bad)).toEqual([{ field: 'initiated_by', code: 'enum' }]);
    expect(reasonOf(await connectErrorOf(c.calendar.getBooking({ bookingReference: 'BK0000000000' })))).toBe(ErrorReason.BOOKING_NOT_FOUND);
  });
});

describe('availability', () => {
  test('per night with every holder; overlapping blocks both listed; up to 730 nights', async () => {
    const listing = await newListing(c, ws);
    const a = await block(listing, day(0), day(2));
    const b = await block(listing, day(1), day(3));
    const av = await c.calendar.getAvailability({ listingId: listing, checkIn: day(0), checkOut: day(4) });
    expect(av.listingId).toBe(listing);
    expect(av.nights.map((n) => n.holders.map((h) => h.id).sort())).toEqual([
      [a.block!.externalUid],
      [a.block!.externalUid, b.block!.externalUid].sort(),
      [b.block!.externalUid],
      [],
    ]);
    const year = await c.calendar.getAvailability({ listingId: listing, checkIn: day(0), checkOut: day(730) });
    expect(year.nights).toHaveLength(730);
    expect(violationsOf(await connectErrorOf(c.calendar.getAvailability({ listingId: listing, checkIn: day(0), checkOut: day(731) })))).toEqual([
      { field: 'check_out', code: 'maximum' },
    ]);
    expect(reasonOf(await connectErrorOf(c.calendar.getAvailability({ listingId: 'lst_unknown0000000000000000', checkIn: day(0), checkOut: day(1) })))).toBe(
      ErrorReason.LISTING_NOT_FOUND,
    );
  });

  test('expired holds are not shown', async () => {
    const listing = await newListing(c, ws);
    await hold(listing, day(0), day(1), { ttlSeconds: 1 });
    await eventually(async () => (await available(listing, day(0), day(1))).length === 1, 5000, 'the hold to expire');
  });
});
