/**
 * POST /v1/deletion-requests/{event_id}/acknowledge →
 * NotificationsService.AcknowledgeDeletion, 200 `{event_id, acknowledged_at}`
 * (spec "POST /deletion-requests/{event_id}/acknowledge"). An empty body is `{}`:
 * `completed_at` defaults to the time of receipt.
 */
import { contractRoute } from '../contract-route';
import type { Route } from '../contract-router';
import type { Violation } from '../problems';
import { acknowledgeDeletionRequest, dateTimeMs, presentAcknowledgement } from '../presenters/deletion-requests';
import { sendJson } from '../respond';
import { schemas } from '../validate';
import type { RouteDeps } from './deps';

/** A `completed_at` that is valid RFC 3339 but not a representable instant is a `format` violation. */
export function acknowledgeViolations(body: Record<string, unknown>, found: readonly Violation[] = []): Violation[] {
  if (typeof body.completed_at !== 'string' || found.some((v) => v.field === 'completed_at')) return [];
  if (Number.isNaN(dateTimeMs(body.completed_at))) {
    return [{ field: 'completed_at', code: 'format' }];
  }
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
        async call(ctx, { params, body }, caller) {
          const res = await deps.upstreams.notifications.acknowledgeDeletion(
            acknowledgeDeletionRequest(caller.workspaceId, params.event_id, body),
          );
          sendJson(ctx, 200, presentAcknowledgement(res));
        },
      },
      deps.contract,
    ),
  ];
}
