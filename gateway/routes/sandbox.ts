/**
 * The partners' sandbox tools (docs/partners/sandbox.md), additive to the contract and,
 * like every contract route, answered `501 not_enabled` for a production workspace after
 * full validation, counted toward the key's rate limit, and scoped to the token's
 * workspace (another workspace's listing or delivery is a 404, as an unknown one):
 *
 * - POST /v1/sandbox/events → NotificationsService.TriggerTestEvent, 202 with the
 *   queued delivery: a signed test delivery of a synthetic event about one of the
 *   workspace's listings;
 * - GET /v1/webhooks/deliveries → ListDeliveryLog, 200 `{items, has_more}`: the
 *   workspace's deliveries, newest first, with their attempts;
 * - GET /v1/webhooks/deliveries/{event_id} → GetDelivery, 200 with one delivery;
 * - POST /v1/webhooks/deliveries/{event_id}/resend → ResendDelivery, 202 with the
 *   delivery queued again (it takes no body; one sent is not read);
 * - POST /v1/sandbox/endpoint-checks → StartEndpointCheck, 202 with the receiver check
 *   run, `running`, and its Location (no body read);
 * - GET /v1/sandbox/endpoint-checks/{id} → GetEndpointCheck, 200 with the run.
 */
import { resolveTestStay } from '../../services/domain';
import { contractRoute } from '../contract-route';
import { sameNames } from '../internal-fields';
import type { Route } from '../contract-router';
import type { Violation } from '../problems';
import { listDeliveryLogRequest, presentDelivery, presentDeliveryList, triggerTestEventRequest } from '../presenters/deliveries';
import { presentEndpointCheckRun } from '../presenters/endpoint-checks';
import { sendJson } from '../respond';
import { validator } from '../validate';
import type { RouteDeps } from './deps';
import { DeliveriesQuery, DeliveryPath, EndpointCheckPath, TestEventBody } from '../contract/sandbox';
import { noPath, noQuery } from './shared-parameters';

const testEventBody = validator(TestEventBody);
const deliveriesQuery = validator(DeliveriesQuery, 'query');
const deliveryPath = validator(DeliveryPath, 'path');
const endpointCheckPath = validator(EndpointCheckPath, 'path');

/** The fields only one kind takes: the stay is a booking's, the initiator a cancellation's. */
const ONLY_FOR: Record<string, string> = { check_in: 'booking.confirmed', check_out: 'booking.confirmed', initiated_by: 'booking.cancelled' };

/**
 * Across fields, as the service checks them (test-events.ts): a field given for another
 * kind → `invalid` (once the kind itself is valid); a test booking's stay by the rules
 * of services/domain/test-stay.ts, whenever the schema found nothing wrong with either date.
 */
export function testEventViolations(body: Record<string, unknown>, found: readonly Violation[] = [], now = new Date()): Violation[] {
  if (typeof body.event_type !== 'string' || found.some((v) => v.field === 'event_type')) return [];
  const misplaced: Violation[] = Object.entries(ONLY_FOR)
    .filter(([field, kind]) => body[field] !== undefined && body.event_type !== kind && !found.some((v) => v.field === field))
    .map(([field]) => ({ field, code: 'invalid' }));
  if (body.event_type !== 'booking.confirmed') return misplaced;
  const { check_in: checkIn, check_out: checkOut } = body;
  if ((checkIn !== undefined && typeof checkIn !== 'string') || (checkOut !== undefined && typeof checkOut !== 'string')) return [];
  if (found.some((v) => v.field === 'check_in' || v.field === 'check_out')) return [];
  const stay = resolveTestStay(checkIn, checkOut, now);
  return Array.isArray(stay) ? stay : [];
}

export function sandboxRoutes(deps: RouteDeps): Route[] {
  const notifications = deps.upstreams.notifications;
  return [
    contractRoute(
      {
        method: 'POST',
        path: '/v1/sandbox/events',
        params: noPath,
        query: noQuery,
        body: { schema: testEventBody, empty: 'required' },
        rules: testEventViolations,
        internalFields: sameNames('listing_id', 'event_type', 'booking_reference', 'check_in', 'check_out', 'initiated_by'),
        async call(ctx, { body }, caller) {
          const res = await notifications.triggerTestEvent(triggerTestEventRequest(caller.workspaceId, body));
          sendJson(ctx, 202, presentDelivery(res.delivery));
        },
      },
      deps.contract,
    ),
    contractRoute(
      {
        method: 'GET',
        path: '/v1/webhooks/deliveries',
        params: noPath,
        query: deliveriesQuery,
        internalFields: sameNames('page', 'page_size', 'state', 'event_type'),
        async call(ctx, { query }, caller) {
          const res = await notifications.listDeliveryLog(listDeliveryLogRequest(caller.workspaceId, query));
          sendJson(ctx, 200, presentDeliveryList(res));
        },
      },
      deps.contract,
    ),
    contractRoute(
      {
        method: 'GET',
        path: '/v1/webhooks/deliveries/:event_id',
        params: deliveryPath,
        query: noQuery,
        internalFields: sameNames('event_id'),
        async call(ctx, { params }, caller) {
          const res = await notifications.getDelivery({ workspaceId: caller.workspaceId, eventId: params.event_id.toLowerCase() });
          sendJson(ctx, 200, presentDelivery(res.delivery));
        },
      },
      deps.contract,
    ),
    contractRoute(
      {
        method: 'POST',
        path: '/v1/webhooks/deliveries/:event_id/resend',
        params: deliveryPath,
        query: noQuery,
        internalFields: sameNames('event_id'),
        async call(ctx, { params }, caller) {
          const res = await notifications.resendDelivery({ workspaceId: caller.workspaceId, eventId: params.event_id.toLowerCase() });
          sendJson(ctx, 202, presentDelivery(res.delivery));
        },
      },
      deps.contract,
    ),
    contractRoute(
      {
        method: 'POST',
        path: '/v1/sandbox/endpoint-checks',
        params: noPath,
        query: noQuery,
        internalFields: sameNames(),
        async call(ctx, _input, caller) {
          const res = await notifications.startEndpointCheck({ workspaceId: caller.workspaceId });
          const run = presentEndpointCheckRun(res.run);
          ctx.set('Location', `/v1/sandbox/endpoint-checks/${run.id}`);
          sendJson(ctx, 202, run);
        },
      },
      deps.contract,
    ),
    contractRoute(
      {
        method: 'GET',
        path: '/v1/sandbox/endpoint-checks/:id',
        params: endpointCheckPath,
        query: noQuery,
        internalFields: sameNames('id'),
        async call(ctx, { params }, caller) {
          const res = await notifications.getEndpointCheck({ workspaceId: caller.workspaceId, id: params.id.toLowerCase() });
          sendJson(ctx, 200, presentEndpointCheckRun(res.run));
        },
      },
      deps.contract,
    ),
  ];
}
