/** What the property routes accept (routes/properties.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { allowedStringsOf, lengthOf, maxItemsOf, minimumOf, patternOf, rangeOf } from '../proto-rules';
import { missingReasons, photoRejectionReasons, photoStates, propertyStatuses, upsertResults } from '../public-enums';
import { closed, componentRef, nullable, oneOfNames, requestBody, type Validated } from '../contract-schema';
import { AddressSchema, OccupancySchema, PhotoSchema, PropertySchema, UpsertPropertyRequestSchema } from '../../gen/psync/catalog/v1/catalog_pb';
import { MoneySchema } from '../../gen/psync/common/v1/money_pb';
import { Page, PageSize } from './paging';

/** Local time of day "HH:MM" (the .proto states it as a CEL rule, rules.proto `time_of_day`). */
const TIME_OF_DAY = { description: 'local HH:MM, 24-hour', pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$' };
const COUNTRY = patternOf(AddressSchema, 'country');
/** The largest position a photo may have: the largest int32, the type the catalog stores it as. */
const MAX_POSITION = 2 ** 31 - 1;

/** The body of PUT /v1/properties/{provider_id}. */
export const PropertyBody = requestBody(
  'property',
  'Property',
  'Body of PUT /v1/properties/{provider_id}: the complete property (replace, not merge). Spec "Property"; bounds and required fields from docs/contract-gaps.md; money value and other gateway choices in docs/decisions.md.',
  {
    name: Type.String(lengthOf(PropertySchema, 'name')),
    description: Type.Optional(Type.String(lengthOf(PropertySchema, 'description'))),
    property_type: Type.String({ ...lengthOf(PropertySchema, 'property_type'), pattern: patternOf(PropertySchema, 'property_type') }),
    address: closed({
      line1: Type.String(lengthOf(AddressSchema, 'line1')),
      city: Type.String(lengthOf(AddressSchema, 'city')),
      region: Type.Optional(Type.String(lengthOf(AddressSchema, 'region'))),
      postal_code: Type.Optional(Type.String(lengthOf(AddressSchema, 'postal_code'))),
      country: Type.String({
        description: 'ISO 3166-1 alpha-2, upper case, an officially assigned code (a well-shaped unassigned code is `enum`)',
        pattern: COUNTRY,
        if: { pattern: COUNTRY },
        then: { enum: allowedStringsOf(AddressSchema, 'country') },
      }),
      latitude: Type.Number(rangeOf(AddressSchema, 'latitude')),
      longitude: Type.Number(rangeOf(AddressSchema, 'longitude')),
    }),
    occupancy: closed({
      max_guests: Type.Integer(rangeOf(OccupancySchema, 'max_guests')),
      bedrooms: Type.Integer(rangeOf(OccupancySchema, 'bedrooms')),
      beds: Type.Integer(rangeOf(OccupancySchema, 'beds')),
      bathrooms: Type.Integer(rangeOf(OccupancySchema, 'bathrooms')),
    }),
    base_rate: Type.Optional(
      closed(
        {
          // Stricter than the .proto's Money: not negative, at most 15 integer digits and 10 decimals (docs/decisions.md).
          value: Type.String({ description: 'non-negative decimal: at most 15 integer digits and 10 decimals', pattern: '^[0-9]{1,15}(\\.[0-9]{1,10})?$' }),
          currency: Type.String({ description: 'ISO 4217, upper case', pattern: patternOf(MoneySchema, 'currency') }),
        },
        { description: 'Money: a decimal string value and an ISO 4217 currency code, always together' },
      ),
    ),
    amenities: Type.Optional(
      Type.Array(Type.String({ ...lengthOf(PropertySchema, 'amenities', 'items'), pattern: patternOf(PropertySchema, 'amenities', 'items') }), {
        maxItems: maxItemsOf(PropertySchema, 'amenities'),
      }),
    ),
    photos: Type.Optional(
      Type.Array(
        closed({
          url: Type.String({ format: 'uri', maxLength: lengthOf(PhotoSchema, 'url').maxLength }),
          position: Type.Integer({ minimum: minimumOf(PhotoSchema, 'position'), maximum: MAX_POSITION }),
        }),
        { maxItems: maxItemsOf(PropertySchema, 'photos') },
      ),
    ),
    check_in_time: Type.String(TIME_OF_DAY),
    check_out_time: Type.String(TIME_OF_DAY),
    status: oneOfNames(propertyStatuses.names),
  },
);

/** The path of a property: `provider_id`, the partner's own id. */
export const PropertyPath = closed({ provider_id: Type.String(lengthOf(UpsertPropertyRequestSchema, 'provider_id')) });

/** GET /v1/properties: a page. */
export const PropertiesQuery = closed({ page: Page, page_size: PageSize });

export type PropertyInput = Validated<typeof PropertyBody>;

export type PropertiesQueryInput = Validated<typeof PropertiesQuery>;

export const PhotoState = Type.Object(
  {
    url: PropertyBody.properties.photos.items.properties.url,
    position: PropertyBody.properties.photos.items.properties.position,
    state: oneOfNames(photoStates.names, {
      description: '`processing`: queued or being fetched; `ready`: fetched, decoded and stored, usable; `rejected`: it did not become a photo (see `reason`).',
    }),
    reason: Type.Optional(
      oneOfNames(photoRejectionReasons.names, { description: "Only when `state` is `rejected`: the same coarse reason as the upsert answer's `photos_rejected`." }),
    ),
  },
  { description: 'One photo of a property read back and where it stands in the photo pipeline.' },
);
export type PhotoStateJson = Static<typeof PhotoState>;

export const PropertyUpsert = Type.Object({
  provider_id: PropertyPath.properties.provider_id,
  result: oneOfNames(upsertResults.names),
  listing_id: nullable(Type.String({ description: 'The marketplace listing; `null` until the property can be shown to a guest, never a placeholder.' })),
  status: PropertyBody.properties.status,
  publishable: Type.Boolean({ description: 'Whether the property can be shown to guests as it stands.' }),
  missing: Type.Array(oneOfNames(missingReasons.names), {
    description: 'Why `publishable` is false; empty when true. `photos_processing` clears on its own when photo fetching ends; `unlisted` is reported beside any real deficiency.',
  }),
  unknown_amenities: Type.Array(PropertyBody.properties.amenities.items, { description: 'Amenity slugs not recognised: not linked, and they do not fail the push.' }),
  photos_rejected: Type.Array(Type.Object({ url: PropertyBody.properties.photos.items.properties.url, reason: oneOfNames(photoRejectionReasons.names) }), {
    description: 'One entry per photo URL that did not become a photo.',
  }),
});
export type PropertyUpsertJson = Static<typeof PropertyUpsert>;

export const StoredProperty = Type.Object(
  {
    provider_id: PropertyPath.properties.provider_id,
    listing_id: nullable(Type.String({ description: 'The marketplace listing; `null` until the property can be shown to a guest, never a placeholder.' })),
    publishable: Type.Boolean({ description: 'Whether the property can be shown to guests now (photo processing that ended since the push is taken into account).' }),
    missing: Type.Array(oneOfNames(missingReasons.names), { description: 'Why `publishable` is false; empty when true (as in the upsert answer).' }),
    unknown_amenities: Type.Array(PropertyBody.properties.amenities.items, { description: 'Amenity slugs of the last push that are not recognised.' }),
    photos: Type.Array(componentRef('PhotoState', PhotoState), { description: 'Every photo of the last push, cover first (position, then payload order), with its state.' }),
    updated_at: Type.String({ format: 'date-time', description: 'When the property was last accepted.' }),
    property: Type.Object(PropertyBody.properties, {
      description: 'The body last accepted, as it was sent (the `Property` schema): fields omitted then are absent here.',
      additionalProperties: false,
    }),
  },
  {
    description:
      "A property as the marketplace holds it: the body last accepted by `PUT /properties/{provider_id}`, with the upsert answer's publishability fields as they stand now and each photo's state.",
  },
);
export type StoredPropertyJson = Static<typeof StoredProperty>;

export const StoredPropertyList = Type.Object({
  items: Type.Array(componentRef('StoredProperty', StoredProperty), { description: 'The page, ordered by `provider_id` (byte order); empty past the end.' }),
  has_more: Type.Boolean({ description: 'Whether another page follows. There is no total.' }),
});
export type StoredPropertyListJson = Static<typeof StoredPropertyList>;
