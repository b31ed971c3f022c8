/**
 * An UpsertProperty request in the catalog's own, protobuf-free shape. The request's
 * shape rules (lengths, patterns, ranges, the country list) are declared in
 * catalog.proto and enforced before the handler runs (services/kit/rpc/validation.ts), so
 * what reaches it has a property, an address and an occupancy. The one rule checked
 * here is a photo URL's: an absolute URI by the public schema's own function
 * (services/kit/base/absolute-uri.ts), which protovalidate's `string.uri` does not match.
 */
import type { UpsertPropertyRequest } from '../../gen/psync/catalog/v1/catalog_pb';
import { isAbsoluteUri } from '../kit/base';
import { validationFailed } from '../kit/rpc';
import { canonicalUuid } from '../kit/base';
import { propertyStatuses } from './messages';

/** A property as the catalog stores it. */
export interface PropertyInput {
  name: string;
  description: string | null;
  propertyType: string;
  address: {
    line1: string;
    city: string;
    region: string | null;
    postalCode: string | null;
    country: string;
    latitude: number;
    longitude: number;
  };
  occupancy: { maxGuests: number; bedrooms: number; beds: number; bathrooms: number };
  baseRate: { value: string; currency: string } | null;
  /** Slugs as sent (recognition happens later). */
  amenities: string[];
  /** Photos as sent, in payload order. */
  photos: { url: string; position: number }[];
  checkInTime: string;
  checkOutTime: string;
  status: 'listed' | 'unlisted';
}

/**
 * The validated request's workspace (canonical lower case), provider id and property;
 * INVALID_ARGUMENT / VALIDATION_FAILED (`property.photos[i].url`, `format`) for a photo
 * URL that is not an absolute URI, before anything is read or written.
 */
export function propertyInput(req: UpsertPropertyRequest): { workspaceId: string; providerId: string; property: PropertyInput } {
  const p = req.property!;
  const badUrls = p.photos.flatMap((ph, i) => (isAbsoluteUri(ph.url) ? [] : [{ field: `property.photos[${i}].url`, code: 'format' }]));
  if (badUrls.length > 0) throw validationFailed(badUrls, 'photo url: must be an absolute URI');
  const a = p.address!;
  const o = p.occupancy!;
  return {
    workspaceId: canonicalUuid(req.workspaceId),
    providerId: req.providerId,
    property: {
      name: p.name,
      description: p.description ?? null,
      propertyType: p.propertyType,
      address: {
        line1: a.line1,
        city: a.city,
        region: a.region ?? null,
        postalCode: a.postalCode ?? null,
        country: a.country,
        latitude: a.latitude,
        longitude: a.longitude,
      },
      occupancy: { maxGuests: o.maxGuests, bedrooms: o.bedrooms, beds: o.beds, bathrooms: o.bathrooms },
      baseRate: p.baseRate ? { value: p.baseRate.value, currency: p.baseRate.currency } : null,
      amenities: [...p.amenities],
      photos: p.photos.map((ph) => ({ url: ph.url, position: ph.position })),
      checkInTime: p.checkInTime,
      checkOutTime: p.checkOutTime,
      status: propertyStatuses.name(p.status),
    },
  };
}
