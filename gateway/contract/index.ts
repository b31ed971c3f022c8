/**
 * Every request schema of the contract by name: whose field names the request log keeps
 * (contract-field-names.ts), and what tests compile (the OpenAPI document names the same
 * objects in components-schemas.ts and components-parameters.ts). Each is declared once, in this folder's file of its route
 * group, beside the route in gateway/routes/ of the same name.
 */
import type { TSchema } from '@sinclair/typebox';
import { BlockBody, BlockItem, BlockList, BlockPath, BlockPut, BlocksQuery } from './blocks';
import { AcknowledgeBody, DeletionAcknowledgementState, DeletionRequestPath } from './deletion-requests';
import { EventList, EventsQuery } from './events';
import { ListingNight, ListingNights, ListingNightsQuery, ListingPath } from './listings';
import { PhotoState, PropertiesQuery, PropertyBody, PropertyPath, PropertyUpsert, StoredProperty, StoredPropertyList } from './properties';
import { RecordedRequest, RecordedRequestList, RequestsQuery } from './requests';
import { DeliveriesQuery, Delivery, DeliveryAttempt, DeliveryList, DeliveryPath, EndpointCheck, EndpointCheckPath, EndpointCheckRun, TestEventBody } from './sandbox';
import { Token } from './token';
import { WebhookEndpointBody, WebhookEndpointState } from './webhooks';

export { COMPLETED_AT_MAX_AHEAD_MS } from './deletion-requests';
export { ENDPOINT_CHECK_NAMES, ENDPOINT_CHECK_RUN_STATUSES, TEST_EVENT_KINDS } from './sandbox';

export const REQUEST_SCHEMAS = {
  property: PropertyBody,
  block: BlockBody,
  webhookEndpoint: WebhookEndpointBody,
  acknowledge: AcknowledgeBody,
  testEvent: TestEventBody,
  propertyPath: PropertyPath,
  blockPath: BlockPath,
  deletionRequestPath: DeletionRequestPath,
  blocksQuery: BlocksQuery,
  propertiesQuery: PropertiesQuery,
  listingPath: ListingPath,
  listingNightsQuery: ListingNightsQuery,
  deliveryPath: DeliveryPath,
  deliveriesQuery: DeliveriesQuery,
  eventsQuery: EventsQuery,
  endpointCheckPath: EndpointCheckPath,
  requestsQuery: RequestsQuery,
} as const satisfies Record<string, TSchema>;

export type RequestSchemaName = keyof typeof REQUEST_SCHEMAS;

/** Every answer schema the document names as a component, by its component name (components-schemas.ts). */
export const RESPONSE_SCHEMAS = {
  Token,
  PropertyUpsert,
  BlockPut,
  BlockItem,
  BlockList,
  WebhookEndpointState,
  DeletionAcknowledgementState,
  Delivery,
  DeliveryAttempt,
  DeliveryList,
  EventList,
  EndpointCheck,
  EndpointCheckRun,
  RecordedRequest,
  RecordedRequestList,
  PhotoState,
  StoredProperty,
  StoredPropertyList,
  ListingNight,
  ListingNights,
} as const satisfies Record<string, TSchema>;
