/**
 * The Example Objects of the Events operations (events-operations.ts). A request example and the response example of the same name
 * belong together; a problem example gives its request and violations, and its document is rendered for its response's code (operation.ts).
 */
import type { OperationExamples } from './operation';

/** GET /events */
export const listEventsExamples: OperationExamples = {
  responses: {
    '200': {
      page: {
        summary: 'Two events, more to come',
        value: {
          items: [
            {
              event_id: '2d6e8a41-7b3c-4f5e-a9d2-c1b0e4f7a863',
              event_type: 'booking.confirmed',
              occurred_at: '2026-09-12T14:03:11.217Z',
              data: {
                booking_reference: 'BK-7F3K2Q',
                listing_id: 'lst_8hq2k9v4m3x7c1n5b6z0r2t4',
                provider_id: 'villa-123',
                check_in: '2026-10-02',
                check_out: '2026-10-06',
                check_in_time: '15:00',
                check_out_time: '11:00',
                party_size: 2,
                guest_name: 'Ada Lovelace',
                amount_paid: { value: '840.00', currency: 'EUR' },
              },
            },
            {
              event_id: '5c1f7e2a-9b4d-4a6e-8f3c-2d7b1e9a0c64',
              event_type: 'booking.cancelled',
              occurred_at: '2026-09-12T14:03:11.217Z',
              data: { booking_reference: 'BK-7F3K2Q', listing_id: 'lst_8hq2k9v4m3x7c1n5b6z0r2t4', cancelled_at: '2026-09-13T08:41:27.005Z', initiated_by: 'guest' },
            },
          ],
          next_after: '42',
          has_more: true,
          after_expired: false,
        },
      },
      caught_up: { summary: 'Nothing after `after` yet', 'x-request': { query: { after: '42' } }, value: { items: [], next_after: '42', has_more: false, after_expired: false } },
    },
    '400': {
      invalid: {
        summary: 'A cursor that is not one, a limit of 0 and a parameter the endpoint does not have',
        'x-request': { query: { after: 'abc', limit: '0', page: '2' } },
        errors: [
          { field: 'page', code: 'unknown_field' },
          { field: 'after', code: 'pattern' },
          { field: 'limit', code: 'minimum' },
        ],
      },
    },
  },
};
