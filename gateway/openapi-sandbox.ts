/**
 * The sandbox tools' part of the OpenAPI document (gateway/openapi.ts builds the whole;
 * docs/partners/sandbox.md says the same in prose): POST /sandbox/events, GET
 * /webhooks/deliveries, GET /webhooks/deliveries/{event_id} and POST
 * /webhooks/deliveries/{event_id}/resend, their schemas, parameters, problem responses
 * and examples.
 *
 * Built with the document's own helpers, handed in by openapi.ts (so this module never
 * imports it back), from the same JSON Schemas the gateway validates with: the request
 * body is `schemas/test-event.json` itself and every parameter's schema is the
 * `parameters.json` object that validates it.
 */
import parametersSchema from './schemas/parameters.json';
import testEventSchema from './schemas/test-event.json';
import { PROBLEM_CODES, PROBLEM_CONTENT_TYPE, problemDocument, ProblemError, type ProblemCode } from './problems';
import type { Validator } from './validate';
import type { Json, JsonObject } from './json';

/** A request as an example states it (openapi.ts ExampleRequest). */
interface ExampleRequest {
  path?: Record<string, string>;
  query?: Record<string, string>;
  body?: Json;
}

/** A problem example (openapi.ts ProblemExample). */
interface ProblemExample {
  summary: string;
  error?: ProblemError;
  request?: ExampleRequest;
}

/** What validates one operation's request (openapi.ts RequestValidation). */
export interface RequestValidation {
  params: Validator<unknown>;
  query: Validator<unknown>;
  integerQuery?: readonly string[];
  body?: Validator<unknown>;
}

/** The helpers of openapi.ts this part is built with. */
export interface OpenApiHelpers {
  ref(kind: 'schemas' | 'responses' | 'parameters' | 'headers' | 'requestBodies', name: string): JsonObject;
  example(summary: string, value: Json, extra?: JsonObject): JsonObject;
  ok(description: string, schema: string, examples: Record<string, JsonObject>): JsonObject;
  jsonBody(schema: string, description: string, examples: Record<string, JsonObject>, required?: boolean): JsonObject;
  contractErrors(own: { '400': JsonObject } & Record<string, JsonObject>): JsonObject;
  problemResponse(code: ProblemCode, description: string, opts?: { headers?: string[]; extra?: JsonObject; examples?: Record<string, ProblemExample> }): JsonObject;
  validationFailedResponse(examples: Record<string, ProblemExample>): JsonObject;
  invalid(v: RequestValidation, pathNames: string[], summary: string, request: ExampleRequest): ProblemExample;
  curl(method: string, path: string, opts?: { query?: Record<string, Json>; body?: Json; auth?: 'API_KEY' | 'ACCESS_TOKEN' }): JsonObject[];
  parameter(name: string, where: 'path' | 'query', schema: unknown, description: string, example: Json): JsonObject;
  commonHeaders(): JsonObject;
  /** The examples' placeholders. */
  ids: { listingId: string; unknownListingId: string; eventId: string; deliveryEventId: string };
  /** An example `problem` document's base (the default DOCS_URL) and request id. */
  docsUrl: string;
  requestId: string;
  validation: { testEvent: RequestValidation; deliveries: RequestValidation; delivery: RequestValidation };
}

const json = (v: unknown): JsonObject => v as JsonObject;
const params = parametersSchema.$defs;
const deliveriesQuery = params.deliveries_query.properties;
const KINDS = testEventSchema.properties.event_type.enum;

/** A `409` with several codes (each named in `code`'s enum), with named examples. */
function conflictResponse(h: OpenApiHelpers, codes: ProblemCode[], description: string, examples: Record<string, ProblemExample & { code: ProblemCode }>): JsonObject {
  const out: JsonObject = {};
  for (const [name, ex] of Object.entries(examples)) {
    const value = json(problemDocument(ex.error ?? new ProblemError(ex.code), h.docsUrl, h.requestId));
    out[name] = h.example(ex.summary, value, ex.request ? { 'x-request': json(ex.request) } : {});
  }
  const status = PROBLEM_CODES[codes[0]!].status;
  return {
    description,
    headers: h.commonHeaders(),
    content: {
      [PROBLEM_CONTENT_TYPE]: {
        schema: { allOf: [h.ref('schemas', 'Problem'), { type: 'object', properties: { code: { enum: codes }, status: { const: status } } }] },
        examples: out,
      },
    },
  };
}

