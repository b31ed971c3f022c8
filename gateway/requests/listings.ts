/** What GET /v1/listings/{listing_id}/nights accepts (routes/listings.ts). */
import { Type } from '@sinclair/typebox';
import { ListListingNightsRequestSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import { lengthOf } from '../proto-rules';
import { closed, type Validated } from '../request-schema';

/** The path of a listing's nights: its `listing_id`. */
export const ListingPath = closed({ listing_id: Type.String(lengthOf(ListListingNightsRequestSchema, 'listing_id')) });

/** GET /v1/listings/{listing_id}/nights: the nights [from, to). */
export const ListingNightsQuery = closed({ from: Type.String({ format: 'date' }), to: Type.String({ format: 'date' }) });

export type ListingNightsQueryInput = Validated<typeof ListingNightsQuery>;
