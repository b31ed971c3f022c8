/**
 * GetAvailability: per night of a range, whether it can be held or booked and what
 * holds it (blocks by external_uid, live holds by hold_id, bookings and withdrawn
 * nights by booking reference). A hold past its expires_at no longer holds anything,
 * even before the sweeper has expired it.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { GetAvailabilityRequest, GetAvailabilityResponseSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import { NightHolderKind } from '../../gen/psync/calendar/v1/events_pb';
import { checkRange, nightsOf, parseDay } from '../domain';
import { invalidArgument } from './errors';
import type { CalendarDeps } from './calendar-deps';

const KIND = new Map<string, NightHolderKind>([
  ['block', NightHolderKind.BLOCK],
  ['hold', NightHolderKind.HOLD],
  ['booking', NightHolderKind.BOOKING],
  ['withdrawn', NightHolderKind.WITHDRAWN],
]);

export async function getAvailability(deps: CalendarDeps, req: GetAvailabilityRequest): Promise<MessageInitShape<typeof GetAvailabilityResponseSchema>> {
  // listing_id and the dates were checked against calendar.proto's rules; the range rule is the calendar's.
  const { span, problems } = checkRange(req.checkIn, req.checkOut);
  if (!span) throw invalidArgument(problems);
  const listing = await deps.listings.resolve(req.listingId);

  const rows = await deps.sql<{ holder_kind: string; holder_id: string; label: string | null; check_in: string; check_out: string }[]>`
    select c.holder_kind, c.holder_id, b.external_uid as label, lower(c.nights)::text as check_in, upper(c.nights)::text as check_out
    from calendar.claims c
    left join calendar.blocks b on c.holder_kind = 'block' and b.id = (case when c.holder_kind = 'block' then c.holder_id::bigint end)
    left join calendar.holds h on c.holder_kind = 'hold' and h.hold_id = (case when c.holder_kind = 'hold' then c.holder_id::uuid end)
    where c.listing_id = ${listing.listingId}
      and c.nights && daterange(${span.checkIn}::date, ${span.checkOut}::date)
      and (c.holder_kind <> 'hold' or h.expires_at > clock_timestamp())
    order by lower(c.nights), c.holder_kind, c.holder_id
  `;
  const nights = nightsOf(span.checkIn, span.checkOut);
  const first = parseDay(span.checkIn)!;
  const holders = nights.map(() => [] as { kind: NightHolderKind; id: string }[]);
  for (const r of rows) {
    const kind = KIND.get(r.holder_kind) ?? NightHolderKind.UNSPECIFIED;
    const id = r.holder_kind === 'block' ? (r.label ?? r.holder_id) : r.holder_id;
    const from = Math.max(parseDay(r.check_in)! - first, 0);
    const to = Math.min(parseDay(r.check_out)! - first, nights.length);
    for (let i = from; i < to; i++) holders[i]!.push({ kind, id });
  }
  return {
    listingId: listing.listingId,
    nights: nights.map((date, i) => ({ date, available: holders[i]!.length === 0, holders: holders[i]! })),
  };
}
