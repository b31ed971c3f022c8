/**
 * The request log's public JSON (GET /v1/requests, docs/partners/request-log.md) ↔
 * identity protobuf (ListRequests).
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { ListRequestsRequestSchema, ListRequestsResponse, RecordedRequest } from '../../gen/psync/identity/v1/identity_pb';
import { instanceUrn } from '../problems';
import type { RequestsQueryInput as RequestsQuery } from '../contract/requests';
import type { RecordedRequestJson, RecordedRequestListJson } from '../contract/requests';

/** The validated query as a ListRequests request (the default limit already filled by validation). */
export function listRequestsRequest(workspaceId: string, q: RequestsQuery): MessageInitShape<typeof ListRequestsRequestSchema> {
  return { workspaceId, status: q.status, code: q.code, limit: q.limit ?? 50, after: q.after };
}

export function presentRecordedRequest(r: RecordedRequest): RecordedRequestJson {
  if (!r.receivedAt) throw new Error('RecordedRequest.received_at is missing');
  return {
    instance: instanceUrn(r.requestId),
    received_at: timestampDate(r.receivedAt).toISOString(),
    method: r.method,
    route: r.route,
    path_params: { ...r.pathParams },
    status: r.status,
    code: r.code === '' ? null : r.code,
    errors: r.errors.map((e) => ({ field: e.field, code: e.code })),
    duration_ms: r.durationMs,
    key_id: r.keyId === '' ? null : r.keyId,
  };
}

export function presentRecordedRequestList(res: ListRequestsResponse): RecordedRequestListJson {
  return { items: res.requests.map(presentRecordedRequest), next_cursor: res.nextCursor ?? null };
}
