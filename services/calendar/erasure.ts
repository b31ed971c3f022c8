/**
 * EraseGuest (spec `user.erased`; docs/calendar.md "Guest erasure"): the guest's data is scrubbed here
 * at once — guest id and name on every booking, and the guest's name inside the
 * booking.confirmed events the calendar still keeps (its event log and its outbox) —
 * and one UserErased per partner workspace that holds the guest's records names the
 * booking references and that partner's provider_ids, in the same transaction.
 *
 * Nothing identifying the guest is kept: the erasure row has counts only, and a later
 * erasure of the same guest id finds nothing left to erase.
 *
 * GetErasure reads an erasure back for the notifications service, which sends a
 * user.erased only for what the calendar really erased (docs/notifications.md,
 * "Events are proven by their owner"). The erasure row and its bookings' `erased_at`
 * are written with one timestamp in one transaction, which is what links them.
 */
import { randomUUID } from 'node:crypto';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { EraseGuestRequest, EraseGuestResponseSchema, GetErasureRequest, GetErasureResponseSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { withoutGuestName } from './event-codec';
import { appendEvents, userErased, type PendingEvent } from './event-log';
import type { CalendarDeps } from './calendar-deps';

interface ErasedRow {
  booking_reference: string;
  workspace_id: string;
  environment: 'sandbox' | 'production';
  provider_id: string | null;
}

export async function eraseGuest(deps: CalendarDeps, req: EraseGuestRequest): Promise<MessageInitShape<typeof EraseGuestResponseSchema>> {
  const erasureId = randomUUID();
  const at = new Date();
  const result = await deps.sql.begin(async (tx) => {
    const rows = await tx<ErasedRow[]>`
      update calendar.bookings set guest_id = null, guest_name = null, erased_at = ${at}
      where guest_id = ${req.guestId}
      returning booking_reference, workspace_id, environment, provider_id
    `;
    const refs = rows.map((r) => r.booking_reference);
    if (refs.length > 0) {
      // Events written by an earlier release also hold the guest's name (new ones never
      // do), in calendar.events and the outbox (unrelayed, or relayed and kept for
      // investigations): emptied in the body, or in the encoded message of a row
      // written before migration 0008. Nothing is added to a body without it.
      const logged = await tx<{ id: string; data: Buffer | null }[]>`
        update calendar.events set body = jsonb_set(body, '{guest_name}', '""', false)
        where booking_reference in ${tx(refs)} and type = 'booking_confirmed'
        returning id, data
      `;
      if (logged.length > 0) {
        await tx`
          update calendar.outbox set body = jsonb_set(body, '{guest_name}', '""', false)
          where id in ${tx(logged.map((e) => e.id))} and body is not null
        `;
      }
      for (const e of logged) {
        if (e.data === null) continue;
        const scrubbed = Buffer.from(withoutGuestName(e.data));
        await tx`update calendar.events set data = ${scrubbed} where id = ${e.id}`;
        await tx`update calendar.outbox set data = ${scrubbed} where id = ${e.id}`;
      }
    }
    // One user.erased per partner workspace holding the guest's records.
    const byWorkspace = new Map<string, { environment: ErasedRow['environment']; refs: Set<string>; providers: Set<string> }>();
    for (const r of rows) {
      let w = byWorkspace.get(r.workspace_id);
      if (!w) byWorkspace.set(r.workspace_id, (w = { environment: r.environment, refs: new Set(), providers: new Set() }));
      w.refs.add(r.booking_reference);
      if (r.provider_id) w.providers.add(r.provider_id);
    }
    const events: PendingEvent[] = [...byWorkspace].map(([workspaceId, w]) =>
      userErased({
        occurred_at: at.toISOString(),
        workspace_id: workspaceId,
        environment: w.environment,
        erasure_id: erasureId,
        booking_references: [...w.refs].sort(),
        provider_ids: [...w.providers].sort(),
      }),
    );
    await appendEvents(tx, events);
    await tx`
      insert into calendar.erasures (erasure_id, requested_at, bookings_erased, workspaces_notified)
      values (${erasureId}, ${at}, ${rows.length}, ${byWorkspace.size})
    `;
    return { bookingsErased: rows.length, workspacesNotified: byWorkspace.size };
  });
  if (result.workspacesNotified > 0) deps.eventsCommitted();
  return { erasureId, ...result };
}

/** GetErasure: the bookings `erasure_id` erased in `workspace_id`, and their provider ids. */
export async function getErasure(deps: CalendarDeps, req: GetErasureRequest): Promise<MessageInitShape<typeof GetErasureResponseSchema>> {
  const rows = await deps.sql<{ erased_at: Date; booking_reference: string; environment: ErasedRow['environment']; provider_id: string | null }[]>`
    select e.requested_at as erased_at, b.booking_reference, b.environment, b.provider_id
    from calendar.erasures e
    join calendar.bookings b on b.erased_at = e.requested_at and b.workspace_id = ${req.workspaceId}
    where e.erasure_id = ${req.erasureId}
    order by b.booking_reference
  `;
  if (rows.length === 0) return {};
  return {
    erasedAt: timestampFromDate(rows[0]!.erased_at),
    environment: rows[0]!.environment === 'production' ? Environment.PRODUCTION : Environment.SANDBOX,
    bookingReferences: rows.map((r) => r.booking_reference),
    providerIds: [...new Set(rows.flatMap((r) => (r.provider_id ? [r.provider_id] : [])))].sort(),
  };
}
