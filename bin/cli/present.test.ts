import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { BookingSchema, BookingStatus } from '../../gen/psync/calendar/v1/calendar_pb';
import { CancellationInitiator } from '../../gen/psync/calendar/v1/events_pb';
import { EndpointSchema, EndpointStatus, WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import { presentMessage } from './present';

describe('presenting records to operators', () => {
  test('snake_case names, lower-case enum names, ISO times, null for what is absent, nested messages as objects', () => {
    const booking = create(BookingSchema, {
      bookingReference: 'BK1',
      listingId: 'L1',
      workspaceId: 'W1',
      checkIn: '2027-01-01',
      checkOut: '2027-01-03',
      checkInTime: '15:00',
      checkOutTime: '11:00',
      partySize: 2,
      guestName: 'Ada',
      amountPaid: { value: '10.00', currency: 'EUR' },
      status: BookingStatus.CANCELLED,
      confirmedAt: timestampFromDate(new Date('2026-11-24T10:00:00.000Z')),
      initiatedBy: CancellationInitiator.GUEST,
    });
    expect(presentMessage(BookingSchema, booking)).toEqual({
      booking_reference: 'BK1',
      listing_id: 'L1',
      workspace_id: 'W1',
      provider_id: null,
      check_in: '2027-01-01',
      check_out: '2027-01-03',
      check_in_time: '15:00',
      check_out_time: '11:00',
      party_size: 2,
      guest_name: 'Ada',
      amount_paid: { value: '10.00', currency: 'EUR' },
      status: 'cancelled',
      confirmed_at: '2026-11-24T10:00:00.000Z',
      cancelled_at: null,
      initiated_by: 'guest',
      hold_id: null,
      environment: null,
    });
  });

  test('webhook event kinds by their public names', () => {
    const endpoint = create(EndpointSchema, {
      workspaceId: 'W1',
      url: 'https://example.com/hook',
      events: [WebhookEventType.BOOKING_CONFIRMED, WebhookEventType.USER_ERASED],
      status: EndpointStatus.PENDING_VERIFICATION,
    });
    expect(presentMessage(EndpointSchema, endpoint)).toMatchObject({
      events: ['booking.confirmed', 'user.erased'],
      status: 'pending_verification',
      previous_valid_until: null,
    });
  });
});
