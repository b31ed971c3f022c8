/**
 * Between the catalog's own shapes (rows, public spellings) and the protobuf
 * messages of proto/psync/catalog/v1/catalog.proto.
 */
import { create } from '@bufbuild/protobuf';
import {
  MissingReason as MissingReasonEnum,
  PhotoRejectionReason,
  PhotoState as PhotoStateEnum,
  PhotoStatusSchema,
  PropertySchema,
  PropertyStatus,
  type PhotoStatus,
  type Property,
} from '../../gen/psync/catalog/v1/catalog_pb';
import type { PhotoRow, PropertyRow, RejectionReason } from './property-records';
import type { MissingReason, PhotoState } from './publishability';

const MISSING: Record<MissingReason, MissingReasonEnum> = {
  price: MissingReasonEnum.PRICE,
  amenities: MissingReasonEnum.AMENITIES,
  cover_photo: MissingReasonEnum.COVER_PHOTO,
  photos: MissingReasonEnum.PHOTOS,
  photos_processing: MissingReasonEnum.PHOTOS_PROCESSING,
  unlisted: MissingReasonEnum.UNLISTED,
};

const REJECTION: Record<RejectionReason, PhotoRejectionReason> = {
  unreachable: PhotoRejectionReason.UNREACHABLE,
  forbidden_url: PhotoRejectionReason.FORBIDDEN_URL,
  not_an_image: PhotoRejectionReason.NOT_AN_IMAGE,
  too_large: PhotoRejectionReason.TOO_LARGE,
  too_small: PhotoRejectionReason.TOO_SMALL,
};

const STATE: Record<PhotoState, PhotoStateEnum> = {
  pending: PhotoStateEnum.PENDING,
  processed: PhotoStateEnum.PROCESSED,
  rejected: PhotoStateEnum.REJECTED,
};

export const toMissingReason = (r: MissingReason): MissingReasonEnum => MISSING[r];
export const toRejectionReason = (r: RejectionReason): PhotoRejectionReason => REJECTION[r];
export const toPropertyStatus = (s: 'listed' | 'unlisted'): PropertyStatus => (s === 'listed' ? PropertyStatus.LISTED : PropertyStatus.UNLISTED);

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
    state: STATE[ph.state],
    rejectionReason: ph.rejection_reason ? REJECTION[ph.rejection_reason] : undefined,
    photoId: ph.blob_sha256 ?? undefined,
    width: ph.width ?? undefined,
    height: ph.height ?? undefined,
    contentType: ph.content_type ?? undefined,
  });
}

