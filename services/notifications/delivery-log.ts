/**
 * The partners' delivery log (public GET /v1/webhooks/deliveries and
 * GET /v1/webhooks/deliveries/{event_id}; docs/partners/sandbox.md): a workspace's
 * deliveries, newest first, each with its most recent attempts as the dispatcher
 * recorded them (`delivery_attempts`: when, how long, the response status, the outcome
 * and the retry it scheduled).
 *
 * - Paged like the rest of the contract: `page` (1-based) and `page_size` (1 to 200,
 *   default 50), `{items, has_more}`, no total. The request's shape (workspace UUID,
 *   paging bounds, filters) is declared in notifications.proto and checked before the
 *   handler runs (services/kit/rpc/validation.ts). Offset paging over `id desc`: a
 *   delivery queued between two page reads shifts the later pages by one row.
 * - Every read is scoped to the workspace: another workspace's delivery is NOT_FOUND
 *   exactly like an unknown or malformed event_id.
 * - What is listed is what `notifications.deliveries` holds: pending deliveries, and
 *   finished ones for 30 days (deletion-requests.ts prune). Challenges are sent during
 *   the registration call and are not deliveries.
 */
import type { Sql } from '../kit/db';
import { PAGE_SIZE_DEFAULT } from '../kit/base';
import { canonicalUuid } from '../kit/base';
import type { DeliveryListRow, DeliveryStateName } from './delivery-list';
import type { EventKind } from './envelope';
import { deliveryNotFound, isUuid } from './errors';

/** Most attempts shown per delivery (newest first); `attempt_log_total` counts them all. */
export const ATTEMPTS_SHOWN = 20;

/** One recorded attempt. */
export interface DeliveryAttemptRow {
  attempted_at: Date;
  response_status: number | null;
  duration_ms: number | null;
  /** 'delivered', or the failure (deliveries.last_error vocabulary). */
  outcome: string;
  next_attempt_at: Date | null;
}

/** A delivery with its attempts, as the log shows it. */
export interface DeliveryLogEntry extends DeliveryListRow {
  test: boolean;
  /** Newest first, at most ATTEMPTS_SHOWN. */
  attempt_log: DeliveryAttemptRow[];
  attempt_log_total: number;
}

/** A delivery row before its attempts are attached. */
export interface DeliveryRow extends DeliveryListRow {
  id: string;
  test: boolean;
}

export interface DeliveryLogQuery {
  /** 1-based; 0 means 1. */
  page: number;
  /** 0 means PAGE_SIZE_DEFAULT; at most PAGE_SIZE_MAX (the .proto's rule). */
  pageSize: number;
  state?: DeliveryStateName;
  kind?: EventKind;
}

/** Attaches each delivery's most recent attempts (one query for the whole page). */
export async function withAttempts(sql: Sql, rows: DeliveryRow[]): Promise<DeliveryLogEntry[]> {
  if (rows.length === 0) return [];
  const attempts = await sql<(DeliveryAttemptRow & { delivery_id: string; total: number; attempt_id: string | null })[]>`
    select x.id as delivery_id, c.total, a.id as attempt_id, a.attempted_at, a.response_status, a.duration_ms,
           a.outcome, a.next_attempt_at
    from unnest(${sql.array(rows.map((r) => r.id))}::bigint[]) as x(id)
    cross join lateral (
      select count(*)::int as total from notifications.delivery_attempts where delivery_id = x.id
    ) c
    left join lateral (
      select id, attempted_at, response_status, duration_ms, outcome, next_attempt_at
      from notifications.delivery_attempts where delivery_id = x.id
      order by id desc
      limit ${ATTEMPTS_SHOWN}
    ) a on true
    order by x.id, a.id desc`;
  const byDelivery = new Map<string, { total: number; log: DeliveryAttemptRow[] }>();
  for (const a of attempts) {
    const key = String(a.delivery_id);
    let entry = byDelivery.get(key);
    if (!entry) byDelivery.set(key, (entry = { total: a.total, log: [] }));
    if (a.attempt_id === null) continue;
    entry.log.push({
      attempted_at: a.attempted_at,
      response_status: a.response_status,
      duration_ms: a.duration_ms,
      outcome: a.outcome,
      next_attempt_at: a.next_attempt_at,
    });
  }
  return rows.map((r) => {
    const a = byDelivery.get(String(r.id));
    return { ...r, attempt_log: a?.log ?? [], attempt_log_total: a?.total ?? 0 };
  });
}

/** One page of a workspace's deliveries, newest first, with their attempts. */
export async function deliveryLogPage(sql: Sql, workspaceId: string, q: DeliveryLogQuery): Promise<{ items: DeliveryLogEntry[]; hasMore: boolean }> {
  const ws = canonicalUuid(workspaceId);
  const page = q.page || 1;
  const pageSize = q.pageSize || PAGE_SIZE_DEFAULT;
  const rows = await sql<DeliveryRow[]>`
    select id, workspace_id, event_id, event_type, state, attempts, last_status, last_error,
           next_attempt_at, occurred_at, created_at, test
    from notifications.deliveries
    where workspace_id = ${ws}
      and (${q.state ?? null}::text is null or state = ${q.state ?? null}::text)
      and (${q.kind ?? null}::text is null or event_type = ${q.kind ?? null}::text)
    order by id desc
    limit ${pageSize + 1}::int offset (${page}::bigint - 1) * ${pageSize}::int`;
  const hasMore = rows.length > pageSize;
  return { items: await withAttempts(sql, rows.slice(0, pageSize)), hasMore };
}

/** The delivery of `eventId` in the workspace, with its attempts; NOT_FOUND otherwise. */
export async function deliveryByEventId(sql: Sql, workspaceId: string, eventId: string): Promise<DeliveryLogEntry> {
  const ws = canonicalUuid(workspaceId);
  // A malformed id can name no delivery: the same answer as an unknown one.
  if (!isUuid(eventId)) throw deliveryNotFound();
  const [row] = await sql<DeliveryRow[]>`
    select id, workspace_id, event_id, event_type, state, attempts, last_status, last_error,
           next_attempt_at, occurred_at, created_at, test
    from notifications.deliveries
    where workspace_id = ${ws} and event_id = ${eventId.toLowerCase()}::uuid`;
  if (!row) throw deliveryNotFound();
  const [entry] = await withAttempts(sql, [row]);
  return entry!;
}
