/**
 * The events feed (GET /v1/events, docs/partners/missed-events.md): public query ↔
 * notifications ListEvents. Each item is the envelope exactly as its delivery carries
 * it: the stored JSON text is parsed and answered as it is.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { ListEventsRequestSchema, ListEventsResponse } from '../../gen/psync/notifications/v1/notifications_pb';
import type { Json } from '../json';
import type { EventsQueryInput as EventsQuery } from '../requests/events';

/** One page of the feed. */
export interface EventListJson {
  items: Json[];
  /** Pass as `after` to read on; null while the feed had nothing to answer yet. */
  next_after: string | null;
  has_more: boolean;
  /** True when `after` was older than the oldest event kept: events after it were pruned. */
  after_expired: boolean;
}

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
