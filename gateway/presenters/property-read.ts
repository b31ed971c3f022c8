/**
 * A property read back: the public JSON of GET /v1/properties/{provider_id} and the
 * items of GET /v1/properties ↔ catalog protobuf (docs/partners/properties.md "Reading
 * a property back"; docs/contract-gaps.md "reading properties back").
 *
 * `property` is the body as last accepted, in the shape PUT takes it (so it can be
 * compared with, or pushed again as, the partner's own copy); beside it the upsert
 * answer's `listing_id`, `publishable`, `missing` and `unknown_amenities`, and each
 * photo's state.
 */
import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { ListPropertiesResponse, PhotoStatus, Property, PropertyRecord } from '../../gen/psync/catalog/v1/catalog_pb';
import type { PropertyInput as PropertyBody } from '../contract/properties';
import { missingReasons, photoRejectionReasons, photoStates, propertyStatuses } from '../public-enums';
import type { PhotoStateJson, StoredPropertyJson, StoredPropertyListJson } from '../contract/properties';

/** A field the catalog always sets; its absence is a fault of ours (a 500, the cause logged). */
function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`catalog property record: ${what} is missing`);
  return value;
}

/** The stored `Property` message in the shape of the PUT body (absent optional fields stay absent). */
export function presentPropertyBody(p: Property): PropertyBody {
  const a = required(p.address, 'property.address');
  const o = required(p.occupancy, 'property.occupancy');
  const body: PropertyBody = {
    name: p.name,
    property_type: p.propertyType,
    address: { line1: a.line1, city: a.city, country: a.country, latitude: a.latitude, longitude: a.longitude },
    occupancy: { max_guests: o.maxGuests, bedrooms: o.bedrooms, beds: o.beds, bathrooms: o.bathrooms },
    amenities: [...p.amenities],
    photos: p.photos.map((ph) => ({ url: ph.url, position: ph.position })),
    check_in_time: p.checkInTime,
    check_out_time: p.checkOutTime,
    status: propertyStatuses.name(p.status),
  };
  if (p.description !== undefined) body.description = p.description;
  if (a.region !== undefined) body.address.region = a.region;
  if (a.postalCode !== undefined) body.address.postal_code = a.postalCode;
  if (p.baseRate) body.base_rate = { value: p.baseRate.value, currency: p.baseRate.currency };
  return body;
}

export function presentPhotoState(ph: PhotoStatus): PhotoStateJson {
  const out: PhotoStateJson = { url: ph.url, position: ph.position, state: photoStates.name(ph.state) };
  if (ph.rejectionReason !== undefined) out.reason = photoRejectionReasons.name(ph.rejectionReason);
  return out;
}

/** The fields GetPropertyResponse and a ListProperties item (PropertyRecord) share. */
type StoredPropertyFields = Omit<PropertyRecord, '$typeName' | '$unknown'>;

/** GetPropertyResponse, or an item of ListProperties, as the public JSON. */
export function presentStoredProperty(res: StoredPropertyFields): StoredPropertyJson {
  return {
    provider_id: res.providerId,
    listing_id: res.listingId === undefined || res.listingId === '' ? null : res.listingId,
    publishable: res.publishable,
    missing: res.missing.map((m) => missingReasons.name(m)),
    unknown_amenities: [...res.unknownAmenities],
    photos: res.photos.map(presentPhotoState),
    updated_at: timestampDate(required(res.updatedAt, 'updated_at')).toISOString(),
    property: presentPropertyBody(required(res.property, 'property')),
  };
}

export function presentPropertyList(res: ListPropertiesResponse): StoredPropertyListJson {
  return { items: res.items.map(presentStoredProperty), has_more: res.hasMore };
}
