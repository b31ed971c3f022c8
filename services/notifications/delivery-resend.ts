/**
 * A partner's resend of one delivery (public POST /v1/webhooks/deliveries/{event_id}/resend;
 * docs/partners/sandbox.md "Resend").
 *
 * What is sent is the same delivery: the same `event_id` and the same body byte for
 * byte (receivers deduplicate on `event_id` and must answer a duplicate with a 2xx, so a
 * resend of something already processed tests exactly that), signed afresh at each
 * attempt with the current secret(s) and a current `X-Signature-Timestamp`, as every
 * attempt is (a signature from the first send would be past the five-minute tolerance).
 *
 * - delivered or abandoned: pending again as if just queued — a fresh retry schedule
 *   (`attempts` 0, no last status or error), next attempt now, `created_at` now — as an
 *   operator's replay does (delivery-replay.ts). Its earlier attempts stay in the log.
 * - pending: its next attempt is made due now (the schedule is not restarted); one in
 *   flight right now (leased) is left alone.
 * - The endpoint must be active and subscribed to the kind, else nothing is queued
 *   (WEBHOOK_ENDPOINT_NOT_ACTIVE): a resend that could not be sent is refused rather
 *   than left to run down its schedule unseen.
 * - A delivery whose body is no longer kept cannot be resent (DELIVERY_NOT_RESENDABLE):
 *   a real event's body is deleted once it is delivered, because it may carry a guest's
 *   name; test events keep theirs. Abandoned deliveries keep theirs until pruned.
 * - The endpoint's circuit breaker and any Retry-After it sent still apply.
 * - Another workspace's delivery is NOT_FOUND, like an unknown one: every lookup is
 *   scoped to the workspace.
 */
import type { Sql } from '../kit/db';
import type { Logger } from '../kit/base';
import { canonicalUuid } from '../kit/base';
import { deliveryByEventId, type DeliveryLogEntry } from './delivery-log';
import { deliveryNotFound, deliveryNotResendable, endpointNotActive, isUuid } from './errors';

/** Queues the delivery again (see above); resolves with it as it is now. */
export async function resendDelivery(sql: Sql, log: Logger, workspaceId: string, eventId: string): Promise<DeliveryLogEntry> {
  const ws = canonicalUuid(workspaceId);
  // A malformed id can name no delivery: the same answer as an unknown one.
  if (!isUuid(eventId)) throw deliveryNotFound();
  const id = eventId.toLowerCase();
  const how = await sql.begin(async (tx) => {
    const [d] = await tx<{ id: string; state: string; event_type: string; has_body: boolean }[]>`
      select id, state, event_type, body is not null as has_body from notifications.deliveries
      where workspace_id = ${ws} and event_id = ${id}::uuid
      for update`;
    if (!d) throw deliveryNotFound();
    // Read under a share lock: a concurrent registration commits before or after, never half-way.
    const [e] = await tx<{ ready: boolean }[]>`
      select status = 'active' and ${d.event_type}::text = any(events) as ready from notifications.endpoints
      where workspace_id = ${ws}
      for share`;
    if (!e?.ready) throw endpointNotActive();
    if (d.state === 'pending') {
      await tx`
        update notifications.deliveries set next_attempt_at = now()
        where id = ${d.id} and next_attempt_at > now() and (lease_until is null or lease_until < now())`;
      return 'made due';
    }
    if (!d.has_body) throw deliveryNotResendable();
    await tx`
      update notifications.deliveries
      set state = 'pending', attempts = 0, last_status = null, last_error = null, next_attempt_at = now(),
          lease_owner = null, lease_until = null, finished_at = null, created_at = now()
      where id = ${d.id}`;
    return 'queued again';
  });
  log.info({ workspace_id: ws, event_id: id, resend: how }, 'webhook delivery resent by the partner');
  return deliveryByEventId(sql, ws, id);
}
