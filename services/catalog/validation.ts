/**
 * Validation of an UpsertProperty request against the public contract (spec
 * "Property"; bounds from operator-interface.md "Decisions on the spec's gaps").
 *
 * The gateway validates the JSON body first (unknown fields, JSON types); this is the
 * catalog's own check of every value, so an internal caller cannot store what the
 * contract forbids, and violations come back as INVALID_ARGUMENT with the public
 * `{field, code}` vocabulary (field = dotted path with indices). proto3 cannot tell an
 * absent string from an empty one, so an empty required string is `required`.
 */
import type { UpsertPropertyRequest } from '../../gen/psync/catalog/v1/catalog_pb';
import { PropertyStatus } from '../../gen/psync/catalog/v1/catalog_pb';
import { validationFailed, type Violation } from '../kit/errors';
import { isUuid } from './errors';

/** A property after validation: the catalog's own, protobuf-free shape. */
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

/** Limits of the contract, in one place (docs/catalog.md repeats them). */
export const LIMITS = {
  providerId: 128,
  name: 120,
  description: 4000,
  propertyType: 60,
  addressText: 200,
  postalCode: 20,
  amenities: 60,
  amenitySlug: 100,
  photos: 30,
  photoUrl: 2048,
  occupancy: 100,
} as const;

const SLUG = /^[a-z0-9][a-z0-9_-]*$/;
const TIME = /^([01]\d|2[0-3]):[0-5]\d$/;
const DECIMAL = /^\d{1,15}(\.\d{1,10})?$/;
const CURRENCY = /^[A-Z]{3}$/;

/** ISO 3166-1 alpha-2 officially assigned codes. */
const COUNTRIES = new Set(
  (
    'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ ' +
    'CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR ' +
    'GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO ' +
    'JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR ' +
    'MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO ' +
    'RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV ' +
    'TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW'
  ).split(' '),
);

/** Length in characters as JSON Schema counts them (code points). */
const chars = (s: string) => [...s].length;

/** Collects violations in the order found. */
class Checker {
  readonly violations: Violation[] = [];

  add(field: string, code: string): void {
    this.violations.push({ field, code });
  }

  /** A required string: non-empty, at most `max` characters, optional pattern. */
  text(field: string, value: string, max: number, pattern?: RegExp): void {
    if (value === '') return this.add(field, 'required');
    if (chars(value) > max) return this.add(field, 'max_length');
    if (pattern && !pattern.test(value)) this.add(field, 'pattern');
  }

  /** An optional string: when present, 1 to `max` characters. */
  optionalText(field: string, value: string | undefined, max: number): void {
    if (value === undefined) return;
    if (value === '') return this.add(field, 'min_length');
    if (chars(value) > max) this.add(field, 'max_length');
  }

  number(field: string, value: number, min: number, max: number, integer = false): void {
    if (!Number.isFinite(value) || (integer && !Number.isInteger(value))) return this.add(field, 'type');
    if (value < min) return this.add(field, 'minimum');
    if (value > max) this.add(field, 'maximum');
  }
}

/**
 * Validates the whole request and returns the property in the catalog's shape, or
 * throws INVALID_ARGUMENT listing every violation.
 */
