import { timestampMs } from '@bufbuild/protobuf/wkt';
import type { GatewayContext, GatewayState } from './request-context';
import { requestRecord, routeTemplate } from './request-log';

function ctxWith(state: Partial<GatewayState>, method = 'PUT', status = 400): GatewayContext {
  return { method, status, state: { requestId: '6f1c1f7e-3f0a-4e0b-9d53-2a8e5c1b7a10', startedAt: 100, ...state } } as unknown as GatewayContext;
}

test('routeTemplate: the router label as an OpenAPI path', () => {
  expect(routeTemplate('PUT /v1/blocks/:external_uid')).toBe('/v1/blocks/{external_uid}');
  expect(routeTemplate('POST /v1/webhooks/deliveries/:event_id/resend')).toBe('/v1/webhooks/deliveries/{event_id}/resend');
  expect(routeTemplate('GET /v1/requests')).toBe('/v1/requests');
});

test('a contract request with a workspace is recorded with metadata only: route, path ids, status, code, errors[] pairs', () => {
  const ctx = ctxWith({
    route: 'PUT /v1/blocks/:external_uid',
    workspaceId: '0b6f0f57-8f53-4c1c-8a3f-0c0a3f3e0a11',
    keyId: 'abcdefghijklmnop',
    receivedAt: Date.parse('2026-11-29T00:00:00.123Z'),
    pathParams: { external_uid: 'b-1' },
    problem: { code: 'validation_failed', errors: [{ field: 'check_in', code: 'format' }] },
  });
  const rec = requestRecord(ctx, 142.4)!;
  expect({ ...rec, receivedAt: timestampMs(rec.receivedAt as never) }).toEqual({
    requestId: '6f1c1f7e-3f0a-4e0b-9d53-2a8e5c1b7a10',
    workspaceId: '0b6f0f57-8f53-4c1c-8a3f-0c0a3f3e0a11',
    keyId: 'abcdefghijklmnop',
    receivedAt: Date.parse('2026-11-29T00:00:00.123Z'),
    method: 'PUT',
    route: '/v1/blocks/{external_uid}',
    pathParams: { external_uid: 'b-1' },
    status: 400,
    code: 'validation_failed',
    errors: [{ field: 'check_in', code: 'format' }],
    durationMs: 42,
  });
});

test('not recorded: no workspace (a 401, the token endpoint), or no route of this method (404/405)', () => {
  expect(requestRecord(ctxWith({ route: 'GET /v1/requests' }))).toBeUndefined();
  expect(requestRecord(ctxWith({ workspaceId: '0b6f0f57-8f53-4c1c-8a3f-0c0a3f3e0a11' }))).toBeUndefined();
  expect(requestRecord(ctxWith({ workspaceId: '0b6f0f57-8f53-4c1c-8a3f-0c0a3f3e0a11', route: '* /v1/requests' }))).toBeUndefined();
});
