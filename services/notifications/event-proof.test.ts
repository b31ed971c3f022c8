import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { BookingSchema, BookingStatus, GetErasureResponseSchema, type Booking } from '../../gen/psync/calendar/v1/calendar_pb';
import { BookingCancelledSchema, BookingConfirmedSchema, CancellationInitiator, UserErasedSchema } from '../../gen/psync/calendar/v1/events_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { proveBookingCancelled, proveBookingConfirmed, proveUserErased, type EventOwner } from './event-proof';

const WS = '2c35a94a-8c2a-4ff5-98ca-e092adc18702';
const ERASURE = '6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f';
const confirmedAt = timestampFromDate(new Date('2030-01-02T03:04:05.678Z'));
const cancelledAt = timestampFromDate(new Date('2030-01-03T03:04:05.678Z'));

const booking = (over: Omit<MessageInitShape<typeof BookingSchema>, '$typeName'> = {}): Booking =>
  create(BookingSchema, {
    bookingReference: 'BK1',
    listingId: 'L1',
    workspaceId: WS,
    checkIn: '2030-05-01',
    checkOut: '2030-05-03',
    checkInTime: '15:00',
    checkOutTime: '11:00',
    partySize: 2,
    guestName: 'Ada',
    amountPaid: { value: '10.00', currency: 'EUR' },
    status: BookingStatus.CONFIRMED,
    confirmedAt,
    environment: Environment.SANDBOX,
    ...over,
  });

/** The calendar as these tests need it: one booking and one erasure, held in memory. */
const owner = (b: Booking | undefined, erasure: MessageInitShape<typeof GetErasureResponseSchema> = {}): EventOwner => ({
  booking: async () => b,
  erasure: async () => create(GetErasureResponseSchema, erasure),
});

const confirmed = (over: Record<string, unknown> = {}) =>
  create(BookingConfirmedSchema, {
    eventId: 'e1',
    occurredAt: confirmedAt,
    workspaceId: WS,
    environment: Environment.SANDBOX,
    bookingReference: 'BK1',
    listingId: 'L1',
    checkIn: '2030-05-01',
    checkOut: '2030-05-03',
    checkInTime: '15:00',
    checkOutTime: '11:00',
    partySize: 2,
    amountPaid: { value: '10.00', currency: 'EUR' },
    ...over,
  });

describe('event proof: an event is believed only when the calendar holds every field of it', () => {
  test('BookingConfirmed: the true one proves; any field otherwise is a mismatch', async () => {
    expect((await proveBookingConfirmed(owner(booking()), confirmed())).ok).toBe(true);
    for (const over of [
      { checkInTime: '03:00' },
      { checkOutTime: '<img src=x onerror=alert(1)>' },
      { partySize: 9 },
      { checkIn: '2030-05-02' },
      { amountPaid: { value: '1.00', currency: 'EUR' } },
      { occurredAt: timestampFromDate(new Date('2033-01-01T00:00:00Z')) },
      { listingId: 'L2' },
      { providerId: 'p9' },
      { guestName: 'Mallory' },
      { environment: Environment.PRODUCTION },
    ]) {
      expect(await proveBookingConfirmed(owner(booking()), confirmed(over))).toEqual({ ok: false, reason: 'mismatch' });
    }
    expect(await proveBookingConfirmed(owner(undefined), confirmed())).toEqual({ ok: false, reason: 'unknown_booking' });
    expect(await proveBookingConfirmed(owner(booking()), confirmed({ bookingReference: '' }))).toEqual({ ok: false, reason: 'malformed' });
  });

  test('BookingConfirmed: a booking the calendar holds without its times (an older calendar) cannot prove it', async () => {
    expect(await proveBookingConfirmed(owner(booking({ checkInTime: '', checkOutTime: '' })), confirmed())).toEqual({ ok: false, reason: 'unprovable' });
  });

  test('BookingCancelled: cancelled then, by that party; occurred_at and cancelled_at both checked', async () => {
    const b = booking({ status: BookingStatus.CANCELLED, cancelledAt, initiatedBy: CancellationInitiator.HOST });
    const e = (over: Record<string, unknown> = {}) =>
      create(BookingCancelledSchema, {
        eventId: 'e2',
        occurredAt: cancelledAt,
        cancelledAt,
        workspaceId: WS,
        environment: Environment.SANDBOX,
        bookingReference: 'BK1',
        listingId: 'L1',
        initiatedBy: CancellationInitiator.HOST,
        ...over,
      });
    expect((await proveBookingCancelled(owner(b), e())).ok).toBe(true);
    for (const over of [{ occurredAt: timestampFromDate(new Date('2033-01-01T00:00:00Z')) }, { cancelledAt: confirmedAt }, { initiatedBy: CancellationInitiator.GUEST }]) {
      expect(await proveBookingCancelled(owner(b), e(over))).toEqual({ ok: false, reason: 'mismatch' });
    }
    expect(await proveBookingCancelled(owner(booking()), e())).toEqual({ ok: false, reason: 'mismatch' });
  });

  test('UserErased: exactly the bookings and provider ids the erasure erased there', async () => {
    const erasure = { erasedAt: confirmedAt, environment: Environment.SANDBOX, bookingReferences: ['BK1', 'BK2'], providerIds: ['p1'] };
    const e = (over: Record<string, unknown> = {}) =>
      create(UserErasedSchema, {
        eventId: 'e3',
        occurredAt: confirmedAt,
        workspaceId: WS,
        environment: Environment.SANDBOX,
        erasureId: ERASURE,
        bookingReferences: ['BK2', 'BK1'],
        providerIds: ['p1'],
        ...over,
      });
    expect((await proveUserErased(owner(undefined, erasure), e())).ok).toBe(true);
    for (const over of [{ bookingReferences: ['BK1'] }, { providerIds: [] }, { providerIds: ['p1', 'p2'] }, { occurredAt: cancelledAt }]) {
      expect(await proveUserErased(owner(undefined, erasure), e(over))).toEqual({ ok: false, reason: 'mismatch' });
    }
    expect(await proveUserErased(owner(undefined, {}), e())).toEqual({ ok: false, reason: 'unknown_erasure' });
  });
});