export function validateUpsert(req: UpsertPropertyRequest): { workspaceId: string; providerId: string; property: PropertyInput } {
  const c = new Checker();
  if (!isUuid(req.workspaceId)) c.add('workspace_id', req.workspaceId === '' ? 'required' : 'format');
  if (req.providerId === '') c.add('provider_id', 'min_length');
  else if (chars(req.providerId) > LIMITS.providerId) c.add('provider_id', 'max_length');

  const p = req.property;
  if (!p) {
    c.add('body', 'required');
    throw validationFailed(c.violations);
  }
  c.text('name', p.name, LIMITS.name);
  if (p.description !== undefined && chars(p.description) > LIMITS.description) c.add('description', 'max_length');
  c.text('property_type', p.propertyType, LIMITS.propertyType, SLUG);

  const a = p.address;
  if (!a) c.add('address', 'required');
  else {
    c.text('address.line1', a.line1, LIMITS.addressText);
    c.text('address.city', a.city, LIMITS.addressText);
    c.optionalText('address.region', a.region, LIMITS.addressText);
    c.optionalText('address.postal_code', a.postalCode, LIMITS.postalCode);
    if (a.country === '') c.add('address.country', 'required');
    else if (!/^[A-Z]{2}$/.test(a.country)) c.add('address.country', 'pattern');
    else if (!COUNTRIES.has(a.country)) c.add('address.country', 'enum');
    c.number('address.latitude', a.latitude, -90, 90);
    c.number('address.longitude', a.longitude, -180, 180);
  }

  const o = p.occupancy;
  if (!o) c.add('occupancy', 'required');
  else {
    c.number('occupancy.max_guests', o.maxGuests, 1, LIMITS.occupancy, true);
    c.number('occupancy.bedrooms', o.bedrooms, 0, LIMITS.occupancy, true);
    c.number('occupancy.beds', o.beds, 0, LIMITS.occupancy, true);
    c.number('occupancy.bathrooms', o.bathrooms, 0, LIMITS.occupancy, true);
  }

  if (p.baseRate) {
    if (p.baseRate.value === '') c.add('base_rate.value', 'required');
    else if (!DECIMAL.test(p.baseRate.value)) c.add('base_rate.value', 'pattern');
    if (p.baseRate.currency === '') c.add('base_rate.currency', 'required');
    else if (!CURRENCY.test(p.baseRate.currency)) c.add('base_rate.currency', 'pattern');
  }

  if (p.amenities.length > LIMITS.amenities) c.add('amenities', 'max_items');
  p.amenities.forEach((slug, i) => c.text(`amenities[${i}]`, slug, LIMITS.amenitySlug, SLUG));

  if (p.photos.length > LIMITS.photos) c.add('photos', 'max_items');
  p.photos.forEach((photo, i) => {
    if (photo.url === '') c.add(`photos[${i}].url`, 'required');
    else if (photo.url.length > LIMITS.photoUrl) c.add(`photos[${i}].url`, 'max_length');
    else if (!isAbsoluteUri(photo.url)) c.add(`photos[${i}].url`, 'format');
    c.number(`photos[${i}].position`, photo.position, 0, 2 ** 31 - 1, true);
  });

  c.text('check_in_time', p.checkInTime, 5, TIME);
  c.text('check_out_time', p.checkOutTime, 5, TIME);
  if (p.status !== PropertyStatus.LISTED && p.status !== PropertyStatus.UNLISTED) {
    c.add('status', p.status === PropertyStatus.UNSPECIFIED ? 'required' : 'enum');
  }

  if (c.violations.length > 0) throw validationFailed(c.violations);
  return {
    workspaceId: req.workspaceId.toLowerCase(),
    providerId: req.providerId,
    property: {
      name: p.name,
      description: p.description ?? null,
      propertyType: p.propertyType,
      address: {
        line1: a!.line1,
        city: a!.city,
        region: a!.region ?? null,
        postalCode: a!.postalCode ?? null,
        country: a!.country,
        latitude: a!.latitude,
        longitude: a!.longitude,
      },
      occupancy: { maxGuests: o!.maxGuests, bedrooms: o!.bedrooms, beds: o!.beds, bathrooms: o!.bathrooms },
      baseRate: p.baseRate ? { value: p.baseRate.value, currency: p.baseRate.currency } : null,
      amenities: [...p.amenities],
      photos: p.photos.map((ph) => ({ url: ph.url, position: ph.position })),
      checkInTime: p.checkInTime,
      checkOutTime: p.checkOutTime,
      status: p.status === PropertyStatus.LISTED ? 'listed' : 'unlisted',
    },
  };
}

/** An absolute URI (RFC 3986 `scheme:...`) that URL parsing accepts; the scheme rules come later (forbidden_url). */
function isAbsoluteUri(s: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(s) || /\s/.test(s)) return false;
  try {
    new URL(s);
    return true;
  } catch {
    return false;
  }
}
