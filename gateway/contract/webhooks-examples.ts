/**
 * The Example Objects of the Webhooks operations (webhooks-operations.ts). A request example and the response example of the same name
 * belong together; a problem example gives its request and violations, and its document is rendered for its response's code (operation.ts).
 */
import type { OperationExamples } from './operation';

/** GET /webhooks/endpoint */
export const getWebhookEndpointExamples: OperationExamples = {
  responses: {
    '200': {
      active: {
        summary: 'Registered and verified; the secret is not shown',
        value: { url: 'https://hooks.partner.example/psync', events: ['booking.confirmed', 'booking.cancelled', 'user.erased'], status: 'active' },
      },
      pending: {
        summary: 'The last challenge was not echoed',
        value: { url: 'https://hooks.partner.example/psync', events: ['booking.confirmed'], status: 'pending_verification' },
      },
    },
    '400': {
      invalid: { summary: 'A query parameter the endpoint does not have', 'x-request': { query: { include: 'secret' } }, errors: [{ field: 'include', code: 'unknown_field' }] },
    },
  },
};

/** PUT /webhooks/endpoint */
export const putWebhookEndpointExamples: OperationExamples = {
  request: {
    register: {
      summary: 'First registration, every kind',
      value: { url: 'https://hooks.partner.example/psync', events: ['booking.confirmed', 'booking.cancelled', 'user.erased'] },
    },
    pause: { summary: 'Pause delivery (the endpoint and its secret are kept)', value: { url: 'https://hooks.partner.example/psync', events: [] } },
  },
  responses: {
    '200': {
      register: {
        summary: 'The challenge was echoed; the secret is shown this once',
        value: {
          url: 'https://hooks.partner.example/psync',
          events: ['booking.confirmed', 'booking.cancelled', 'user.erased'],
          status: 'active',
          signing_secret: 'whsec_Zm9yLWV4YW1wbGUtb25seS1ub3QtYS1yZWFsLXNlY3JldA',
        },
      },
      pause: { summary: 'Paused: no secret any more', value: { url: 'https://hooks.partner.example/psync', events: [], status: 'active' } },
      not_echoed: {
        summary: 'The challenge was not echoed: call again to retry',
        value: { url: 'https://hooks.partner.example/psync', events: ['booking.confirmed', 'booking.cancelled'], status: 'pending_verification' },
      },
    },
    '400': {
      invalid: {
        summary: 'A URL that is not HTTPS (one generic `invalid`) and an unknown kind',
        'x-request': { body: { url: 'http://hooks.partner.example/psync', events: ['booking.confirmed', 'booking.modified'] } },
        errors: [
          { field: 'url', code: 'invalid' },
          { field: 'events[1]', code: 'enum' },
        ],
      },
    },
  },
};

/** WEBHOOK endpoint.challenge */
export const challengeWebhookExamples: OperationExamples = {
  request: {
    challenge: {
      summary: 'Endpoint verification challenge',
      value: {
        event_id: '5b0d9a4e-2c7f-4e1b-9d3a-8f6c1e2b7a90',
        event_type: 'endpoint.challenge',
        occurred_at: '2026-09-14T08:00:03.117Z',
        data: { challenge: 'q8Zk3Yb1Vx6Nc0Rt5Lw2Jm9Pa4Hd7Fs1Ge3Ku8Oi5Ty' },
      },
    },
  },
  responses: { '2XX': { echo: { summary: 'The challenge, echoed', value: { challenge: 'q8Zk3Yb1Vx6Nc0Rt5Lw2Jm9Pa4Hd7Fs1Ge3Ku8Oi5Ty' } } } },
};

/** WEBHOOK booking.confirmed */
export const bookingConfirmedWebhookExamples: OperationExamples = {
  request: {
    confirmed: {
      summary: 'A booking was confirmed',
      value: {
        event_id: '2d6e8a41-7b3c-4f5e-a9d2-c1b0e4f7a863',
        event_type: 'booking.confirmed',
        occurred_at: '2026-09-14T08:00:03.117Z',
        data: {
          booking_reference: 'BK7Q2M4X9C',
          listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j',
          provider_id: 'villa-42',
          check_in: '2030-06-12',
          check_out: '2030-06-15',
          check_in_time: '15:00',
          check_out_time: '11:00',
          party_size: 3,
          guest_name: 'Ada Lovelace',
          amount_paid: { value: '612.00', currency: 'EUR' },
        },
      },
    },
  },
};

/** WEBHOOK booking.cancelled */
export const bookingCancelledWebhookExamples: OperationExamples = {
  request: {
    cancelled: {
      summary: 'A booking was cancelled',
      value: {
        event_id: '2d6e8a41-7b3c-4f5e-a9d2-c1b0e4f7a863',
        event_type: 'booking.cancelled',
        occurred_at: '2026-09-14T08:00:03.117Z',
        data: { booking_reference: 'BK7Q2M4X9C', listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j', cancelled_at: '2026-09-14T08:00:03Z', initiated_by: 'guest' },
      },
    },
  },
};

/** WEBHOOK user.erased */
export const userErasedWebhookExamples: OperationExamples = {
  request: {
    erased: {
      summary: 'A guest erased their account',
      value: {
        event_id: '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f',
        event_type: 'user.erased',
        occurred_at: '2026-09-14T08:00:03.117Z',
        data: { booking_references: ['BK7Q2M4X9C'], provider_ids: ['villa-42'] },
      },
    },
  },
};
