/**
 * GET /v1/listings/{listing_id}/nights?from&to → CalendarService.ListListingNights, 200
 * `{items: [{date, state, external_uid?, booking_reference?}]}`: one item per night of
 * [from, to) (docs/partners/calendar.md). The listing must be the caller's: unknown and
 * another workspace's are the same 404 property_not_found (the calendar asks the catalog).
 */
import { MAX_NIGHTS_READ } from '../../services/kit/base';
import { checkRange } from '../../services/domain';
import { contractRoute } from '../contract-route';
import type { Route } from '../contract-router';
import { sameNames } from '../internal-fields';
import type { Violation } from '../problems';
import { presentListingNights } from '../presenters/nights';
import { sendJson } from '../respond';
import { validator } from '../validate';
import type { RouteDeps } from './deps';
import { ListingNightsQuery, ListingPath } from '../contract/listings';

const listingPath = validator(ListingPath, 'path');
const listingNightsQuery = validator(ListingNightsQuery, 'query');

/**
 * The range, reported on `to` as a block's on `check_out` (docs/contract-gaps.md "reading a
 * listing's nights"): not after `from` → `invalid`; more than MAX_NIGHTS_READ (366) nights →
 * `maximum`. Checked when both dates are themselves valid.
 */
export function nightRangeViolations(query: Record<string, unknown>, found: readonly Violation[] = []): Violation[] {
  const { from, to } = query;
  if (typeof from !== 'string' || typeof to !== 'string') return [];
  if (found.some((v) => v.field === 'from' || v.field === 'to')) return [];
  return checkRange(from, to, MAX_NIGHTS_READ)
    .problems.filter((p) => p.code === 'invalid' || p.code === 'maximum')
    .map((p) => ({ field: 'to', code: p.code }));
}

export function listingRoutes(deps: RouteDeps): Route[] {
  return [
    contractRoute(
      {
        method: 'GET',
        path: '/v1/listings/:listing_id/nights',
        params: listingPath,
        query: listingNightsQuery,
        queryRules: nightRangeViolations,
        internalFields: sameNames('listing_id', 'from', 'to'),
        async call(ctx, { params, query }, caller) {
          const res = await deps.upstreams.calendar.listListingNights({ workspaceId: caller.workspaceId, listingId: params.listing_id, from: query.from, to: query.to });
          sendJson(ctx, 200, presentListingNights(res));
        },
      },
      deps.contract,
    ),
  ];
}
