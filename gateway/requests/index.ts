/**
 * Every request schema of the contract by name: what the OpenAPI document's `$embed`
 * names (openapi.ts), whose field names the request log keeps (contract-field-names.ts),
 * and what tests compile. Each is declared once, in this folder's file of its route
 * group, beside the route in gateway/routes/ of the same name.
 */
import type { TSchema } from '@sinclair/typebox';
import { BlockBody, BlockPath, BlocksQuery } from './blocks';
import { AcknowledgeBody, DeletionRequestPath } from './deletion-requests';
import { EventsQuery } from './events';
import { ListingNightsQuery, ListingPath } from './listings';
import { PropertiesQuery, PropertyBody, PropertyPath } from './properties';
import { RequestsQuery } from './requests';
import { DeliveriesQuery, DeliveryPath, EndpointCheckPath, TestEventBody } from './sandbox';
import { WebhookEndpointBody } from './webhooks';

export { COMPLETED_AT_MAX_AHEAD_MS } from './deletion-requests';

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
