/**
 * The events feed (GET /v1/events, docs/partners/missed-events.md): public query ↔
 * notifications ListEvents. Each item is the envelope exactly as its delivery carries
 * it: the stored JSON text is parsed and answered as it is.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { ListEventsRequestSchema, ListEventsResponse } from '../../gen/psync/notifications/v1/notifications_pb';
import type { Json } from '../json';
import type { EventsQueryInput as EventsQuery } from '../contract/events';
import type { EventListJson } from '../contract/events';

export function listEventsRequest(workspaceId: string, query: EventsQuery): MessageInitShape<typeof ListEventsRequestSchema> {
  return { workspaceId, ...(query.after === undefined ? {} : { after: BigInt(query.after) }), limit: query.limit };
}

export function presentEventList(res: ListEventsResponse): EventListJson {
  return {
    items: res.events.map((e) => JSON.parse(e.envelope) as Json),
    next_after: res.nextAfter === undefined ? null : res.nextAfter.toString(),
    has_more: res.hasMore,
    after_expired: res.afterExpired,
  };
}
