/**
 * Properties: the public JSON of PUT /v1/properties/{provider_id} ↔ catalog protobuf
 * (spec "Property", "Property upsert response"; docs/contract-gaps.md
 * "photos_rejected entries").
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { UpsertPropertyRequestSchema, UpsertPropertyResponse } from '../../gen/psync/catalog/v1/catalog_pb';
import type { PropertyInput as PropertyBody } from '../contract/properties';
import { missingReasons, photoRejectionReasons, propertyStatuses, upsertResults } from '../public-enums';
import type { PropertyUpsertJson } from '../contract/properties';

export { missingReasons, photoRejectionReasons, propertyStatuses } from '../public-enums';

/** The validated body as an UpsertProperty request (omitted optional fields stay absent: replace, not merge). */
export function upsertPropertyRequest(workspaceId: string, providerId: string, body: PropertyBody): MessageInitShape<typeof UpsertPropertyRequestSchema> {
  const a = body.address;
  return {
    workspaceId,
    providerId,
    property: {
      name: body.name,
      description: body.description,
      propertyType: body.property_type,
      address: {
        line1: a.line1,
        city: a.city,
        region: a.region,
        postalCode: a.postal_code,
        country: a.country,
        latitude: a.latitude,
        longitude: a.longitude,
      },
      occupancy: {
        maxGuests: body.occupancy.max_guests,
        bedrooms: body.occupancy.bedrooms,
        beds: body.occupancy.beds,
        bathrooms: body.occupancy.bathrooms,
      },
      baseRate: body.base_rate ? { value: body.base_rate.value, currency: body.base_rate.currency } : undefined,
      amenities: body.amenities ?? [],
      photos: (body.photos ?? []).map((p) => ({ url: p.url, position: p.position })),
      checkInTime: body.check_in_time,
      checkOutTime: body.check_out_time,
      status: propertyStatuses.value(body.status),
    },
  };
}

/** UpsertPropertyResponse as the public upsert response. */
export function presentPropertyUpsert(res: UpsertPropertyResponse): PropertyUpsertJson {
  return {
    provider_id: res.providerId,
    result: upsertResults.name(res.result),
    listing_id: res.listingId === undefined || res.listingId === '' ? null : res.listingId,
    status: propertyStatuses.name(res.status),
    publishable: res.publishable,
    missing: res.missing.map((m) => missingReasons.name(m)),
    unknown_amenities: [...res.unknownAmenities],
    photos_rejected: res.photosRejected.map((r) => ({ url: r.url, reason: photoRejectionReasons.name(r.reason) })),
  };
}
