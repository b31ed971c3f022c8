/** What the property routes accept (routes/properties.ts). */
import { Type } from '@sinclair/typebox';
import { AddressSchema, OccupancySchema, PhotoSchema, PropertySchema, UpsertPropertyRequestSchema } from '../../gen/psync/catalog/v1/catalog_pb';
import { MoneySchema } from '../../gen/psync/common/v1/money_pb';
import { allowedStringsOf, lengthOf, maxItemsOf, minimumOf, patternOf, rangeOf } from '../proto-rules';
import { propertyStatuses } from '../public-enums';
import { closed, oneOfNames, requestBody, type Validated } from '../request-schema';
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