export function sandboxOpenApi(h: OpenApiHelpers) {
  const { ids } = h;

  const attemptSchema: JsonObject = {
    type: 'object',
    description: 'One attempt of a delivery, as recorded when it ended.',
    required: ['attempted_at', 'response_status', 'latency_ms', 'outcome', 'next_attempt_at'],
    properties: {
      attempted_at: { type: 'string', format: 'date-time', description: 'When the attempt started.' },
      response_status: {
        type: ['integer', 'null'],
        minimum: 100,
        maximum: 599,
        description: 'The HTTP status your endpoint answered; `null` when it gave no HTTP answer (time-out, connection or TLS failure) or nothing was sent.',
      },
      latency_ms: {
        type: ['integer', 'null'],
        minimum: 0,
        description: "How long the attempt took, connection and TLS included, until your response's status line; `null` when nothing was sent.",
      },
      outcome: {
        type: 'string',
        description:
          '`delivered` (a 2xx), or why the attempt failed: `http_status` (a 4xx or 5xx), `redirect` (a 3xx, never followed), `timeout`, `connection_failed`, `tls_failed`, `address_refused` (the name resolved to an address that is not allowed), `endpoint_not_active` (paused, unsubscribed, unverified or suspended: nothing was sent). Tolerate values added later.',
        examples: ['delivered', 'http_status', 'timeout'],
      },
      next_attempt_at: {
        type: ['string', 'null'],
        format: 'date-time',
        description: 'When the retry this attempt scheduled is due; `null` after a delivery or the last attempt of the schedule.',
      },
    },
  };

  const deliverySchema: JsonObject = {
    type: 'object',
    description:
      "One delivery of an event to the workspace's endpoint, with its most recent attempts (newest first). Kept while pending and for 30 days after it was delivered or abandoned.",
    required: ['event_id', 'event_type', 'test', 'state', 'occurred_at', 'queued_at', 'next_attempt_at', 'attempts_total', 'attempts'],
    properties: {
      event_id: { type: 'string', format: 'uuid', description: "The envelope's `event_id`, the same on every attempt and resend." },
      event_type: { type: 'string', enum: KINDS },
      test: { type: 'boolean', description: 'True for a test event (`POST /sandbox/events`): its body carries `"test": true` and names no real booking.' },
      state: {
        type: 'string',
        enum: deliveriesQuery.state.enum,
        description: '`pending`: an attempt is scheduled (`next_attempt_at`); `delivered`: a 2xx was received; `abandoned`: the last attempt of the retry schedule failed.',
      },
      occurred_at: { type: 'string', format: 'date-time', description: "The envelope's `occurred_at`." },
      queued_at: { type: 'string', format: 'date-time', description: 'When the delivery was queued, or last resent: where its retry schedule started.' },
      next_attempt_at: { type: ['string', 'null'], format: 'date-time', description: 'When the next attempt is due; `null` unless `pending`.' },
      attempts_total: { type: 'integer', minimum: 0, description: 'Every attempt recorded, resends included (`attempts` shows the newest 20).' },
      attempts: { type: 'array', maxItems: 20, items: h.ref('schemas', 'DeliveryAttempt') },
    },
  };

  const deliveryListSchema: JsonObject = {
    type: 'object',
    description: "One page of the workspace's deliveries, newest first. There is no total.",
    required: ['items', 'has_more'],
    properties: {
      items: { type: 'array', maxItems: 200, items: h.ref('schemas', 'Delivery') },
      has_more: { type: 'boolean', description: 'Whether a later page has rows.' },
    },
  };

  // ---- examples

  const queuedAt = '2026-09-14T08:00:03.117Z';
  const pending = (eventId: string, kind: string): JsonObject => ({
    event_id: eventId,
    event_type: kind,
    test: true,
    state: 'pending',
    occurred_at: queuedAt,
    queued_at: queuedAt,
    next_attempt_at: queuedAt,
    attempts_total: 0,
    attempts: [],
  });
  const delivered: JsonObject = {
    ...pending(ids.deliveryEventId, 'booking.confirmed'),
    state: 'delivered',
    next_attempt_at: null,
    attempts_total: 1,
    attempts: [{ attempted_at: '2026-09-14T08:00:03.164Z', response_status: 200, latency_ms: 87, outcome: 'delivered', next_attempt_at: null }],
  };
  const abandoned: JsonObject = {
    event_id: ids.eventId,
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
  };
  const resent: JsonObject = { ...delivered, state: 'pending', queued_at: '2026-09-14T09:12:44.210Z', next_attempt_at: '2026-09-14T09:12:44.210Z' };

  const triggerBody = (kind: string, extra: JsonObject = {}): JsonObject => ({ event_type: kind, listing_id: ids.listingId, ...extra });
  const testReference = 'TEST-BK7Q2M4X9C3D';
  const deliveryPath = (id: string) => `/webhooks/deliveries/${id}`;

  const notFound = h.problemResponse(
    'delivery_not_found',
    "`delivery_not_found`: no delivery with this `event_id` in the workspace (unknown or another partner's: indistinguishable).",
    {
      examples: { unknown_delivery: { summary: "An `event_id` that is unknown or another partner's", request: { path: { event_id: '6f1c1f57-3a39-4f0a-9a8e-0a4f2e2d7c11' } } } },
    },
  );

  const tags = [
    {
      name: 'Sandbox tools',
      description:
        'For building and checking a webhook receiver: signed test events, the delivery log with each attempt, and a resend. Sandbox workspaces only; production workspaces get `501` after validation, as everywhere.',
    },
  ];

  const paths: Record<string, JsonObject> = {
    '/sandbox/events': {
      post: {
        operationId: 'triggerTestEvent',
        summary: 'Send a test event to the webhook endpoint',
        description: [
          "Queues a signed delivery of a synthetic `booking.confirmed`, `booking.cancelled` or `user.erased` about one of the workspace's own listings, sent to the registered endpoint through the normal delivery pipeline: signed, retried, logged and resendable like any delivery.",
          '',
          'Nothing happens in the calendar: no night is taken, no booking or erasure exists. The envelope carries `"test": true` (inside the signed body) and the booking reference is a test one (`TEST-BK…`), a shape no real booking has. The data is built from the listing (`provider_id`, check-in and check-out times) and fixed values: guest `Test Guest`, a party of 2, 100.00 EUR a night, a stay 30 days from today (UTC) for two nights unless `check_in`/`check_out` are given. A test `user.erased` opens a deletion request to acknowledge as a real one.',
          '',
          'The endpoint must be `active` and subscribed to the kind, else `409 webhook_endpoint_not_active` and nothing is queued. `202`: queued; poll `GET /webhooks/deliveries/{event_id}` for its attempts.',
        ].join('\n'),
        tags: ['Sandbox tools'],
        'x-codeSamples': h.curl('POST', '/sandbox/events', { auth: 'ACCESS_TOKEN', body: triggerBody('booking.confirmed') }),
        requestBody: h.jsonBody('TestEvent', 'The kind, the listing, and optionally the test booking and its stay.', {
          confirmed: h.example('A test booking confirmed on one of your listings', triggerBody('booking.confirmed')),
          cancelled: h.example('The same test booking cancelled by the host', triggerBody('booking.cancelled', { booking_reference: testReference, initiated_by: 'host' })),
          erased: h.example('Its guest erased their account', triggerBody('user.erased', { booking_reference: testReference })),
          dated: h.example('A test booking for given nights', triggerBody('booking.confirmed', { check_in: '2030-09-01', check_out: '2030-09-04' })),
          unknown_listing: h.example("A listing that does not exist or is another partner's", { event_type: 'booking.confirmed', listing_id: ids.unknownListingId }),
        }),
        responses: {
          '202': {
            description: 'Queued: the delivery, pending, with no attempt yet.',
            headers: h.commonHeaders(),
            content: {
              'application/json': {
                schema: h.ref('schemas', 'Delivery'),
                examples: {
                  confirmed: h.example('Queued', pending(ids.deliveryEventId, 'booking.confirmed')),
                  cancelled: h.example('Queued', pending('c2a4e6f8-1b3d-4f5a-8c7e-9d0b2a4c6e81', 'booking.cancelled')),
                  erased: h.example('Queued', pending('e7d9b1f3-5a2c-4e8b-9f1d-3c5a7e9b1d24', 'user.erased')),
                  dated: h.example('Queued', pending('a1b3c5d7-9e2f-4a6b-8c1d-5e7f9a2b4c63', 'booking.confirmed')),
                },
              },
            },
          },
          ...h.contractErrors({
            '400': h.validationFailedResponse({
              invalid: h.invalid(h.validation.testEvent, [], "An unknown kind and a real booking's reference", {
                body: { event_type: 'booking.modified', listing_id: ids.listingId, booking_reference: 'BK7Q2M4X9C' },
              }),
            }),
            '404': h.ref('responses', 'PropertyNotFound'),
            '409': h.ref('responses', 'WebhookEndpointNotActive'),
          }),
        },
      },
    },
    '/webhooks/deliveries': {
      get: {
        operationId: 'listDeliveries',
        summary: "List the workspace's deliveries and their attempts",
        description:
          "The delivery log: every delivery to the workspace's endpoint, test events and real ones, newest first, each with its newest 20 attempts (status, latency, outcome, the retry it scheduled). Pending deliveries, and finished ones for 30 days. Paged like `GET /blocks`; a page past the end is `200` with `items: []`. Challenges are answered during the registration call and are not listed.",
        tags: ['Sandbox tools'],
        parameters: [h.ref('parameters', 'delivery_state'), h.ref('parameters', 'delivery_event_type'), h.ref('parameters', 'page'), h.ref('parameters', 'page_size')],
        'x-codeSamples': h.curl('GET', '/webhooks/deliveries', { auth: 'ACCESS_TOKEN', query: { state: 'abandoned', page: 1, page_size: 50 } }),
        responses: {
          '200': h.ok('One page of deliveries.', 'DeliveryList', {
            page: h.example('Abandoned `user.erased` deliveries', { items: [abandoned], has_more: false }),
            past_the_end: h.example('A page past the end', { items: [], has_more: false }, { 'x-request': { query: { page: '9' } } }),
          }),
          ...h.contractErrors({
            '400': h.validationFailedResponse({
              invalid: h.invalid(h.validation.deliveries, [], 'A state outside the set, a page size over 200 and a parameter the endpoint does not have', {
                query: { state: 'failed', page_size: '500', since: '2026-09-01' },
              }),
            }),
          }),
        },
      },
    },
    '/webhooks/deliveries/{event_id}': {
      parameters: [h.ref('parameters', 'delivery_event_id')],
      get: {
        operationId: 'getDelivery',
        summary: 'One delivery and its attempts',
        description: 'The delivery of this `event_id` with its newest 20 attempts; poll it after a test event or a resend.',
        tags: ['Sandbox tools'],
        'x-codeSamples': h.curl('GET', deliveryPath(ids.deliveryEventId), { auth: 'ACCESS_TOKEN' }),
        responses: {
          '200': h.ok('The delivery.', 'Delivery', { delivery: h.example('A test event, delivered at the first attempt', delivered) }),
          ...h.contractErrors({
            '400': h.validationFailedResponse({
              invalid: h.invalid(h.validation.delivery, ['event_id'], 'An `event_id` that is not a UUID', { path: { event_id: 'evt-100234' } }),
            }),
            '404': h.ref('responses', 'DeliveryNotFound'),
          }),
        },
      },
    },
    '/webhooks/deliveries/{event_id}/resend': {
      parameters: [h.ref('parameters', 'delivery_event_id')],
      post: {
        operationId: 'resendDelivery',
        summary: 'Send a delivery again',
        description: [
          'Sends the same delivery again: the same `event_id` and the same body byte for byte, signed afresh at each attempt (a new `X-Signature-Timestamp`, the current secret). Your receiver deduplicates on `event_id` and answers a duplicate with a 2xx, which a resend of something already processed checks. No body is read.',
          '',
          "A delivered or abandoned delivery becomes `pending` with a fresh retry schedule, its first attempt due now; its earlier attempts stay in the log. A pending one has its next attempt made due now. The endpoint's circuit breaker and any `Retry-After` it sent still apply.",
          '',
          "Refused with nothing queued: `409 webhook_endpoint_not_active` when the endpoint is not `active` or not subscribed to the kind; `409 delivery_not_resendable` when the body is no longer kept — a real event's body, which may carry a guest's name, is deleted once delivered (test events and abandoned deliveries keep theirs).",
        ].join('\n'),
        tags: ['Sandbox tools'],
        'x-codeSamples': h.curl('POST', `${deliveryPath(ids.deliveryEventId)}/resend`, { auth: 'ACCESS_TOKEN' }),
        responses: {
          '202': {
            description: 'Queued again: the delivery, pending.',
            headers: h.commonHeaders(),
            content: { 'application/json': { schema: h.ref('schemas', 'Delivery'), examples: { resent: h.example('A delivered test event, queued again', resent) } } },
          },
          ...h.contractErrors({
            '400': h.validationFailedResponse({
              invalid: h.invalid(h.validation.delivery, ['event_id'], 'An `event_id` that is not a UUID', { path: { event_id: 'evt-100234' } }),
            }),
            '404': h.ref('responses', 'DeliveryNotFound'),
            '409': conflictResponse(
              h,
              ['webhook_endpoint_not_active', 'delivery_not_resendable'],
              "`webhook_endpoint_not_active`: the endpoint is not `active` or not subscribed to the kind; `delivery_not_resendable`: the delivery's body is no longer kept. Nothing was queued.",
              {
                not_resendable: {
                  code: 'delivery_not_resendable',
                  summary: 'A real event that was delivered: its body is gone',
                  request: { path: { event_id: ids.eventId } },
                },
                endpoint_not_active: {
                  code: 'webhook_endpoint_not_active',
                  summary: 'The endpoint is paused',
                  request: { path: { event_id: ids.deliveryEventId } },
                },
              },
            ),
          }),
        },
      },
    },
  };

  const schemas: Record<string, JsonObject> = {
    TestEvent: json(testEventSchema),
    Delivery: deliverySchema,
    DeliveryAttempt: attemptSchema,
    DeliveryList: deliveryListSchema,
  };

  const parameters: Record<string, JsonObject> = {
    delivery_event_id: h.parameter('event_id', 'path', params.delivery_path.properties.event_id, "The delivery's `event_id` (its envelope's).", ids.deliveryEventId),
    delivery_state: h.parameter('state', 'query', deliveriesQuery.state, 'Only deliveries in this state.', 'abandoned'),
    delivery_event_type: h.parameter('event_type', 'query', deliveriesQuery.event_type, 'Only deliveries of this kind.', 'user.erased'),
  };

  const responses: Record<string, JsonObject> = {
    DeliveryNotFound: notFound,
    WebhookEndpointNotActive: h.problemResponse(
      'webhook_endpoint_not_active',
      '`webhook_endpoint_not_active`: the workspace has no endpoint that is `active` and subscribed to this kind (none registered, its challenge not echoed, paused, suspended, or the kind not in `events`). Nothing was queued.',
      {
        examples: {
          endpoint_not_active: {
            summary: 'The endpoint is paused (`events: []`)',
            request: { body: triggerBody('booking.confirmed') },
          },
        },
      },
    ),
  };

  return { tags, paths, schemas, parameters, responses };
}
