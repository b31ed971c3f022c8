/**
 * Erasure in the intake's transaction (intake.ts): a user.erased event takes the guest's
 * name out of everything notifications still keeps of those bookings.
 */
import type { Tx } from '../kit/db';
import { scrubGuestName } from './envelope';

/**
 * The erased guest's name leaves every booking.confirmed body of those bookings that is
 * still kept: pending deliveries, abandoned ones (kept for a replay) and the events
 * feed's. The bookings
 * are remembered so a confirmation handled later (events are handled concurrently) is
 * stored without the name.
 *
 * The rows are locked (FOR UPDATE) before they are scrubbed. A delivery that a worker
 * abandons concurrently is waited for and then still matches (abandoned, body kept), so
 * it is scrubbed too; one delivered concurrently has no body left to scrub. A delivery
 * abandoned after this commit keeps the body scrubbed here (abandonment does not
 * touch the body).
 */
export async function scrubGuestNames(tx: Tx, workspaceId: string, bookingReferences: string[]): Promise<void> {
  if (bookingReferences.length === 0) return;
  await tx`
    insert into notifications.erased_bookings (workspace_id, booking_reference)
    select ${workspaceId}, unnest(${tx.array(bookingReferences)}::text[])
    on conflict do nothing`;
  const rows = await tx<{ id: string; body: string }[]>`
    select id, body from notifications.deliveries
    where workspace_id = ${workspaceId} and event_type = 'booking.confirmed'
      and state in ('pending', 'abandoned') and body is not null
      and booking_reference = any(${tx.array(bookingReferences)}::text[])
    for update`;
  for (const r of rows) {
    await tx`update notifications.deliveries set body = ${scrubGuestName(r.body)} where id = ${r.id}`;
  }
  const feed = await tx<{ position: string; envelope: string }[]>`
    select position, envelope from notifications.event_feed
    where workspace_id = ${workspaceId} and event_type = 'booking.confirmed'
      and booking_reference = any(${tx.array(bookingReferences)}::text[])
    for update`;
  for (const r of feed) {
    await tx`update notifications.event_feed set envelope = ${scrubGuestName(r.envelope)} where workspace_id = ${workspaceId} and position = ${r.position}`;
  }
}
