/**
 * EraseGuest (issue 5 item 7; spec `user.erased`): the guest's data is scrubbed here
 * at once — guest id and name on every booking, and the guest's name inside the
 * booking.confirmed events the calendar still keeps (its event log and its outbox) —
 * and one UserErased per partner workspace that holds the guest's records names the
 * booking references and that partner's provider_ids, in the same transaction.
 *
 * Nothing identifying the guest is kept: the erasure row has counts only, and a later
 * erasure of the same guest id finds nothing left to erase.
 */
import { randomUUID } from 'node:crypto';
import { fromBinary, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { EraseGuestRequest, EraseGuestResponseSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import { BookingConfirmedSchema } from '../../gen/psync/calendar/v1/events_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { invalidArgument } from './errors';
import { appendEvents, userErased, type PendingEvent } from './event-log';
import type { CalendarDeps } from './calendar-deps';

interface ErasedRow {
  booking_reference: string;
  workspace_id: string;
  environment: 'sandbox' | 'production';
  provider_id: string | null;
}

export async function eraseGuest(deps: CalendarDeps, req: EraseGuestRequest): Promise<MessageInitShape<typeof EraseGuestResponseSchema>> {
  if (req.guestId === '') throw invalidArgument([{ field: 'guest_id', code: 'required' }]);
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
      // The guest's name also sits in booking.confirmed payloads kept for WatchEvents
      // and in the outbox (unrelayed, or relayed and kept for investigations).
      const logged = await tx<{ id: string; data: Buffer }[]>`
        select id, data from calendar.events
        where booking_reference in ${tx(refs)} and type = 'booking_confirmed'
      `;
      for (const e of logged) {
        const msg = fromBinary(BookingConfirmedSchema, e.data);
        msg.guestName = '';
        const scrubbed = Buffer.from(toBinary(BookingConfirmedSchema, msg));
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
        occurredAt: timestampFromDate(at),
        workspaceId,
        environment: w.environment === 'sandbox' ? Environment.SANDBOX : Environment.PRODUCTION,
        erasureId,
        bookingReferences: [...w.refs].sort(),
        providerIds: [...w.providers].sort(),
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
