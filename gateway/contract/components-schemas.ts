/**
 * The document's schemas (`#/components/schemas/<name>`): the request and answer declarations of the route groups (the very objects ajv
 * compiles), and what only the document has: the webhook payloads, the problem document, the token endpoint's refusal.
 */
import { PROBLEM_CODES, VIOLATION_CODES } from '../problems';
import { cancellationInitiators } from '../public-enums';
import { MAX_VIOLATIONS } from '../validate';
import { type Part, schemaRef } from './operation';
import { PhotoState, PropertyBody, PropertyPath, PropertyUpsert, StoredProperty, StoredPropertyList } from './properties';
import { BlockBody, BlockItem, BlockList, BlockPut } from './blocks';
import { WebhookEndpointBody, WebhookEndpointState } from './webhooks';
import { AcknowledgeBody, DeletionAcknowledgementState } from './deletion-requests';
import { Delivery, DeliveryAttempt, DeliveryList, EndpointCheck, EndpointCheckRun, TestEventBody } from './sandbox';
import { Token } from './token';
import { DOCS_URL } from './document-values';
import { EventList } from './events';
import { RecordedRequest, RecordedRequestList } from './requests';
import { ListingNight, ListingNights } from './listings';

/** Every problem code, in the order problems.ts lists them. */
const PROBLEM_CODE_NAMES = Object.keys(PROBLEM_CODES);

/** A webhook delivery's body: the envelope every event kind shares, around its `data`. */
function event(kind: string, description: string, data: Part): Part {
  return {
    type: 'object',
    description,
    required: ['event_id', 'event_type', 'occurred_at', 'data'],
    properties: {
      event_id: { type: 'string', format: 'uuid', description: 'Stable across retries: deduplicate on it and answer duplicates with 2xx.' },
      event_type: { type: 'string', const: kind },
      occurred_at: {
        type: 'string',
        format: 'date-time',
        description: 'When the event happened (for a booking, when it was confirmed), not when it was sent. Order deliveries by it, never by arrival.',
      },
      data,
      test: { type: 'boolean', const: true, description: 'Present only on a test event (`POST /sandbox/events`, sandbox tools), always `true`; absent from every real delivery.' },
    },
  };
}

