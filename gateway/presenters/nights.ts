/**
 * A listing's nights: the public JSON of GET /v1/listings/{listing_id}/nights ↔ calendar
 * protobuf (docs/partners/calendar.md; docs/contract-gaps.md "reading a listing's nights").
 * `external_uid` only on a `blocked` night, `booking_reference` only on a `booked` or
 * `withdrawn` one; nothing about guests.
 */
import type { ListingNight, ListListingNightsResponse } from '../../gen/psync/calendar/v1/calendar_pb';
import { listingNightStates, type ListingNightStateName } from './enums';

/** One night. */
export interface ListingNightJson {
  date: string;
  state: ListingNightStateName;
  external_uid?: string;
  booking_reference?: string;
}

/** The 200 body. */
export interface ListingNightsJson {
  items: ListingNightJson[];
}

export function presentListingNight(n: ListingNight): ListingNightJson {
  const out: ListingNightJson = { date: n.date, state: listingNightStates.name(n.state) };
  if (n.externalUid !== undefined) out.external_uid = n.externalUid;
  if (n.bookingReference !== undefined) out.booking_reference = n.bookingReference;
  return out;
}

export function presentListingNights(res: ListListingNightsResponse): ListingNightsJson {
  return { items: res.items.map(presentListingNight) };
}
