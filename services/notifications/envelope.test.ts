import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { CancellationInitiator } from '../../gen/psync/calendar/v1/events_pb';
import { BookingSchema, GetErasureResponseSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import { cancelledDelivery, challengeEnvelope, confirmedDelivery, erasedDelivery, scrubGuestName } from './envelope';

const at = new Date('2030-03-04T05:06:07.089Z');

describe('delivery envelopes', () => {
  test('booking.confirmed: envelope keys in order, data per docs/contract-gaps.md from the booking as the calendar holds it, provider_id null when absent', () => {
    const src = confirmedDelivery(
      'b3b1c6d4-3a8e-4a43-9f1e-6a3f7b0c2d11',
      create(BookingSchema, {
        confirmedAt: timestampFromDate(at),
        workspaceId: 'ws',
        environment: Environment.SANDBOX,
        bookingReference: 'BK1',
        listingId: 'L1',
        checkIn: '2030-05-01',
        checkOut: '2030-05-03',
        checkInTime: '15:00',
        checkOutTime: '11:00',
        partySize: 3,
        amountPaid: { value: '10.00', currency: 'EUR' },
        guestName: 'Ada',
      }),
    );
    expect(src.body).toBe(
      '{"event_id":"b3b1c6d4-3a8e-4a43-9f1e-6a3f7b0c2d11","event_type":"booking.confirmed","occurred_at":"2030-03-04T05:06:07.089Z",' +
        '"data":{"booking_reference":"BK1","listing_id":"L1","provider_id":null,"check_in":"2030-05-01","check_out":"2030-05-03",' +
        '"check_in_time":"15:00","check_out_time":"11:00","party_size":3,"guest_name":"Ada","amount_paid":{"value":"10.00","currency":"EUR"}}}',
    );
    expect(JSON.parse(scrubGuestName(src.body)).data.guest_name).toBeNull();
    expect(JSON.parse(scrubGuestName(src.body)).data.booking_reference).toBe('BK1');
  });

  test('booking.cancelled and user.erased carry no personal data', () => {
    const cancelled = JSON.parse(
      cancelledDelivery(
        'e1',
        create(BookingSchema, {
          workspaceId: 'ws',
          cancelledAt: timestampFromDate(at),
          bookingReference: 'BK1',
          listingId: 'L1',
          providerId: 'p1',
          initiatedBy: CancellationInitiator.GUEST,
        }),
      ).body,
    );
    expect(cancelled.data).toEqual({ booking_reference: 'BK1', listing_id: 'L1', cancelled_at: at.toISOString(), initiated_by: 'guest' });
    const erased = JSON.parse(
      erasedDelivery('e2', 'ws', create(GetErasureResponseSchema, { erasedAt: timestampFromDate(at), bookingReferences: ['BK1'], providerIds: ['p1'] })).body,
    );
    expect(erased).toEqual({ event_id: 'e2', event_type: 'user.erased', occurred_at: at.toISOString(), data: { booking_references: ['BK1'], provider_ids: ['p1'] } });
  });

  test('challenges: a fresh opaque string every time', () => {
    const a = challengeEnvelope();
    const b = challengeEnvelope();
    expect(a.challenge).not.toBe(b.challenge);
    expect(a.challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(JSON.parse(a.body)).toEqual({ event_id: a.eventId, event_type: 'endpoint.challenge', occurred_at: expect.any(String), data: { challenge: a.challenge } });
  });
});
