/**
 * IdentityService's request-log RPCs (RecordRequests, ListRequests, GetRequest): the
 * messages ↔ rows of request-log.ts. Thin, like service.ts, which spreads them in.
 * RecordRequests stores what it can of a batch and counts the rest in `refused`
 * (request-log-intake.ts), with one sampled warning naming the broken rules.
 */
import { Code, type ServiceImpl } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { Timestamp } from '@bufbuild/protobuf/wkt';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import type { IdentityService, RecordedRequest, RecordedRequestSchema } from '../../gen/psync/identity/v1/identity_pb';
import type { Sql } from '../kit/db';
import { failure } from '../kit/rpc';
import { LogSampler } from '../kit/base';
import { logEvent, type Logger } from '../kit/base';
import { canonicalUuid } from '../kit/base';
import { type RefusedRecord, takeIn } from './request-log-intake';
import { decodeCursor, DEFAULT_PAGE_SIZE, encodeCursor, type RequestRecord, type RequestRow, selectRequest, selectRequests } from './request-log';

type RequestLogRpcs = Pick<ServiceImpl<typeof IdentityService>, 'recordRequests' | 'listRequests' | 'getRequest'>;

function micros(ts: Timestamp | undefined): bigint {
  // received_at is required by identity.proto's rules.
  return ts ? ts.seconds * 1_000_000n + BigInt(Math.floor(ts.nanos / 1000)) : 0n;
}

function record(r: RecordedRequest): RequestRecord {
  return {
    requestId: canonicalUuid(r.requestId),
    workspaceId: canonicalUuid(r.workspaceId),
    keyId: r.keyId,
    receivedAtMicros: micros(r.receivedAt),
    method: r.method,
    route: r.route,
    pathParams: { ...r.pathParams },
    status: r.status,
    code: r.code === '' ? undefined : r.code,
    errors: r.errors.map((e) => ({ field: e.field, code: e.code })),
    durationMs: r.durationMs,
  };
}

/** A row as the message; the time keeps its microseconds. */
export function recordedRequestMessage(row: RequestRow): MessageInitShape<typeof RecordedRequestSchema> {
  const us = BigInt(row.received_us);
  const seconds = us / 1_000_000n - (us % 1_000_000n < 0n ? 1n : 0n);
  return {
    requestId: row.request_id,
    workspaceId: row.workspace_id,
    keyId: row.key_id,
    receivedAt: { seconds, nanos: Number(us - seconds * 1_000_000n) * 1000 },
    method: row.method,
    route: row.route,
    pathParams: row.path_params,
    status: row.status,
    code: row.code ?? '',
    errors: row.errors,
    durationMs: row.duration_ms,
  };
}

/** A refused record's reasons for the log: `errors[0].field: max_length`, or the SQLSTATE; never a value. */
function reasonText(r: RefusedRecord): string {
  return 'sqlState' in r.reason ? `requests[${r.index}]: SQLSTATE ${r.reason.sqlState}` : r.reason.map((v) => `requests[${r.index}].${v.field}: ${v.code}`).join(', ');
}

export function requestLogRpcs(sql: Sql, log: Logger): RequestLogRpcs {
  const refusals = new LogSampler();
  return {
    async recordRequests(req) {
      const { recorded, refused } = await takeIn(sql, req.requests, record);
      if (refused.length > 0) {
        refusals.sample('refused', (notLogged) =>
          log.warn(
            {
              event: logEvent('request_log.records.refused'),
              refused: refused.length,
              records: req.requests.length,
              reasons: refused.slice(0, 5).map(reasonText),
              refusals_not_logged: notLogged,
            },
            'request log: records refused; the rest of the batch is stored',
          ),
        );
      }
      return { recorded, refused: refused.length };
    },

    async listRequests(req) {
      const limit = req.limit === 0 ? DEFAULT_PAGE_SIZE : req.limit;
      const rows = await selectRequests(sql, {
        workspaceId: canonicalUuid(req.workspaceId),
        status: req.status,
        code: req.code,
        after: req.after === undefined ? undefined : decodeCursor(req.after),
        limit,
      });
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      const more = rows.length > limit && last !== undefined;
      return {
        requests: page.map(recordedRequestMessage),
        nextCursor: more ? encodeCursor({ receivedAtMicros: BigInt(last.received_us), requestId: last.request_id }) : undefined,
      };
    },

    async getRequest(req) {
      const row = await selectRequest(sql, canonicalUuid(req.requestId));
      if (!row) throw failure(Code.NotFound, ErrorReason.REQUEST_NOT_FOUND, 'no recorded request with this id');
      return { request: recordedRequestMessage(row) };
    },
  };
}
