/**
 * ListListingNights (GET /v1/listings/{listing_id}/nights): what holds each night of
 * one of the caller's listings, one item per night of [from, to), in one statement.
 *
 * The nights come from generate_series over the range, each joined with the claims
 * that contain it (migration 0001: one row per holder, its nights a daterange). Per
 * night one holder is shown, DISTINCT ON in this order: a booking, a live hold (only
 * `live` and not past expires_at, even before the sweeper has expired it), the
 * partner's own block (the first by external_uid when several overlap), a withdrawn
 * booking. The sides never overlap (claims_sides_never_overlap), so the order only
 * chooses between a partner's overlapping blocks and withdrawn nights.
 *
 * Nothing about guests: a booking is named by its reference only.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import { ListingNightState, type ListingNightSchema, type ListListingNightsRequest, type ListListingNightsResponseSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import { MAX_NIGHTS_READ } from '../kit/base';
import { checkRange } from '../domain';
import { canonicalUuid } from '../kit/base';
import type { CalendarDeps } from './calendar-deps';
import { invalidArgument } from './errors';

/** A claim's holder kind → the state it shows; no claim is FREE. */
const STATES: Readonly<Record<string, ListingNightState>> = {
  booking: ListingNightState.BOOKED,
  hold: ListingNightState.HELD,
  block: ListingNightState.BLOCKED,
  withdrawn: ListingNightState.WITHDRAWN,
};

interface NightRow {
  date: string;
  holder_kind: string | null;
  holder_id: string | null;
  external_uid: string | null;
}

export async function listListingNights(deps: CalendarDeps, req: ListListingNightsRequest): Promise<MessageInitShape<typeof ListListingNightsResponseSchema>> {
  // The range rule on the contract's own fields (`to` after `from`, at most MAX_NIGHTS_READ).
  const { span, problems } = checkRange(req.from, req.to, MAX_NIGHTS_READ);
  if (!span) throw invalidArgument(problems.map((p) => ({ field: p.field === 'check_in' ? 'from' : 'to', code: p.code })));
  const workspaceId = canonicalUuid(req.workspaceId);
  await deps.listings.assertOwned(workspaceId, req.listingId);

  const rows = await deps.sql<NightRow[]>`
    select distinct on (n.night) n.night::text as date, c.holder_kind, c.holder_id, b.external_uid
    from (select ${span.checkIn}::date + i as night from generate_series(0, ${span.nights - 1}::int) as i) n
    left join (
      calendar.claims c
      left join calendar.blocks b
        on c.holder_kind = 'block' and b.workspace_id = ${workspaceId}
        and b.id = (case when c.holder_kind = 'block' then c.holder_id::bigint end)
      left join calendar.holds h
        on c.holder_kind = 'hold' and h.hold_id = (case when c.holder_kind = 'hold' then c.holder_id::uuid end)
    )
      -- The range restriction alone reaches the claims scan (one GiST probe for the listing's
      -- claims in the range); @> then matches each night.
      on c.listing_id = ${req.listingId} and c.nights && daterange(${span.checkIn}::date, ${span.checkOut}::date) and c.nights @> n.night
      and (c.holder_kind <> 'hold' or (h.status = 'live' and h.expires_at > clock_timestamp()))
    order by n.night,
      case c.holder_kind when 'booking' then 0 when 'hold' then 1 when 'block' then 2 when 'withdrawn' then 3 else 4 end,
      b.external_uid
  `;
  return { items: rows.map(toNight) };
}

function toNight(r: NightRow): MessageInitShape<typeof ListingNightSchema> {
  const state = r.holder_kind === null ? ListingNightState.FREE : STATES[r.holder_kind];
  if (state === undefined) throw new Error(`calendar.claims holder_kind ${r.holder_kind} has no night state`);
  return {
    date: r.date,
    state,
    externalUid: state === ListingNightState.BLOCKED ? (r.external_uid ?? undefined) : undefined,
    bookingReference: state === ListingNightState.BOOKED || state === ListingNightState.WITHDRAWN ? (r.holder_id ?? undefined) : undefined,
  };
}
