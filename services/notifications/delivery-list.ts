/**
 * The operators' view of deliveries (`psync deliveries list`; docs/contract-gaps.md
 * "deliveries list item").
 */
import type { Sql } from '../kit/db';
import { canonicalUuid } from '../kit/base';

export type DeliveryStateName = 'pending' | 'delivered' | 'abandoned';

export interface DeliveryListRow {
  workspace_id: string;
  event_id: string;
  event_type: string;
  state: DeliveryStateName;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: Date | null;
  occurred_at: Date;
  created_at: Date;
}

/** Most deliveries one listing returns (newest first). */
export const LIST_LIMIT = 500;

/** A workspace's deliveries, newest first, optionally in one state. */
export async function listDeliveries(sql: Sql, workspaceId: string, state: DeliveryStateName | undefined): Promise<DeliveryListRow[]> {
  const ws = canonicalUuid(workspaceId);
  return sql<DeliveryListRow[]>`
    select workspace_id, event_id, event_type, state, attempts, last_status, last_error,
           next_attempt_at, occurred_at, created_at
    from notifications.deliveries
    where workspace_id = ${ws} and (${state ?? null}::text is null or state = ${state ?? null}::text)
    order by id desc
    limit ${LIST_LIMIT}`;
}
