/**
 * The Example Objects of the Sandbox tools operations (sandbox-operations.ts). A request example and the response example of the same name
 * belong together; a problem example gives its request and violations, and its document is rendered for its response's code (operation.ts).
 */
import type { NamedExamples, OperationExamples } from './operation';

/** The `400` of a path whose `event_id` is not a UUID. */
const EVENT_ID_NOT_A_UUID: NamedExamples = {
  invalid: { summary: 'An `event_id` that is not a UUID', 'x-request': { path: { event_id: 'evt-100234' } }, errors: [{ field: 'event_id', code: 'format' }] },
};

/** POST /sandbox/events */
export const triggerTestEventExamples: OperationExamples = {
  request: {
    confirmed: { summary: 'A test booking confirmed on one of your listings', value: { event_type: 'booking.confirmed', listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j' } },
    cancelled: {
      summary: 'The same test booking cancelled by the host',
      value: { event_type: 'booking.cancelled', listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j', booking_reference: 'TEST-BK7Q2M4X9C3D', initiated_by: 'host' },
    },
    erased: { summary: 'Its guest erased their account', value: { event_type: 'user.erased', listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j', booking_reference: 'TEST-BK7Q2M4X9C3D' } },
    dated: {
      summary: 'A test booking for given nights',
      value: { event_type: 'booking.confirmed', listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j', check_in: '2030-09-01', check_out: '2030-09-04' },
    },
    unknown_listing: { summary: "A listing that does not exist or is another partner's", value: { event_type: 'booking.confirmed', listing_id: 'lst_zzzzzzzzzzzzzzzzzzzzzzzz' } },
  },
  responses: {
    '202': {
      confirmed: {
        summary: 'Queued',
        value: {
          event_id: '6c3e9b2a-4f1d-4a8e-b7c5-1d2e3f4a5b6c',
          event_type: 'booking.confirmed',
          test: true,
          state: 'pending',
          occurred_at: '2026-09-14T08:00:03.117Z',
          queued_at: '2026-09-14T08:00:03.117Z',
          next_attempt_at: '2026-09-14T08:00:03.117Z',
          attempts_total: 0,
          attempts: [],
        },
      },
      cancelled: {
        summary: 'Queued',
        value: {
          event_id: 'c2a4e6f8-1b3d-4f5a-8c7e-9d0b2a4c6e81',
          event_type: 'booking.cancelled',
          test: true,
          state: 'pending',
          occurred_at: '2026-09-14T08:00:03.117Z',
          queued_at: '2026-09-14T08:00:03.117Z',
          next_attempt_at: '2026-09-14T08:00:03.117Z',
          attempts_total: 0,
          attempts: [],
        },
      },
      erased: {
        summary: 'Queued',
        value: {
          event_id: 'e7d9b1f3-5a2c-4e8b-9f1d-3c5a7e9b1d24',
          event_type: 'user.erased',
          test: true,
          state: 'pending',
          occurred_at: '2026-09-14T08:00:03.117Z',
          queued_at: '2026-09-14T08:00:03.117Z',
          next_attempt_at: '2026-09-14T08:00:03.117Z',
          attempts_total: 0,
          attempts: [],
        },
      },
      dated: {
        summary: 'Queued',
        value: {
          event_id: 'a1b3c5d7-9e2f-4a6b-8c1d-5e7f9a2b4c63',
          event_type: 'booking.confirmed',
          test: true,
          state: 'pending',
          occurred_at: '2026-09-14T08:00:03.117Z',
          queued_at: '2026-09-14T08:00:03.117Z',
          next_attempt_at: '2026-09-14T08:00:03.117Z',
          attempts_total: 0,
          attempts: [],
        },
      },
    },
    '400': {
      invalid: {
        summary: "An unknown kind and a real booking's reference",
        'x-request': { body: { event_type: 'booking.modified', listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j', booking_reference: 'BK7Q2M4X9C' } },
        errors: [
          { field: 'event_type', code: 'enum' },
          { field: 'booking_reference', code: 'pattern' },
        ],
      },
    },
  },
};

/** GET /webhooks/deliveries */
export const listDeliveriesExamples: OperationExamples = {
  responses: {
    '200': {
      page: {
        summary: 'Abandoned `user.erased` deliveries',
        value: {
          items: [
            {
              event_id: '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f',
              event_type: 'user.erased',
              test: false,
              state: 'abandoned',
              occurred_at: '2026-09-13T21:14:09.532Z',
              queued_at: '2026-09-13T21:14:09.601Z',
              next_attempt_at: null,
              attempts_total: 2,
              attempts: [
                { attempted_at: '2026-09-14T20:16:40.002Z', response_status: null, latency_ms: 10000, outcome: 'timeout', next_attempt_at: null },
                { attempted_at: '2026-09-13T21:14:09.640Z', response_status: 503, latency_ms: 142, outcome: 'http_status', next_attempt_at: '2026-09-13T21:14:39.782Z' },
              ],
            },
          ],
          has_more: false,
        },
      },
      past_the_end: { summary: 'A page past the end', 'x-request': { query: { page: '9' } }, value: { items: [], has_more: false } },
    },
    '400': {
      invalid: {
        summary: 'A state outside the set, a page size over 200 and a parameter the endpoint does not have',
        'x-request': { query: { state: 'failed', page_size: '500', since: '2026-09-01' } },
        errors: [
          { field: 'since', code: 'unknown_field' },
          { field: 'state', code: 'enum' },
          { field: 'page_size', code: 'maximum' },
        ],
      },
    },
  },
};

/** GET /webhooks/deliveries/{event_id} */
export const getDeliveryExamples: OperationExamples = {
  responses: {
    '200': {
      delivery: {
        summary: 'A test event, delivered at the first attempt',
        value: {
          event_id: '6c3e9b2a-4f1d-4a8e-b7c5-1d2e3f4a5b6c',
          event_type: 'booking.confirmed',
          test: true,
          state: 'delivered',
          occurred_at: '2026-09-14T08:00:03.117Z',
          queued_at: '2026-09-14T08:00:03.117Z',
          next_attempt_at: null,
          attempts_total: 1,
          attempts: [{ attempted_at: '2026-09-14T08:00:03.164Z', response_status: 200, latency_ms: 87, outcome: 'delivered', next_attempt_at: null }],
        },
      },
    },
    '400': EVENT_ID_NOT_A_UUID,
  },
};

/** POST /webhooks/deliveries/{event_id}/resend */
export const resendDeliveryExamples: OperationExamples = {
  responses: {
    '202': {
      resent: {
        summary: 'A delivered test event, queued again',
        value: {
          event_id: '6c3e9b2a-4f1d-4a8e-b7c5-1d2e3f4a5b6c',
          event_type: 'booking.confirmed',
          test: true,
          state: 'pending',
          occurred_at: '2026-09-14T08:00:03.117Z',
          queued_at: '2026-09-14T09:12:44.210Z',
          next_attempt_at: '2026-09-14T09:12:44.210Z',
          attempts_total: 1,
          attempts: [{ attempted_at: '2026-09-14T08:00:03.164Z', response_status: 200, latency_ms: 87, outcome: 'delivered', next_attempt_at: null }],
        },
      },
    },
    '400': EVENT_ID_NOT_A_UUID,
    '409': {
      not_resendable: {
        summary: 'A real event that was delivered: its body is gone',
        code: 'delivery_not_resendable',
        'x-request': { path: { event_id: '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f' } },
      },
      endpoint_not_active: { summary: 'The endpoint is paused', code: 'webhook_endpoint_not_active', 'x-request': { path: { event_id: '6c3e9b2a-4f1d-4a8e-b7c5-1d2e3f4a5b6c' } } },
    },
  },
};

/** POST /sandbox/endpoint-checks */
export const startEndpointCheckExamples: OperationExamples = {
  responses: {
    '202': {
      started: {
        summary: 'A run started',
        value: {
          id: '9e2b7c41-3d5a-4f6e-8b1c-0a2d4e6f8b13',
          status: 'running',
          url: 'https://hooks.partner.example/psync',
          started_at: '2026-09-14T09:20:00.412Z',
          finished_at: null,
          checks: [
            { name: 'valid_delivery_accepted', expectation: 'a correctly signed delivery is accepted: 2xx within 5 s', observed: null, passed: null },
            { name: 'duplicate_accepted', expectation: 'the same event_id delivered again is accepted (2xx): deduplicate, never fail a redelivery', observed: null, passed: null },
            { name: 'wrong_signature_refused', expectation: 'a delivery whose X-Signature does not verify is refused (not 2xx)', observed: null, passed: null },
            {
              name: 'stale_timestamp_refused',
              expectation: 'a correct signature over an X-Signature-Timestamp older than five minutes is refused (not 2xx)',
              observed: null,
              passed: null,
            },
            { name: 'altered_body_refused', expectation: 'a body changed after it was signed is refused (not 2xx): verify over the raw body', observed: null, passed: null },
          ],
        },
      },
    },
    '400': {
      invalid: { summary: 'A query parameter the endpoint does not have', 'x-request': { query: { dry_run: 'true' } }, errors: [{ field: 'dry_run', code: 'unknown_field' }] },
    },
  },
};

/** GET /sandbox/endpoint-checks/{id} */
export const getEndpointCheckExamples: OperationExamples = {
  responses: {
    '200': {
      failed: {
        summary: 'A receiver that does not verify signatures',
        value: {
          id: '9e2b7c41-3d5a-4f6e-8b1c-0a2d4e6f8b13',
          status: 'failed',
          url: 'https://hooks.partner.example/psync',
          started_at: '2026-09-14T09:20:00.412Z',
          finished_at: '2026-09-14T09:20:00.517Z',
          checks: [
            { name: 'valid_delivery_accepted', expectation: 'a correctly signed delivery is accepted: 2xx within 5 s', observed: 'HTTP 200 in 41 ms', passed: true },
            {
              name: 'duplicate_accepted',
              expectation: 'the same event_id delivered again is accepted (2xx): deduplicate, never fail a redelivery',
              observed: 'HTTP 200 in 12 ms',
              passed: true,
            },
            { name: 'wrong_signature_refused', expectation: 'a delivery whose X-Signature does not verify is refused (not 2xx)', observed: 'HTTP 200 in 11 ms', passed: false },
            {
              name: 'stale_timestamp_refused',
              expectation: 'a correct signature over an X-Signature-Timestamp older than five minutes is refused (not 2xx)',
              observed: 'HTTP 401 in 9 ms',
              passed: true,
            },
            {
              name: 'altered_body_refused',
              expectation: 'a body changed after it was signed is refused (not 2xx): verify over the raw body',
              observed: 'HTTP 401 in 10 ms',
              passed: true,
            },
          ],
        },
      },
    },
    '400': { invalid: { summary: 'An `id` that is not a UUID', 'x-request': { path: { id: 'run-1' } }, errors: [{ field: 'id', code: 'format' }] } },
  },
};
