/** What GET /v1/events accepts (routes/events.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { PAGE_SIZE_MAX } from '../../services/kit/base';
import { type Json } from '../json';
import { closed, nullable, type Validated } from '../contract-schema';
import { Limit } from './paging';

/** GET /v1/events: `after` a previous page's `next_after` (a position: digits), and a limit. */
export const EventsQuery = closed({
  after: Type.Optional(Type.String({ pattern: '^(0|[1-9][0-9]{0,17})$' })),
  limit: Limit,
});

export type EventsQueryInput = Validated<typeof EventsQuery>;

export const EventList = Type.Object(
  {
    items: Type.Array(
      Type.Unsafe<Json>({
        oneOf: [{ $ref: '#/components/schemas/BookingConfirmedEvent' }, { $ref: '#/components/schemas/BookingCancelledEvent' }, { $ref: '#/components/schemas/UserErasedEvent' }],
        discriminator: {
          propertyName: 'event_type',
          mapping: {
            'booking.confirmed': '#/components/schemas/BookingConfirmedEvent',
            'booking.cancelled': '#/components/schemas/BookingCancelledEvent',
            'user.erased': '#/components/schemas/UserErasedEvent',
          },
        },
      }),
      { maxItems: PAGE_SIZE_MAX, description: 'Each exactly the envelope its delivery carries.' },
    ),
    next_after: nullable(
      Type.String({
        pattern: '^(0|[1-9][0-9]{0,17})$',
        description:
          "Pass as `after` to read on (the last item's position, or the request's `after` when nothing followed it); `null` only while the workspace had no event yet and no `after` was given.",
      }),
    ),
    has_more: Type.Boolean({ description: 'Whether more events follow now.' }),
    after_expired: Type.Boolean({ description: '`true` when `after` was older than the oldest event kept: events after it were pruned by the retention before they were read.' }),
  },
  { description: "One page of the workspace's events feed, oldest first." },
);
export type EventListJson = Static<typeof EventList>;
