/** What the sandbox tools accept (routes/sandbox.ts). */
import { Type } from '@sinclair/typebox';
import { ListDeliveryLogRequestSchema, TriggerTestEventRequestSchema } from '../../gen/psync/notifications/v1/notifications_pb';
import { MAX_NIGHTS } from '../../services/kit/base';
import { allowedNamesOf, lengthOf, patternOf } from '../proto-rules';
import { cancellationInitiators, deliveryStates, webhookEvents } from '../public-enums';
import { closed, oneOfNames, requestBody, type Validated } from '../request-schema';
import { Page, PageSize } from './paging';

/** The body of POST /v1/sandbox/events. */
export const TestEventBody = requestBody(
  'test-event',
  'Test event',
  `Body of POST /v1/sandbox/events: a synthetic event about one of the workspace's listings, delivered signed to its webhook endpoint with "test": true in the envelope. booking_reference must be a test reference (TEST-BK and 10 characters), e.g. the one an earlier test booking.confirmed announced; absent, a fresh one. check_in and check_out are for booking.confirmed only (default: 30 days from today, UTC, for two nights; check_out after check_in and at most ${MAX_NIGHTS} nights later, checked after the schema, field check_out); initiated_by for booking.cancelled only (default guest). A field given for another kind is reported as code invalid (checked after the schema).`,
  {
    event_type: oneOfNames(allowedNamesOf(TriggerTestEventRequestSchema, 'event_type', webhookEvents)),
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
