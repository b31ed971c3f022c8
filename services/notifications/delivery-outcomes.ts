/**
 * What an attempt leaves behind, written on the asynchronous-commit pool (a crash can
 * lose the last fraction of a second of outcomes, which at worst repeats an attempt
 * with the same event_id): a delivery or a scheduled retry (in batches, `writeOutcomes`)
 * and an abandonment after the last attempt (`abandonDelivery`), each with its row in
 * the delivery log (delivery_attempts), and only while the attempt's lease is still held.
 */
import type { Sql } from '../kit/db';
import { honoursRetryAfter, parseRetryAfter } from './endpoint-health';
import type { PostResult } from './webhook-poster';
import { deliveryQueue } from './delivery-claim';

/** The result of one attempt, as recorded. */
export type Outcome =
  | { delivered: true; status: number }
  | {
      delivered: false;
      status: number | null;
      error: string;
      /** made no connection because the endpoint was not active */
      skipped?: boolean;
      /** Seconds the partner asked to wait (Retry-After on a 429 or 503), capped. */
      retryAfterS?: number;
    };

/**
 * What the receiver's answer means: a 2xx delivers; a 3xx is `redirect` (never
 * followed) and any other status `http_status`, with the Retry-After of a 429 or 503
 * (capped); no answer is the poster's error (timeout, connection_failed, …).
 */
export function classifyResponse(res: PostResult): Outcome {
  if (!('status' in res)) return { delivered: false, status: null, error: res.error };
  if (res.status >= 200 && res.status < 300) return { delivered: true, status: res.status };
  const retryAfterS = honoursRetryAfter(res.status) ? parseRetryAfter(res.retryAfter) : undefined;
  return { delivered: false, status: res.status, error: res.status >= 300 && res.status < 400 ? 'redirect' : 'http_status', retryAfterS };
}

/** An outcome written in a batch: a delivery, or a failed attempt with its retry scheduled `delayS` from now. */
export interface OutcomeWrite {
  id: string;
  token: string;
  attempts: number;
  delivered: boolean;
  status: number | null;
  error: string | null;
  delayS: number;
  /** When the attempt started, and how long it took (null: nothing was sent); the delivery log's row. */
  attempt: AttemptTiming;
}

/** When an attempt started and how long it took, in ms (null when nothing was sent). */
export interface AttemptTiming {
  startedAt: Date;
  durationMs: number | null;
}

/**
 * One statement: the outcomes of `batch` where the lease is still ours, each with its
 * row in the delivery log (delivery_attempts); the endpoints' abandonment runs reset on
 * delivery.
 */
export async function writeOutcomes(sql: Sql, batch: OutcomeWrite[]): Promise<Map<string, { next_attempt_at: Date | null }>> {
  const rows = await sql<{ id: string; next_attempt_at: Date | null }[]>`
    with o as (
      select * from unnest(
        ${sql.array(batch.map((w) => w.id))}::bigint[],
        ${sql.array(batch.map((w) => w.token))}::text[],
        ${sql.array(batch.map((w) => w.attempts))}::int[],
        ${sql.array(batch.map((w) => w.delivered))}::bool[],
        ${sql.array(batch.map((w) => w.status ?? 0))}::int[],
        ${sql.array(batch.map((w) => w.error ?? ''))}::text[],
        ${sql.array(batch.map((w) => w.delayS))}::float8[],
        ${sql.array(batch.map((w) => w.attempt.startedAt.toISOString()))}::timestamptz[],
        ${sql.array(batch.map((w) => w.attempt.durationMs ?? -1))}::int[]
      ) as o(id, token, attempts, delivered, status, error, delay_s, attempted_at, duration_ms)
    ), d as (
      update notifications.deliveries d
      set state = case when o.delivered then 'delivered' else 'pending' end,
          attempts = o.attempts, last_status = nullif(o.status, 0), last_error = nullif(o.error, ''),
          next_attempt_at = case when o.delivered then null else now() + o.delay_s * interval '1 second' end,
          lease_owner = null, lease_until = null,
          -- A test event's body names nobody: it is kept, so the partner can resend it.
          body = case when o.delivered and not d.test then null else d.body end,
          finished_at = case when o.delivered then now() else d.finished_at end
      from o
      where d.id = o.id and ${deliveryQueue.held(sql, 'd', sql`o.token`)}
      returning d.id, d.workspace_id, o.delivered, d.next_attempt_at
    ), reset as (
      update notifications.endpoints e set consecutive_abandoned = 0
      where e.workspace_id in (select workspace_id from d where delivered) and e.consecutive_abandoned <> 0
    ), logged as (
      insert into notifications.delivery_attempts (delivery_id, attempted_at, response_status, duration_ms, outcome, next_attempt_at)
      select d.id, o.attempted_at, nullif(o.status, 0), nullif(o.duration_ms, -1),
             case when o.delivered then 'delivered' else o.error end, d.next_attempt_at
      from d join o on o.id = d.id
    )
    select id, next_attempt_at from d`;
  return new Map(rows.map((r) => [String(r.id), { next_attempt_at: r.next_attempt_at }]));
}

/**
 * Abandons a delivery after its last failed attempt (its body stays, for a replay;
 * cleared only by the 30-day prune) and logs the attempt. Resolves with the delivery's
 * workspace, or undefined when the lease was no longer held (nothing written).
 */
export async function abandonDelivery(
  sql: Sql,
  a: { id: string; token: string; attempts: number; status: number | null; error: string; attempt: AttemptTiming },
): Promise<{ workspace_id: string } | undefined> {
  const [r] = await sql<{ workspace_id: string }[]>`
    with d as (
      update notifications.deliveries d
      set state = 'abandoned', attempts = ${a.attempts}, last_status = ${a.status}, last_error = ${a.error},
          next_attempt_at = null, lease_owner = null, lease_until = null, finished_at = now()
      where d.id = ${a.id} and ${deliveryQueue.held(sql, 'd', a.token)}
      returning d.id, d.workspace_id
    ), logged as (
      insert into notifications.delivery_attempts (delivery_id, attempted_at, response_status, duration_ms, outcome)
      select d.id, ${a.attempt.startedAt}::timestamptz, ${a.status}::int, ${a.attempt.durationMs}::int, ${a.error}::text from d
    )
    select workspace_id from d`;
  return r;
}
