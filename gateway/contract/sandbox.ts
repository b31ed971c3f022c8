/** What the sandbox tools accept (routes/sandbox.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { MAX_NIGHTS, PAGE_SIZE_MAX } from '../../services/kit/base';
import { allowedNamesOf, lengthOf, patternOf } from '../proto-rules';
import { cancellationInitiators, deliveryStates, webhookEvents } from '../public-enums';
import { closed, componentRef, nullable, oneOfNames, requestBody, type Validated } from '../contract-schema';
import { ListDeliveryLogRequestSchema, TriggerTestEventRequestSchema } from '../../gen/psync/notifications/v1/notifications_pb';
import { Page, PageSize } from './paging';

/** The kinds a test event may be (TriggerTestEventRequest's rule): every kind a partner subscribes to. */
export const TEST_EVENT_KINDS = allowedNamesOf(TriggerTestEventRequestSchema, 'event_type', webhookEvents);

/** The body of POST /v1/sandbox/events. */
export const TestEventBody = requestBody(
  'test-event',
  'Test event',
  `Body of POST /v1/sandbox/events: a synthetic event about one of the workspace's listings, delivered signed to its webhook endpoint with "test": true in the envelope. booking_reference must be a test reference (TEST-BK and 10 characters), e.g. the one an earlier test booking.confirmed announced; absent, a fresh one. check_in and check_out are for booking.confirmed only (default: 30 days from today, UTC, for two nights; check_out after check_in and at most ${MAX_NIGHTS} nights later, checked after the schema, field check_out); initiated_by for booking.cancelled only (default guest). A field given for another kind is reported as code invalid (checked after the schema).`,
  {
    event_type: oneOfNames(TEST_EVENT_KINDS),
    listing_id: Type.String(lengthOf(TriggerTestEventRequestSchema, 'listing_id')),
    booking_reference: Type.Optional(Type.String({ pattern: patternOf(TriggerTestEventRequestSchema, 'booking_reference') })),
    check_in: Type.Optional(Type.String({ format: 'date' })),
    check_out: Type.Optional(Type.String({ format: 'date' })),
    initiated_by: Type.Optional(oneOfNames(cancellationInitiators.names)),
  },
);

/** GET /v1/webhooks/deliveries: filters by state and kind, and a page. */
export const DeliveriesQuery = closed({
  state: Type.Optional(oneOfNames(deliveryStates.names)),
  event_type: Type.Optional(oneOfNames(allowedNamesOf(ListDeliveryLogRequestSchema, 'event_type', webhookEvents))),
  page: Page,
  page_size: PageSize,
});

/** The path of a delivery: its `event_id`. */
export const DeliveryPath = closed({ event_id: Type.String({ format: 'uuid' }) });

/** The path of a receiver check run: its `id`. */
export const EndpointCheckPath = closed({ id: Type.String({ format: 'uuid' }) });

export type TestEventInput = Validated<typeof TestEventBody>;

export type DeliveriesQueryInput = Validated<typeof DeliveriesQuery>;

export const DeliveryAttempt = Type.Object(
  {
    attempted_at: Type.String({ format: 'date-time', description: 'When the attempt started.' }),
    response_status: nullable(
      Type.Integer({
        minimum: 100,
        maximum: 599,
        description: 'The HTTP status your endpoint answered; `null` when it gave no HTTP answer (time-out, connection or TLS failure) or nothing was sent.',
      }),
    ),
    latency_ms: nullable(
      Type.Integer({ minimum: 0, description: "How long the attempt took, connection and TLS included, until your response's status line; `null` when nothing was sent." }),
    ),
    outcome: Type.String({
      description:
        '`delivered` (a 2xx), or why the attempt failed: `http_status` (a 4xx or 5xx), `redirect` (a 3xx, never followed), `timeout`, `connection_failed`, `tls_failed`, `address_refused` (the name resolved to an address that is not allowed), `endpoint_not_active` (paused, unsubscribed, unverified or suspended: nothing was sent). Tolerate values added later.',
      examples: ['delivered', 'http_status', 'timeout'],
    }),
    next_attempt_at: nullable(
      Type.String({ format: 'date-time', description: 'When the retry this attempt scheduled is due; `null` after a delivery or the last attempt of the schedule.' }),
    ),
  },
  { description: 'One attempt of a delivery, as recorded when it ended.' },
);
export type DeliveryAttemptJson = Static<typeof DeliveryAttempt>;

