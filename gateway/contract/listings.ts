/** What GET /v1/listings/{listing_id}/nights accepts (routes/listings.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { lengthOf } from '../proto-rules';
import { publicNightStates } from '../public-enums';
import { closed, componentRef, oneOfNames, type Validated } from '../contract-schema';
import { ListListingNightsRequestSchema } from '../../gen/psync/calendar/v1/calendar_pb';

/** The path of a listing's nights: its `listing_id`. */
export const ListingPath = closed({ listing_id: Type.String(lengthOf(ListListingNightsRequestSchema, 'listing_id')) });

/** GET /v1/listings/{listing_id}/nights: the nights [from, to). */
export const ListingNightsQuery = closed({ from: Type.String({ format: 'date' }), to: Type.String({ format: 'date' }) });

export type ListingNightsQueryInput = Validated<typeof ListingNightsQuery>;

export const ListingNight = Type.Object(
  {
    date: Type.String({ format: 'date' }),
    state: oneOfNames(publicNightStates, {
      description:
        '`free`: nothing holds it. `blocked`: one of your blocks (`external_uid`). `booked`: a marketplace booking (`booking_reference`); also a booking you cancelled as the host, whose nights stay taken for good (`withdrawn: true`). `held`: a live marketplace hold, not past its expiry (a guest is checking out; it becomes `booked` or `free`).',
    }),
    external_uid: Type.Optional(
      Type.String({ description: "`blocked` only: your block's `external_uid` (when several of your blocks overlap on the night, the first by `external_uid`, byte order)." }),
    ),
    booking_reference: Type.Optional(Type.String({ description: "`booked` only: the booking's reference, as in `booking.confirmed`." })),
    withdrawn: Type.Optional(Type.Literal(true, { description: 'Only on the nights of a booking you cancelled as the host: they stay taken for good. Absent otherwise.' })),
  },
  { description: 'One night of a listing and what holds it; nothing about guests.' },
);
export type ListingNightJson = Static<typeof ListingNight>;

export const ListingNights = Type.Object({ items: Type.Array(componentRef('ListingNight', ListingNight), { description: 'One item per night of [`from`, `to`), ascending.' }) });
export type ListingNightsJson = Static<typeof ListingNights>;
