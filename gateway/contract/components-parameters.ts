/** The parameters several operations share (`#/components/parameters/<name>`); each schema is the route's own path or query declaration. */
import type { Part } from './operation';
import { PropertyPath } from './properties';
import { BlockPath, BlocksQuery } from './blocks';
import { DeletionRequestPath } from './deletion-requests';
import { MAX_NIGHTS_READ, PAGE_SIZE_DEFAULT } from '../../services/kit/base';
import { ListingNightsQuery, ListingPath } from './listings';
import { DeliveriesQuery, DeliveryPath, EndpointCheckPath } from './sandbox';
import { EventsQuery } from './events';

/** A string schema's length bounds, as the prose says them: `1–128 characters`. */
function characters(schema: { minLength?: number; maxLength?: number }): string {
  return `${schema.minLength}–${schema.maxLength} characters`;
}

export const PARAMETERS: Record<string, Part> = {
  provider_id: {
    name: 'provider_id',
    in: 'path',
    required: true,
    description: `The partner's own property identifier, unique within its integration (${characters(PropertyPath.properties.provider_id)}).`,
    schema: PropertyPath.properties.provider_id,
    example: 'villa-42',
  },
  external_uid: {
    name: 'external_uid',
    in: 'path',
    required: true,
    description: `The partner's own block identifier, typically a reservation id (${characters(BlockPath.properties.external_uid)}).`,
    schema: BlockPath.properties.external_uid,
    example: 'resv-100234',
  },
  event_id: {
    name: 'event_id',
    in: 'path',
    required: true,
    description: 'The `event_id` of the `user.erased` delivery being acknowledged.',
    schema: DeletionRequestPath.properties.event_id,
    example: '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f',
  },
  from: {
    name: 'from',
    in: 'query',
    required: false,
    description: 'Only blocks holding a night on or after this date (a block whose `check_out` equals `from` is not returned).',
    schema: BlocksQuery.properties.from,
    example: '2030-07-01',
  },
  to: { name: 'to', in: 'query', required: false, description: 'Only blocks holding a night on or before this date.', schema: BlocksQuery.properties.to, example: '2030-07-31' },
  page: { name: 'page', in: 'query', required: false, description: '1-based page.', schema: BlocksQuery.properties.page, example: 1 },
  page_size: { name: 'page_size', in: 'query', required: false, description: 'Rows per page.', schema: BlocksQuery.properties.page_size, example: PAGE_SIZE_DEFAULT },
  listing_id: {
    name: 'listing_id',
    in: 'path',
    required: true,
    description: "The marketplace listing identifier, as `PUT /properties/{provider_id}` or a block's answer gives it; one of the workspace's own listings.",
    schema: ListingPath.properties.listing_id,
    example: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j',
  },
  nights_from: { name: 'from', in: 'query', required: true, description: 'The first night shown.', schema: ListingNightsQuery.properties.from, example: '2030-07-01' },
  nights_to: {
    name: 'to',
    in: 'query',
    required: true,
    description: `The end of the range, exclusive (like a block's \`check_out\`): after \`from\`, at most ${MAX_NIGHTS_READ} nights later.`,
    schema: ListingNightsQuery.properties.to,
    example: '2030-07-08',
  },
  delivery_event_id: {
    name: 'event_id',
    in: 'path',
    required: true,
    description: "The delivery's `event_id` (its envelope's).",
    schema: DeliveryPath.properties.event_id,
    example: '6c3e9b2a-4f1d-4a8e-b7c5-1d2e3f4a5b6c',
  },
  delivery_state: { name: 'state', in: 'query', required: false, description: 'Only deliveries in this state.', schema: DeliveriesQuery.properties.state, example: 'abandoned' },
  delivery_event_type: {
    name: 'event_type',
    in: 'query',
    required: false,
    description: 'Only deliveries of this kind.',
    schema: DeliveriesQuery.properties.event_type,
    example: 'user.erased',
  },
  events_after: {
    name: 'after',
    in: 'query',
    required: false,
    description: "A previous page's `next_after`: the events recorded after it. Absent: from the oldest event kept. Opaque: pass it back as received.",
    schema: EventsQuery.properties.after,
    example: '41',
  },
  events_limit: { name: 'limit', in: 'query', required: false, description: 'Most events answered.', schema: EventsQuery.properties.limit, example: PAGE_SIZE_DEFAULT },
  endpoint_check_id: {
    name: 'id',
    in: 'path',
    required: true,
    description: "The run's `id`, as `POST /sandbox/endpoint-checks` answered it.",
    schema: EndpointCheckPath.properties.id,
    example: '9e2b7c41-3d5a-4f6e-8b1c-0a2d4e6f8b13',
  },
};
