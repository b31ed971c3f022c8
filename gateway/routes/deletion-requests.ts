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
import { schemas } from '../validate';
import type { RouteDeps } from './deps';

/**
 * How far ahead of the gateway's clock `completed_at` may be (clock skew); the
 * notifications service applies the same bound (COMPLETED_AT_MAX_AHEAD_MS; a test pins
 * both). Deletion cannot have been completed after it is acknowledged.
 */
export const COMPLETED_AT_MAX_AHEAD_MS = 5 * 60_000;

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
        params: schemas.deletionRequestPath,
        query: schemas.noParameters,
        body: { schema: schemas.acknowledge, empty: 'empty-object' },
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