export const SCHEMAS: Record<string, Part> = {
  Property: PropertyBody,
  Block: BlockBody,
  WebhookEndpoint: WebhookEndpointBody,
  DeletionAcknowledgement: AcknowledgeBody,
  TestEvent: TestEventBody,
  Money: PropertyBody.properties.base_rate,
  Token: Token,
  Message: {
    type: 'object',
    description: 'A refusal of the token endpoint: `{message}`, not a problem document.',
    required: ['message'],
    properties: { message: { type: 'string' } },
  },
  PropertyUpsert: PropertyUpsert,
  BlockPut: BlockPut,
  BlockItem: BlockItem,
  BlockList: BlockList,
  WebhookEndpointState: WebhookEndpointState,
  DeletionAcknowledgementState: DeletionAcknowledgementState,
  Delivery: Delivery,
  DeliveryAttempt: DeliveryAttempt,
  DeliveryList: DeliveryList,
  Problem: {
    type: 'object',
    description:
      "An RFC 9457 problem document (`application/problem+json`): the shape of every error except the token endpoint's refusals. Clients branch on `code`, never on `type`, `title` or `detail`, and must tolerate codes added later. Nothing in it ever repeats a submitted value.",
    required: ['type', 'title', 'status', 'detail', 'instance', 'code'],
    properties: {
      type: {
        type: 'string',
        format: 'uri',
        description: '`<documentation base>/errors/<code with hyphens>`, for example the one below: a stable identifier, not to be fetched.',
        examples: [`${DOCS_URL}/errors/validation-failed`],
      },
      title: { type: 'string', description: 'A short summary of the code.' },
      status: { type: 'integer', minimum: 400, maximum: 599, description: 'The HTTP status.' },
      detail: { type: 'string', description: 'Human text per code; may change.' },
      instance: {
        type: 'string',
        description: "This occurrence: `urn:psync:request:<uuid>`, the request's `X-Request-Id`. Not a URL.",
        pattern: '^urn:psync:request:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
      },
      code: {
        type: 'string',
        description: `The error code; the codes of this version are ${PROBLEM_CODE_NAMES.map((c) => `\`${c}\``).join(', ')}. New codes may be added.`,
        examples: PROBLEM_CODE_NAMES,
      },
      errors: {
        type: 'array',
        description: `\`validation_failed\` only: every violation, in the order found (at most ${MAX_VIOLATIONS}). Names fields, never their values.`,
        maxItems: MAX_VIOLATIONS,
        items: schemaRef('Violation'),
      },
      conflicts: { type: 'array', description: '`conflict` only: every colliding night, `YYYY-MM-DD`, untruncated.', items: { type: 'string', format: 'date' } },
    },
  },
  Violation: {
    type: 'object',
    description: 'One schema violation.',
    required: ['field', 'code'],
    properties: {
      field: {
        type: 'string',
        description: "A dotted path with indices (`address.country`, `photos[1].url`); `body` for the document itself; the parameter's name for path and query parameters.",
      },
      code: { type: 'string', enum: [...VIOLATION_CODES], description: '`one_of`: both or neither of two exclusive fields; `invalid`: any other bad value.' },
    },
  },
  ChallengeEvent: event('endpoint.challenge', 'Sent during every `PUT /webhooks/endpoint`, only to verify the endpoint.', {
    type: 'object',
    required: ['challenge'],
    properties: { challenge: { type: 'string', minLength: 1, description: 'Opaque and single-use: echo it within five seconds.' } },
  }),
  ChallengeAnswer: {
    type: 'object',
    description: "The receiver's answer to a challenge: the body is what is checked.",
    required: ['challenge'],
    properties: { challenge: { type: 'string', description: 'The same string as `data.challenge`.' } },
  },
  BookingConfirmedEvent: event(
    'booking.confirmed',
    'A guest completed and paid for a booking on a synced property. No email, phone or durable guest identifier; the split between marketplace and property is not included.',
    {
      type: 'object',
      required: ['booking_reference', 'listing_id', 'provider_id', 'check_in', 'check_out', 'check_in_time', 'check_out_time', 'party_size', 'guest_name', 'amount_paid'],
      properties: {
        booking_reference: { type: 'string', minLength: 1, description: "The marketplace's booking reference." },
        listing_id: { type: 'string', minLength: 1 },
        provider_id: { type: ['string', 'null'], description: "The partner's property id; `null` when the partner did not push the property." },
        check_in: { type: 'string', format: 'date' },
        check_out: { type: 'string', format: 'date', description: 'Departure day (exclusive).' },
        check_in_time: PropertyBody.properties.check_in_time,
        check_out_time: PropertyBody.properties.check_out_time,
        party_size: { type: 'integer', minimum: 1 },
        guest_name: { type: ['string', 'null'], description: "The guest's name; `null` in a retry sent after the guest erased their account." },
        amount_paid: schemaRef('Money'),
      },
    },
  ),
  BookingCancelledEvent: event('booking.cancelled', 'A booking was cancelled. No guest name and no money.', {
    type: 'object',
    required: ['booking_reference', 'listing_id', 'cancelled_at', 'initiated_by'],
    properties: {
      booking_reference: { type: 'string', minLength: 1, description: "The marketplace's booking reference." },
      listing_id: { type: 'string', minLength: 1 },
      cancelled_at: { type: 'string', format: 'date-time' },
      initiated_by: { type: 'string', enum: [...cancellationInitiators.names], description: '`guest`: the nights can be re-sold; `host`: the property withdrew.' },
    },
  }),
  UserErasedEvent: event(
    'user.erased',
    'A guest erased their account: delete the named records, then call `POST /deletion-requests/{event_id}/acknowledge` with this `event_id`. No personal data and no user id.',
    {
      type: 'object',
      required: ['booking_references', 'provider_ids'],
      properties: {
        booking_references: { type: 'array', items: { type: 'string', minLength: 1, description: "The marketplace's booking reference." } },
        provider_ids: { type: 'array', items: PropertyPath.properties.provider_id },
      },
    },
  ),
  EventList: EventList,
  EndpointCheck: EndpointCheck,
  EndpointCheckRun: EndpointCheckRun,
  RecordedRequest: RecordedRequest,
  RecordedRequestList: RecordedRequestList,
  PhotoState: PhotoState,
  StoredProperty: StoredProperty,
  StoredPropertyList: StoredPropertyList,
  ListingNight: ListingNight,
  ListingNights: ListingNights,
};
