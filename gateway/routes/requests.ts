/**
 * GET /v1/requests → IdentityService.ListRequests, 200 `{items, next_cursor}`: the
 * caller's workspace's recorded contract requests, newest first, filtered by `status`
 * and problem `code`, `limit` 1 to 200 (default 50), `after` the previous page's
 * opaque `next_cursor` (docs/partners/request-log.md). Like every contract route it
 * is counted, recorded itself, and answered `501 not_enabled` for a production
 * workspace after full validation.
 */
import { contractRoute } from '../contract-route';
import type { Route } from '../contract-router';
import { sameNames } from '../internal-fields';
import { listRequestsRequest, presentRecordedRequestList } from '../presenters/requests';
import { sendJson } from '../respond';
import { validator } from '../validate';
import type { RouteDeps } from './deps';
import { RequestsQuery } from '../contract/requests';
import { noPath } from './shared-parameters';

const requestsQuery = validator(RequestsQuery, 'query');

export function requestLogRoutes(deps: RouteDeps): Route[] {
  return [
    contractRoute(
      {
        method: 'GET',
        path: '/v1/requests',
        params: noPath,
        query: requestsQuery,
        internalFields: sameNames('status', 'code', 'limit', 'after'),
        async call(ctx, { query }, caller) {
          const res = await deps.upstreams.identity.listRequests(listRequestsRequest(caller.workspaceId, query));
          sendJson(ctx, 200, presentRecordedRequestList(res));
        },
      },
      deps.contract,
    ),
  ];
}
