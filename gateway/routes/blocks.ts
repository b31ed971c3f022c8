/**
 * Calendar blocks (spec "PUT /blocks/{external_uid}", "DELETE /blocks/{external_uid}",
 * "GET /blocks"):
 *
 * - PUT → CalendarService.PutBlock, 200 `{result, nights, listing_id}`; a block
 *   addressed by `provider_id` answers 501 in every environment, after validation (the
 *   calendar's decision, its UNIMPLEMENTED mapped to `not_enabled`);
 * - DELETE → CalendarService.DeleteBlock, 204 whether or not the block existed;
 * - GET → CalendarService.ListBlocks, 200 `{items, has_more}`.
 */
import { contractRoute } from '../contract-route';
import { sameNames } from '../internal-fields';
import type { Route } from '../contract-router';
import type { Violation } from '../problems';
import { listBlocksRequest, presentBlockList, presentBlockPut, putBlockRequest } from '../presenters/blocks';
import { sendJson, sendNoContent } from '../respond';
import { validator } from '../validate';
import type { RouteDeps } from './deps';
import { BlockBody, BlockPath, BlocksQuery } from '../contract/blocks';
import { noPath, noQuery } from './shared-parameters';
import { checkRange } from '../../services/domain';

const blockBody = validator(BlockBody);
const blockPath = validator(BlockPath, 'path');
const blocksQuery = validator(BlocksQuery, 'query');

/**
 * The night count, reported on `check_out` (docs/contract-gaps.md): not after
 * `check_in` → `invalid`; more than MAX_NIGHTS (730) nights → `maximum`. Checked whenever both
 * dates are themselves valid, whatever else is wrong with the body.
 */
export function blockRangeViolations(body: Record<string, unknown>, found: readonly Violation[] = []): Violation[] {
  const { check_in: checkIn, check_out: checkOut } = body;
  if (typeof checkIn !== 'string' || typeof checkOut !== 'string') return [];
  if (found.some((v) => v.field === 'check_in' || v.field === 'check_out')) return [];
  // Only the range's own verdict: a date's shape is the schema's to report.
  return checkRange(checkIn, checkOut).problems.filter((p) => p.code === 'invalid' || p.code === 'maximum');
}

export function blockRoutes(deps: RouteDeps): Route[] {
  const calendar = deps.upstreams.calendar;
  return [
    contractRoute(
      {
        method: 'PUT',
        path: '/v1/blocks/:external_uid',
        params: blockPath,
        query: noQuery,
        body: { schema: blockBody, empty: 'required' },
        rules: blockRangeViolations,
        // Addressing by provider_id is published but not enabled (spec "What the service
        // does"): the calendar decides it, after validating (services/calendar/blocks.ts),
        // and its UNIMPLEMENTED is the 501 not_enabled (connect-errors.ts).
        internalFields: { ...sameNames('external_uid', 'listing_id', 'provider_id', 'check_in', 'check_out', 'reason'), target: 'listing_id' },
        async call(ctx, { params, body }, caller) {
          const res = await calendar.putBlock(putBlockRequest(caller.workspaceId, params.external_uid, body));
          sendJson(ctx, 200, presentBlockPut(res));
        },
      },
      deps.contract,
    ),
    contractRoute(
      {
        method: 'DELETE',
        path: '/v1/blocks/:external_uid',
        params: blockPath,
        query: noQuery,
        internalFields: sameNames('external_uid'),
        async call(ctx, { params }, caller) {
          await calendar.deleteBlock({ workspaceId: caller.workspaceId, externalUid: params.external_uid });
          sendNoContent(ctx);
        },
      },
      deps.contract,
    ),
    contractRoute(
      {
        method: 'GET',
        path: '/v1/blocks',
        params: noPath,
        query: blocksQuery,
        internalFields: sameNames('from', 'to', 'page', 'page_size'),
        async call(ctx, { query }, caller) {
          const res = await calendar.listBlocks(listBlocksRequest(caller.workspaceId, query));
          sendJson(ctx, 200, presentBlockList(res));
        },
      },
      deps.contract,
    ),
  ];
}
