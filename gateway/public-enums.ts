/**
 * Enum translation between protobuf values and the public strings, derived from the
 * enums' descriptors (services/kit/base/enum-names.ts: PROPERTY_STATUS_LISTED → `listed`).
 * The public JSON Schemas list the same names; a test checks each table against them.
 * A value the public contract has no name for (UNSPECIFIED, or a number unknown to
 * the descriptor) coming back from a service is a fault on our side: it throws, and
 * the error mapper answers 500 with the cause in the log, rather than inventing a
 * public value.
 */
import {
  BlockReasonSchema,
  ListingNightStateSchema,
  type BlockReason,
  type BlockReasonJson,
  type ListingNightState,
  type ListingNightStateJson,
} from '../gen/psync/calendar/v1/calendar_pb';
import { CancellationInitiatorSchema, type CancellationInitiator, type CancellationInitiatorJson } from '../gen/psync/calendar/v1/events_pb';
import {
  MissingReasonSchema,
  PhotoRejectionReasonSchema,
  PhotoStateSchema,
  PropertyStatusSchema,
  type MissingReason,
  type MissingReasonJson,
  type PhotoRejectionReason,
  type PhotoRejectionReasonJson,
  type PhotoState,
  type PropertyStatus,
  type PropertyStatusJson,
} from '../gen/psync/catalog/v1/catalog_pb';
import { UpsertResultSchema, type UpsertResult, type UpsertResultJson } from '../gen/psync/common/v1/upsert_result_pb';
import {
  DeliveryStateSchema,
  EndpointStatusSchema,
  WebhookEventTypeSchema,
  type DeliveryState,
  type DeliveryStateJson,
  type EndpointStatus,
  type EndpointStatusJson,
  type WebhookEventType,
  type WebhookEventTypeJson,
} from '../gen/psync/notifications/v1/notifications_pb';
import { dottedKind, EnumNames, type DottedEnumName, type EnumName } from '../services/kit/base';

export type PropertyStatusName = EnumName<PropertyStatusJson, 'PROPERTY_STATUS_'>;
export type MissingName = EnumName<MissingReasonJson, 'MISSING_REASON_'>;
export type PhotoRejectionName = EnumName<PhotoRejectionReasonJson, 'PHOTO_REJECTION_REASON_'>;
/** A photo's state read back: the catalog's pending / processed / rejected, spelt for partners (PHOTO_STATE_PUBLIC below). */
export type PhotoStateName = 'processing' | 'ready' | 'rejected';
/** A night's public state: a host-cancelled booking's nights (the calendar's WITHDRAWN) read as `booked` with `withdrawn: true` (presenters/nights.ts). */
export type ListingNightStateName = Exclude<EnumName<ListingNightStateJson, 'LISTING_NIGHT_STATE_'>, 'withdrawn'>;
export type EndpointStatusName = EnumName<EndpointStatusJson, 'ENDPOINT_STATUS_'>;
export type BlockReasonName = EnumName<BlockReasonJson, 'BLOCK_REASON_'>;
export type DeliveryStateName = EnumName<DeliveryStateJson, 'DELIVERY_STATE_'>;
/** Every webhook kind, `endpoint.challenge` included; partners subscribe to those the proto's PutEndpointRequest.events rule lists (routes/webhooks.ts). */
export type WebhookKindName = DottedEnumName<WebhookEventTypeJson, 'WEBHOOK_EVENT_TYPE_'>;
/** The kinds a partner subscribes to and a test event may be. */
export type WebhookEventName = Exclude<WebhookKindName, 'endpoint.challenge'>;

/** `result` of upserts: created / updated. */
export const upsertResults = new EnumNames<UpsertResult, EnumName<UpsertResultJson, 'UPSERT_RESULT_'>>(UpsertResultSchema);

/** Property `status`. */
export const propertyStatuses = new EnumNames<PropertyStatus, PropertyStatusName>(PropertyStatusSchema);

/** Upsert response `missing[]`. */
export const missingReasons = new EnumNames<MissingReason, MissingName>(MissingReasonSchema);

/** `photos_rejected[].reason`. */
export const photoRejectionReasons = new EnumNames<PhotoRejectionReason, PhotoRejectionName>(PhotoRejectionReasonSchema);

/** The public names of the catalog's photo states that differ from their own. */
const PHOTO_STATE_PUBLIC: Readonly<Record<string, PhotoStateName>> = { PENDING: 'processing', PROCESSED: 'ready' };

/** Photo `state` of a property read back (PHOTO_STATE_PENDING → `processing`, PROCESSED → `ready`). */
export const photoStates = new EnumNames<PhotoState, PhotoStateName>(PhotoStateSchema, {
  spell: (name) => PHOTO_STATE_PUBLIC[name] ?? name.toLowerCase(),
});

/** Block `reason`. */
export const blockReasons = new EnumNames<BlockReason, BlockReasonName>(BlockReasonSchema);

/** The calendar's night states (GET /v1/listings/{listing_id}/nights); `withdrawn` is answered as `booked` (presenters/nights.ts). */
export const listingNightStates = new EnumNames<ListingNightState, ListingNightStateName | 'withdrawn'>(ListingNightStateSchema);

/**
 * Webhook event kinds (`booking.confirmed`); the schema lets partners subscribe to
 * all but `endpoint.challenge`, which is sent to every endpoint being verified.
 */
export const webhookEvents = new EnumNames<WebhookEventType, WebhookKindName>(WebhookEventTypeSchema, { spell: dottedKind });

/** Webhook endpoint `status`. */
export const endpointStatuses = new EnumNames<EndpointStatus, EndpointStatusName>(EndpointStatusSchema);

/** Delivery `state` (the sandbox delivery log). */
export const deliveryStates = new EnumNames<DeliveryState, DeliveryStateName>(DeliveryStateSchema);

/** `initiated_by` of a cancellation: guest / host. */
export const cancellationInitiators = new EnumNames<CancellationInitiator, EnumName<CancellationInitiatorJson, 'CANCELLATION_INITIATOR_'>>(CancellationInitiatorSchema);

/** The night states a partner reads (the calendar's `withdrawn` reads as `booked`, presenters/nights.ts). */
export const publicNightStates: ListingNightStateName[] = listingNightStates.names.filter((n): n is ListingNightStateName => n !== 'withdrawn');

/**
 * `value` as one of the public `names` a service's string field may hold; another value
 * is a fault on our side and throws (the error mapper answers 500), as EnumNames does
 * for a protobuf enum.
 */
export function publicName<N extends string>(names: readonly N[], value: string, what: string): N {
  if (!(names as readonly string[]).includes(value)) throw new Error(`${what}: no public name for that value`);
  return value as N;
}