export const Delivery = Type.Object(
  {
    event_id: Type.String({ format: 'uuid', description: "The envelope's `event_id`, the same on every attempt and resend." }),
    event_type: oneOfNames(TEST_EVENT_KINDS),
    test: Type.Boolean({ description: 'True for a test event (`POST /sandbox/events`): its body carries `"test": true` and names no real booking.' }),
    state: oneOfNames(deliveryStates.names, {
      description: '`pending`: an attempt is scheduled (`next_attempt_at`); `delivered`: a 2xx was received; `abandoned`: the last attempt of the retry schedule failed.',
    }),
    occurred_at: Type.String({ format: 'date-time', description: "The envelope's `occurred_at`." }),
    queued_at: Type.String({ format: 'date-time', description: 'When the delivery was queued, or last resent: where its retry schedule started.' }),
    next_attempt_at: nullable(Type.String({ format: 'date-time', description: 'When the next attempt is due; `null` unless `pending`.' })),
    attempts_total: Type.Integer({ minimum: 0, description: 'Every attempt recorded, resends included (`attempts` shows the newest 20).' }),
    attempts: Type.Array(componentRef('DeliveryAttempt', DeliveryAttempt), { maxItems: 20 }),
  },
  {
    description:
      "One delivery of an event to the workspace's endpoint, with its most recent attempts (newest first). Kept while pending and for 30 days after it was delivered or abandoned.",
  },
);
export type DeliveryJson = Static<typeof Delivery>;

export const DeliveryList = Type.Object(
  { items: Type.Array(componentRef('Delivery', Delivery), { maxItems: PAGE_SIZE_MAX }), has_more: Type.Boolean({ description: 'Whether a later page has rows.' }) },
  { description: "One page of the workspace's deliveries, newest first. There is no total." },
);
export type DeliveryListJson = Static<typeof DeliveryList>;

/** The receiver checks a run may hold, in the order they run (services/notifications/endpoint-checks.ts runs them). */
export const ENDPOINT_CHECK_NAMES = [
  'valid_delivery_accepted',
  'duplicate_accepted',
  'wrong_signature_refused',
  'stale_timestamp_refused',
  'altered_body_refused',
  'previous_secret_accepted',
] as const;

/** A receiver check run's states. */
export const ENDPOINT_CHECK_RUN_STATUSES = ['running', 'passed', 'failed'] as const;

export const EndpointCheck = Type.Object({
  name: oneOfNames(ENDPOINT_CHECK_NAMES, { description: 'Stable: script against it.' }),
  expectation: Type.String({ description: 'What a receiver keeping the rules does.' }),
  observed: nullable(Type.String({ description: 'What your receiver did (`HTTP 200 in 35 ms`, `no answer: timeout`); `null` until the check ran.' })),
  passed: nullable(Type.Boolean({ description: 'Whether it did as expected; `null` until the check ran.' })),
});
export type EndpointCheckJson = Static<typeof EndpointCheck>;

export const EndpointCheckRun = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    status: oneOfNames(ENDPOINT_CHECK_RUN_STATUSES, { description: '`passed` when every check passed.' }),
    url: Type.String({ description: 'The endpoint the run was sent to.' }),
    started_at: Type.String({ format: 'date-time' }),
    finished_at: nullable(Type.String({ format: 'date-time' })),
    checks: Type.Array(componentRef('EndpointCheck', EndpointCheck), { description: 'In the order they run; `previous_secret_accepted` only while a rotation overlap is open.' }),
  },
  { description: 'A receiver check run: test deliveries sent to your endpoint and how it answered each.' },
);
export type EndpointCheckRunJson = Static<typeof EndpointCheckRun>;
