/**
 * POST /v1/deletion-requests/{event_id}/acknowledge →
 * NotificationsService.AcknowledgeDeletion, 200 `{event_id, acknowledged_at}`
 * (spec "POST /deletion-requests/{event_id}/acknowledge"). An empty body is `{}`:
 * `completed_at` defaults to the time of receipt.
 */
import { contractRoute } from '../contract-route';
import { sameNames } from '../internal-fields';
import type { Route } from '../contract-router';
import type { Violation } from '../problems';
import { acknowledgeDeletionRequest, dateTimeMs, presentAcknowledgement } from '../presenters/deletion-requests';
import { sendJson } from '../respond';
import { validator } from '../validate';
import type { RouteDeps } from './deps';
import { AcknowledgeBody, COMPLETED_AT_MAX_AHEAD_MS, DeletionRequestPath } from '../contract/deletion-requests';
import { noQuery } from './shared-parameters';

const acknowledgeBody = validator(AcknowledgeBody);
const deletionRequestPath = validator(DeletionRequestPath, 'path');

/**
 * `completed_at` beyond the schema's `date-time` (which already refuses instants
 * outside 0001–9999): not representable → `format`; more than
 * COMPLETED_AT_MAX_AHEAD_MS in the future → `maximum` (docs/decisions.md).
 */
export function acknowledgeViolations(body: Record<string, unknown>, found: readonly Violation[] = [], now = Date.now()): Violation[] {
  if (typeof body.completed_at !== 'string' || found.some((v) => v.field === 'completed_at')) return [];
  const ms = dateTimeMs(body.completed_at);
  if (Number.isNaN(ms)) return [{ field: 'completed_at', code: 'format' }];
  if (ms > now + COMPLETED_AT_MAX_AHEAD_MS) return [{ field: 'completed_at', code: 'maximum' }];
  return [];
}

export function deletionRequestRoutes(deps: RouteDeps): Route[] {
  return [
    contractRoute(
      {
        method: 'POST',
        path: '/v1/deletion-requests/:event_id/acknowledge',
        params: deletionRequestPath,
        query: noQuery,
        body: { schema: acknowledgeBody, empty: 'empty-object' },
        rules: acknowledgeViolations,
        internalFields: sameNames('event_id', 'completed_at'),
        async call(ctx, { params, body }, caller) {
          const res = await deps.upstreams.notifications.acknowledgeDeletion(acknowledgeDeletionRequest(caller.workspaceId, params.event_id, body));
          sendJson(ctx, 200, presentAcknowledgement(res));
        },
      },
      deps.contract,
    ),
  ];
}
