/** What GET /v1/events accepts (routes/events.ts). */
import { Type } from '@sinclair/typebox';
import { closed, type Validated } from '../request-schema';
import { Limit } from './paging';

/** GET /v1/events: `after` a previous page's `next_after` (a position: digits), and a limit. */
export const EventsQuery = closed({
  after: Type.Optional(Type.String({ pattern: '^(0|[1-9][0-9]{0,17})$' })),
  limit: Limit,
});

export type EventsQueryInput = Validated<typeof EventsQuery>;
