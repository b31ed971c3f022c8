/**
 * Between the catalog's own shapes (rows, public spellings) and the protobuf
 * messages of proto/psync/catalog/v1/catalog.proto.
 */
import { create } from '@bufbuild/protobuf';
import { timestampFromDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import {
  MissingReasonSchema,
  PhotoRejectionReasonSchema,
  PhotoStateSchema,
  PhotoStatusSchema,
  PropertySchema,
  PropertyStatusSchema,
  type MissingReason as MissingReasonEnum,
  type PhotoRejectionReason,
  type PhotoState as PhotoStateEnum,
  type PhotoStatus,
  type Property,
  type PropertyStatus,
} from '../../gen/psync/catalog/v1/catalog_pb';
import { EnumNames } from '../kit/base';
import type { PhotoRow, PropertyRow, RejectionReason } from './property-records';
import type { MissingReason, PhotoState } from './publishability';

/** The catalog's spellings (database columns) ↔ the protobuf enums, from their descriptors. */
const missingReasons = new EnumNames<MissingReasonEnum, MissingReason>(MissingReasonSchema);
const rejectionReasons = new EnumNames<PhotoRejectionReason, RejectionReason>(PhotoRejectionReasonSchema);
const photoStates = new EnumNames<PhotoStateEnum, PhotoState>(PhotoStateSchema);
export const propertyStatuses = new EnumNames<PropertyStatus, 'listed' | 'unlisted'>(PropertyStatusSchema);

export const toMissingReason = (r: MissingReason): MissingReasonEnum => missingReasons.value(r);
export const toRejectionReason = (r: RejectionReason): PhotoRejectionReason => rejectionReasons.value(r);
export const toPropertyStatus = (s: 'listed' | 'unlisted'): PropertyStatus => propertyStatuses.value(s);

/** The stored property as the `Property` message the partner pushed. */
export function propertyMessage(p: PropertyRow, photos: readonly PhotoRow[]): Property {
  return create(PropertySchema, {
    name: p.name,
    description: p.description ?? undefined,
    propertyType: p.property_type,
    address: {
      line1: p.address_line1,
      city: p.address_city,
      region: p.address_region ?? undefined,
      postalCode: p.address_postal_code ?? undefined,
      country: p.address_country,
      latitude: p.latitude,
      longitude: p.longitude,
    },
    occupancy: { maxGuests: p.max_guests, bedrooms: p.bedrooms, beds: p.beds, bathrooms: p.bathrooms },
    baseRate: p.base_rate_value !== null ? { value: p.base_rate_value, currency: p.base_rate_currency ?? '' } : undefined,
    // Stored amenities are the recognised ones followed by the unknown ones, each in payload order.
    amenities: [...p.amenities, ...p.unknown_amenities],
    photos: [...photos].sort((a, b) => a.ordinal - b.ordinal).map((ph) => ({ url: ph.url, position: ph.position })),
    checkInTime: p.check_in_time,
    checkOutTime: p.check_out_time,
    status: toPropertyStatus(p.status),
  });
}

/** Per-photo processing status, in photo order. */
export function photoStatusMessage(ph: PhotoRow): PhotoStatus {
  return create(PhotoStatusSchema, {
    url: ph.url,
    position: ph.position,
    state: photoStates.value(ph.state),
    rejectionReason: ph.rejection_reason ? rejectionReasons.value(ph.rejection_reason) : undefined,
    photoId: ph.blob_sha256 ?? undefined,
    width: ph.width ?? undefined,
    height: ph.height ?? undefined,
    contentType: ph.content_type ?? undefined,
  });
}

/** The fields of a PropertyRecord, which GetPropertyResponse has too. */
export interface PropertyRecordFields {
  providerId: string;
  property: Property;
  listingId?: string;
  publishable: boolean;
  missing: MissingReasonEnum[];
  unknownAmenities: string[];
  photos: PhotoStatus[];
  updatedAt: Timestamp;
}

/** A stored property with its current state (GetProperty's fields, ListProperties' items). */
export function propertyRecord(p: PropertyRow, photos: readonly PhotoRow[]): PropertyRecordFields {
  return {
    providerId: p.provider_id,
    property: propertyMessage(p, photos),
    listingId: p.listing_id ?? undefined,
    publishable: p.publishable,
    missing: p.missing.map(toMissingReason),
    unknownAmenities: p.unknown_amenities,
    photos: photos.map(photoStatusMessage),
    updatedAt: timestampFromDate(p.pushed_at),
  };
}
