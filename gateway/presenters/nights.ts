/**
 * A listing's nights: the public JSON of GET /v1/listings/{listing_id}/nights ↔ calendar
 * protobuf (docs/partners/calendar.md; docs/contract-gaps.md "reading a listing's nights").
 * `external_uid` only on a `blocked` night, `booking_reference` only on a `booked` one;
 * nothing about guests. The public states are exactly free, blocked, booked and held: a
 * booking the host cancelled keeps its nights taken for good (the calendar's WITHDRAWN),
 * which reads as `booked` with its reference and `withdrawn: true`.
 */
import { ListingNightState, type ListingNight, type ListListingNightsResponse } from '../../gen/psync/calendar/v1/calendar_pb';
import { listingNightStates } from '../public-enums';
import type { ListingNightJson, ListingNightsJson } from '../contract/listings';

export function presentListingNight(n: ListingNight): ListingNightJson {
  const name = listingNightStates.name(n.state);
  const out: ListingNightJson = { date: n.date, state: name === 'withdrawn' ? 'booked' : name };
  if (n.externalUid !== undefined) out.external_uid = n.externalUid;
  if (n.bookingReference !== undefined) out.booking_reference = n.bookingReference;
  if (n.state === ListingNightState.WITHDRAWN) out.withdrawn = true;
  return out;
}

export function presentListingNights(res: ListListingNightsResponse): ListingNightsJson {
  return { items: res.items.map(presentListingNight) };
}
