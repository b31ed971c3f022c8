/**
 * The request log's SQL and its page cursor (docs/operations.md "Request log"): the
 * metadata of contract requests as the gateway recorded them (RecordRequests), listed
 * per workspace newest first (ListRequests) or found by request id (GetRequest).
 *
 * The cursor is opaque to partners: base64url of the last row's receive time in
 * microseconds since the epoch (8 bytes, big-endian) and its request id (16 bytes) —
 * 32 characters, so any string of that shape decodes (identity.proto `after`).
 * Times travel as microsecond text, never through a JavaScript Date, so the cursor is
 * exactly the stored time.
 */
import type { Sql } from '../kit/db';

/** Rows per page when the caller gives no limit. */
export const DEFAULT_PAGE_SIZE = 50;

/** One `{field, code}` pair of a validation_failed answer. */
export interface ViolationPair {
  field: string;
  code: string;
}

/** A request as RecordRequests stores it. */
export interface RequestRecord {
  requestId: string;
  workspaceId: string;
  keyId: string;
  /** Receive time, microseconds since the epoch. */
  receivedAtMicros: bigint;
  method: string;
  route: string;
  pathParams: Record<string, string>;
  status: number;
  /** Problem code; undefined for a 2xx. */
  code: string | undefined;
  errors: ViolationPair[];
  durationMs: number;
}

export interface RequestRow {
  request_id: string;
  workspace_id: string;
  key_id: string;
  received_us: string;
  method: string;
  route: string;
  path_params: Record<string, string>;
  status: number;
  code: string | null;
  errors: ViolationPair[];
  duration_ms: number;
}

/** Where a page starts: strictly older than this row. */
export interface RequestCursor {
  receivedAtMicros: bigint;
  requestId: string;
}

const CURSOR_BYTES = 24;
/**
 * Any 32-character cursor decodes, so its time is held to what a timestamp can be
 * compared with: from the epoch (no request is older) to the end of year 9999 (none is
 * newer). A partner's made-up cursor is an odd filter, never an SQL range error.
 */
const MIN_CURSOR_MICROS = 0n;
const MAX_CURSOR_MICROS = 253_402_300_800_000_000n - 1n;

export function encodeCursor(c: RequestCursor): string {
  const buf = Buffer.alloc(CURSOR_BYTES);
  buf.writeBigInt64BE(c.receivedAtMicros, 0);
  Buffer.from(c.requestId.replace(/-/g, ''), 'hex').copy(buf, 8);
  return buf.toString('base64url');
}

/** The cursor of a 32-character base64url string (identity.proto checked the shape). */
export function decodeCursor(text: string): RequestCursor {
  const buf = Buffer.from(text, 'base64url');
  if (buf.length !== CURSOR_BYTES) throw new Error('a request-log cursor is 24 bytes');
  const hex = buf.subarray(8).toString('hex');
  const requestId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  const micros = buf.readBigInt64BE(0);
  const receivedAtMicros = micros < MIN_CURSOR_MICROS ? MIN_CURSOR_MICROS : micros > MAX_CURSOR_MICROS ? MAX_CURSOR_MICROS : micros;
  return { receivedAtMicros, requestId };
}

const COLUMNS = (sql: Sql) => sql`
  request_id, workspace_id, key_id,
  ((extract(epoch from received_at) * 1000000)::bigint)::text as received_us,
  method, route, path_params, status::int as status, code, errors, duration_ms::int as duration_ms`;

/** Stores the records, one statement; a request id already kept is skipped. Returns how many were new. */
export async function insertRequests(sql: Sql, records: readonly RequestRecord[]): Promise<number> {
  const rows = records.map((r) => ({
    request_id: r.requestId,
    workspace_id: r.workspaceId,
    key_id: r.keyId,
    received_us: r.receivedAtMicros.toString(),
    method: r.method,
    route: r.route,
    path_params: r.pathParams,
    status: r.status,
    code: r.code ?? null,
    errors: r.errors,
    duration_ms: r.durationMs,
  }));
  const result = await sql`
    insert into identity.request_log (request_id, workspace_id, key_id, received_at, method, route, path_params, status, code, errors, duration_ms)
    select r.request_id, r.workspace_id, r.key_id, timestamptz 'epoch' + r.received_us * interval '1 microsecond',
           r.method, r.route, r.path_params, r.status, r.code, r.errors, r.duration_ms
    from jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb) as r(
      request_id uuid, workspace_id uuid, key_id text, received_us bigint, method text, route text,
      path_params jsonb, status bigint, code text, errors jsonb, duration_ms bigint)
    on conflict (request_id) do nothing`;
  return result.count;
}

export interface RequestFilter {
  workspaceId: string;
  status?: number;
  code?: string;
  after?: RequestCursor;
  limit: number;
}

/** A workspace's requests, newest first, at most `limit + 1` (the extra one says there is more). */
export async function selectRequests(sql: Sql, f: RequestFilter): Promise<RequestRow[]> {
  const status = f.status ?? null;
  const code = f.code ?? null;
  const afterUs = f.after ? f.after.receivedAtMicros.toString() : null;
  const afterId = f.after ? f.after.requestId : null;
  return sql<RequestRow[]>`
    select ${COLUMNS(sql)}
    from identity.request_log
    where workspace_id = ${f.workspaceId}
      and (${status}::bigint is null or status = ${status}::bigint)
      and (${code}::text is null or code = ${code}::text)
      and (${afterUs}::bigint is null
           or (received_at, request_id) < (timestamptz 'epoch' + ${afterUs}::bigint * interval '1 microsecond', ${afterId}::uuid))
    order by received_at desc, request_id desc
    limit ${f.limit + 1}`;
}

/** One request by id, in any workspace. */
export async function selectRequest(sql: Sql, requestId: string): Promise<RequestRow | undefined> {
  const [row] = await sql<RequestRow[]>`
    select ${COLUMNS(sql)} from identity.request_log where request_id = ${requestId}`;
  return row;
}

/** Deletes at most `batch` rows received more than `days` days ago; returns how many. */
export async function pruneOldRequests(sql: Sql, days: number, batch: number): Promise<number> {
  const result = await sql`
    delete from identity.request_log
    where request_id in (
      select request_id from identity.request_log
      where received_at < now() - make_interval(days => ${days})
      limit ${batch})`;
  return result.count;
}

/**
 * Deletes at most `batch` rows beyond the `keep` newest of each workspace; returns how
 * many. The workspaces are found by a skip scan of the (workspace, time) index.
 */
export async function pruneExcessRequests(sql: Sql, keep: number, batch: number): Promise<number> {
  const result = await sql`
    with recursive ws as (
      (select workspace_id from identity.request_log order by workspace_id limit 1)
      union all
      select (select r.workspace_id from identity.request_log r where r.workspace_id > ws.workspace_id order by r.workspace_id limit 1)
      from ws where ws.workspace_id is not null
    ), cut as (
      select ws.workspace_id, c.received_at, c.request_id
      from ws
      cross join lateral (
        select r.received_at, r.request_id from identity.request_log r
        where r.workspace_id = ws.workspace_id
        order by r.received_at desc, r.request_id desc
        offset ${keep - 1} limit 1
      ) c
      where ws.workspace_id is not null
    )
    delete from identity.request_log
    where request_id in (
      select r.request_id from cut
      join identity.request_log r
        on r.workspace_id = cut.workspace_id and (r.received_at, r.request_id) < (cut.received_at, cut.request_id)
      limit ${batch})`;
  return result.count;
}
