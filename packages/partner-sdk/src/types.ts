/**
 * The contract's schemas under their own names, taken from the types generated from
 * docs/openapi.json (src/generated/openapi.ts, `npm run sdk:generate`), so a field
 * added to the document reaches these names with the next generation.
 */
import type { components, paths } from './generated/openapi';

type Schemas = components['schemas'];

export type { components, paths, operations, webhooks } from './generated/openapi';

/** Request body of `PUT /properties/{provider_id}`: the complete property (replace, not merge). */
export type Property = Schemas['Property'];
/** Answer of `PUT /properties/{provider_id}`. */
export type PropertyUpsert = Schemas['PropertyUpsert'];
/** Answer of `GET /properties/{provider_id}`: the property as last accepted, its publishability and each photo's state. */
export type StoredProperty = Schemas['StoredProperty'];
/** Answer of `GET /properties`. */
export type StoredPropertyList = Schemas['StoredPropertyList'];
/** Query of `GET /properties`. */
export type PropertyListQuery = NonNullable<paths['/properties']['get']['parameters']['query']>;
/** One photo of a property read back: `processing`, `ready`, or `rejected` with its `reason`. */
export type PhotoState = Schemas['PhotoState'];
/** Request body of `PUT /blocks/{external_uid}`. */
export type Block = Schemas['Block'];
/** Answer of `PUT /blocks/{external_uid}`. */
export type BlockPut = Schemas['BlockPut'];
/** One row of `GET /blocks`. */
export type BlockItem = Schemas['BlockItem'];
/** Answer of `GET /blocks`. */
export type BlockList = Schemas['BlockList'];
/** Query of `GET /blocks`. */
export type BlockListQuery = NonNullable<paths['/blocks']['get']['parameters']['query']>;
/** Answer of `GET /listings/{listing_id}/nights`: one item per night. */
export type ListingNights = Schemas['ListingNights'];
/** One night of a listing: `free`, `blocked` (`external_uid`), `booked` (`booking_reference`), `held`; a host-cancelled booking's nights read `booked` with `withdrawn: true`. */
export type ListingNight = Schemas['ListingNight'];
/** Query of `GET /listings/{listing_id}/nights`: `from`, and `to` exclusive. */
export type ListingNightsQuery = paths['/listings/{listing_id}/nights']['get']['parameters']['query'];
/** Request body of `PUT /webhooks/endpoint`. */
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
/** Answer of `PUT /webhooks/endpoint` (`signing_secret` only on the call that first issues it). */
export type WebhookEndpointState = Schemas['WebhookEndpointState'];
/** Request body of `POST /deletion-requests/{event_id}/acknowledge`. */
export type DeletionAcknowledgement = Schemas['DeletionAcknowledgement'];
/** Answer of `POST /deletion-requests/{event_id}/acknowledge`. */
export type DeletionAcknowledgementState = Schemas['DeletionAcknowledgementState'];
/** Request body of `POST /sandbox/events` (sandbox only): a synthetic signed event about one of the workspace's listings. */
export type TestEvent = Schemas['TestEvent'];
/** One delivery with its newest attempts (`GET /webhooks/deliveries/{event_id}`, the answer of a test event or a resend). */
export type Delivery = Schemas['Delivery'];
/** Answer of `GET /webhooks/deliveries`. */
export type DeliveryList = Schemas['DeliveryList'];
/** Query of `GET /webhooks/deliveries`. */
export type DeliveryListQuery = NonNullable<paths['/webhooks/deliveries']['get']['parameters']['query']>;
export type EventList = Schemas['EventList'];
export type EndpointCheckRun = Schemas['EndpointCheckRun'];
export type EventListQuery = NonNullable<paths['/events']['get']['parameters']['query']>;
/** One event of the feed: exactly the envelope its delivery carries. */
export type FeedEvent = EventList['items'][number];
/** One recorded request of the request log: metadata only, never a body, a query value, a token or a key. */
export type RecordedRequest = Schemas['RecordedRequest'];
/** Answer of `GET /requests`. */
export type RecordedRequestList = Schemas['RecordedRequestList'];
/** Query of `GET /requests`. */
export type RecordedRequestListQuery = NonNullable<paths['/requests']['get']['parameters']['query']>;
/** Answer of `POST /token`. */
export type Token = Schemas['Token'];
/** `{value, currency}`: `value` is a decimal string. */
export type Money = Schemas['Money'];
/** An RFC 9457 problem document as the API sends it. */
export type Problem = Schemas['Problem'];
/** One entry of a `validation_failed` problem's `errors[]`. */
export type Violation = Schemas['Violation'];

/** Delivery of kind `endpoint.challenge`: answer 2xx with `{"challenge": data.challenge}`. */
export type ChallengeEvent = Schemas['ChallengeEvent'];
/** Delivery of kind `booking.confirmed`. */
export type BookingConfirmedEvent = Schemas['BookingConfirmedEvent'];
/** Delivery of kind `booking.cancelled`. */
export type BookingCancelledEvent = Schemas['BookingCancelledEvent'];
/** Delivery of kind `user.erased`: delete the named records, then acknowledge the `event_id`. */
export type UserErasedEvent = Schemas['UserErasedEvent'];
/** Every signed delivery; narrow on `event_type`. */
export type WebhookEvent = ChallengeEvent | BookingConfirmedEvent | BookingCancelledEvent | UserErasedEvent;
/** The kinds an endpoint can subscribe to. */
export type SubscribableEventType = WebhookEndpoint['events'][number];
