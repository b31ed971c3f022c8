/** The operations of the Sandbox tools tag of the OpenAPI document (openapi.ts), with their examples (sandbox-examples.ts). */
import { type TagOperations, answer, curl, headers, otherMethods, parameterRef, problem, problems, schemaRef, withExamples } from './operation';
import { VALIDATION_FAILED_REQUEST } from './components-responses';
import {
  getDeliveryExamples,
  getEndpointCheckExamples,
  listDeliveriesExamples,
  resendDeliveryExamples,
  startEndpointCheckExamples,
  triggerTestEventExamples,
} from './sandbox-examples';

export const SANDBOX_OPERATIONS: TagOperations = {
  paths: {
    '/sandbox/events': {
      'x-other-methods': otherMethods('POST'),
      post: withExamples(
        {
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
          'x-codeSamples': curl('POST', '/sandbox/events'),
          requestBody: {
            required: true,
            description: 'The kind, the listing, and optionally the test booking and its stay.',
            content: { 'application/json': { schema: schemaRef('TestEvent') } },
          },
          responses: {
            '202': answer('Queued: the delivery, pending, with no attempt yet.', 'Delivery'),
            ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_REQUEST), '404': 'property_not_found', '409': 'webhook_endpoint_not_active' }),
          },
        },
        triggerTestEventExamples,
      ),
    },
    '/webhooks/deliveries': {
      'x-other-methods': otherMethods('GET, HEAD'),
      get: withExamples(
        {
          operationId: 'listDeliveries',
          summary: "List the workspace's deliveries and their attempts",
          description:
            "The delivery log: every delivery to the workspace's endpoint, test events and real ones, newest first, each with its newest 20 attempts (status, latency, outcome, the retry it scheduled). Pending deliveries, and finished ones for 30 days. Paged like `GET /blocks`; a page past the end is `200` with `items: []`. Challenges are answered during the registration call and are not listed.",
          tags: ['Sandbox tools'],
          parameters: [parameterRef('delivery_state'), parameterRef('delivery_event_type'), parameterRef('page'), parameterRef('page_size')],
          'x-codeSamples': curl('GET', '/webhooks/deliveries?state=abandoned&page=1&page_size=50'),
          responses: { '200': answer('One page of deliveries.', 'DeliveryList'), ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_REQUEST) }) },
        },
        listDeliveriesExamples,
      ),
    },
    '/webhooks/deliveries/{event_id}': {
      'x-other-methods': otherMethods('GET, HEAD'),
      parameters: [parameterRef('delivery_event_id')],
      get: withExamples(
        {
          operationId: 'getDelivery',
          summary: 'One delivery and its attempts',
          description: 'The delivery of this `event_id` with its newest 20 attempts; poll it after a test event or a resend.',
          tags: ['Sandbox tools'],
          'x-codeSamples': curl('GET', '/webhooks/deliveries/6c3e9b2a-4f1d-4a8e-b7c5-1d2e3f4a5b6c'),
          responses: { '200': answer('The delivery.', 'Delivery'), ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_REQUEST), '404': 'delivery_not_found' }) },
        },
        getDeliveryExamples,
      ),
    },
    '/webhooks/deliveries/{event_id}/resend': {
      'x-other-methods': otherMethods('POST'),
      parameters: [parameterRef('delivery_event_id')],
      post: withExamples(
        {
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
          'x-codeSamples': curl('POST', '/webhooks/deliveries/6c3e9b2a-4f1d-4a8e-b7c5-1d2e3f4a5b6c/resend'),
          responses: {
            '202': answer('Queued again: the delivery, pending.', 'Delivery'),
            ...problems({
              '400': problem('validation_failed', VALIDATION_FAILED_REQUEST),
              '404': 'delivery_not_found',
              '409': problem(
                ['webhook_endpoint_not_active', 'delivery_not_resendable'],
                "`webhook_endpoint_not_active`: the endpoint is not `active` or not subscribed to the kind; `delivery_not_resendable`: the delivery's body is no longer kept. Nothing was queued.",
              ),
            }),
          },
        },
        resendDeliveryExamples,
      ),
    },
    '/sandbox/endpoint-checks': {
      'x-other-methods': otherMethods('POST'),
      post: withExamples(
        {
          operationId: 'startEndpointCheck',
          summary: 'Check your webhook receiver',
          description: [
            'Starts a receiver check run against the workspace\'s active endpoint and answers it at once, `running` (with a `Location` to poll). The run sends test deliveries signed as real ones (`"test": true`, a `TEST-BK` booking reference), one after another, each with 5 s to answer, and judges the answers:',
            '',
            '- `valid_delivery_accepted`: a correctly signed delivery is accepted (2xx within 5 s);',
            '- `duplicate_accepted`: the same `event_id` again, signed afresh, is accepted (deduplicate; never fail a redelivery);',
            '- `wrong_signature_refused`: a signature under another secret is refused (any answer but 2xx);',
            '- `stale_timestamp_refused`: a correct signature over an `X-Signature-Timestamp` six minutes old is refused;',
            '- `altered_body_refused`: a body changed after it was signed is refused (verify over the raw bytes);',
            '- `previous_secret_accepted`, only while a rotation overlap is open: a delivery whose `X-Signature` does not verify but whose `X-Signature-Previous` does is accepted.',
            '',
            'A receiver that answers 200 to everything fails the three refusal checks. No answer fails a check. One run may start per workspace per minute (`429 rate_limited` with `Retry-After`); `409 webhook_endpoint_not_active` without an active endpoint. No body is read.',
          ].join('\n'),
          tags: ['Sandbox tools'],
          'x-codeSamples': curl('POST', '/sandbox/endpoint-checks'),
          responses: {
            '202': {
              description: 'Started: the run, `running`, every check without an outcome yet.',
              headers: headers({ Location: { description: 'Where to read the run: `/v1/sandbox/endpoint-checks/{id}`.', schema: { type: 'string' } } }),
              content: { 'application/json': { schema: schemaRef('EndpointCheckRun') } },
            },
            ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_REQUEST), '409': 'webhook_endpoint_not_active' }),
          },
        },
        startEndpointCheckExamples,
      ),
    },
    '/sandbox/endpoint-checks/{id}': {
      'x-other-methods': otherMethods('GET, HEAD'),
      parameters: [parameterRef('endpoint_check_id')],
      get: withExamples(
        {
          operationId: 'getEndpointCheck',
          summary: 'Read a receiver check run',
          description:
            'The run as it stands: `running` while checks are being sent (those not run yet have `observed` and `passed` `null`), then `passed` or `failed`. A run interrupted part-way reads as `failed`, its remaining checks `not run`. Runs are kept 30 days.',
          tags: ['Sandbox tools'],
          'x-codeSamples': curl('GET', '/sandbox/endpoint-checks/9e2b7c41-3d5a-4f6e-8b1c-0a2d4e6f8b13'),
          responses: {
            '200': answer('The run.', 'EndpointCheckRun'),
            ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_REQUEST), '404': 'endpoint_check_not_found' }),
          },
        },
        getEndpointCheckExamples,
      ),
    },
  },
};
