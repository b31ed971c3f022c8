/**
 * GET /v1/events → NotificationsService.ListEvents, 200 `{items, next_after, has_more,
 * after_expired}`: the workspace's booking.confirmed, booking.cancelled and user.erased
 * events in the order they were recorded, each the envelope its delivery carries,
 * delivered or not (docs/partners/missed-events.md). Paged by position: `after` is a
 * previous page's `next_after`.
 */
import { contractRoute } from '../contract-route';
import { sameNames } from '../internal-fields';
import type { Route } from '../contract-router';
import { listEventsRequest, presentEventList } from '../presenters/events';
import { sendJson } from '../respond';
import { validator } from '../validate';
import type { RouteDeps } from './deps';
import { EventsQuery } from '../contract/events';
import { noPath } from './shared-parameters';

const eventsQuery = validator(EventsQuery, 'query');

export function eventRoutes(deps: RouteDeps): Route[] {
  return [
    contractRoute(
      {
        method: 'GET',
        path: '/v1/events',
        params: noPath,
        query: eventsQuery,
        internalFields: sameNames('after', 'limit'),
        async call(ctx, { query }, caller) {
          const res = await deps.upstreams.notifications.listEvents(listEventsRequest(caller.workspaceId, query));
          sendJson(ctx, 200, presentEventList(res));
        },
      },
      deps.contract,
    ),
  ];
}
