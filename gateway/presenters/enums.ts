/**
 * Enum translation between protobuf values and the public strings, derived from the
 * enums' descriptors (services/kit/base/enum-names.ts: PROPERTY_STATUS_LISTED → `listed`).
 * The public JSON Schemas list the same names; a test checks each table against them.
 * A value the public contract has no name for (UNSPECIFIED, or a number unknown to
 * the descriptor) coming back from a service is a fault on our side: it throws, and
 * the error mapper answers 500 with the cause in the log, rather than inventing a
 * public value.
 */
import { BlockReasonSchema, ListingNightStateSchema, type BlockReason, type ListingNightState } from '../../gen/psync/calendar/v1/calendar_pb';
import { CancellationInitiatorSchema, type CancellationInitiator } from '../../gen/psync/calendar/v1/events_pb';
import {
  MissingReasonSchema,
  PhotoRejectionReasonSchema,
  PhotoStateSchema,
  PropertyStatusSchema,
  type MissingReason,
  type PhotoRejectionReason,
  type PhotoState,
  type PropertyStatus,
} from '../../gen/psync/catalog/v1/catalog_pb';
import { UpsertResultSchema, type UpsertResult } from '../../gen/psync/common/v1/upsert_result_pb';
import {
  DeliveryStateSchema,
  EndpointStatusSchema,
  WebhookEventTypeSchema,
  type DeliveryState,
  type EndpointStatus,
  type WebhookEventType,
} from '../../gen/psync/notifications/v1/notifications_pb';
import { dottedKind, EnumNames } from '../../services/kit/base';
import type { BlockReasonName, DeliveryStateName, WebhookEventName } from '../validate';

export type PropertyStatusName = 'listed' | 'unlisted';
export type MissingName = 'price' | 'amenities' | 'cover_photo' | 'photos' | 'photos_processing' | 'unlisted';
export type PhotoRejectionName = 'unreachable' | 'forbidden_url' | 'not_an_image' | 'too_large' | 'too_small';
/** A photo's state read back: the catalog's pending / processed / rejected. */
export type PhotoStateName = 'processing' | 'ready' | 'rejected';
/** A night's public state: a host-cancelled booking's nights (the calendar's WITHDRAWN) read as `booked` with `withdrawn: true` (presenters/nights.ts). */
export type ListingNightStateName = 'free' | 'blocked' | 'booked' | 'held';
export type EndpointStatusName = 'pending_verification' | 'active' | 'suspended';

/** `result` of upserts: created / updated. */
export const upsertResults = new EnumNames<UpsertResult, 'created' | 'updated'>(UpsertResultSchema);

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
export const webhookEvents = new EnumNames<WebhookEventType, WebhookEventName>(WebhookEventTypeSchema, { spell: dottedKind });

/** Webhook endpoint `status`. */
export const endpointStatuses = new EnumNames<EndpointStatus, EndpointStatusName>(EndpointStatusSchema);

/** Delivery `state` (the sandbox delivery log). */
export const deliveryStates = new EnumNames<DeliveryState, DeliveryStateName>(DeliveryStateSchema);

/** `initiated_by` of a cancellation: guest / host. */
export const cancellationInitiators = new EnumNames<CancellationInitiator, 'guest' | 'host'>(CancellationInitiatorSchema);
