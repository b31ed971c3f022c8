/**
 * Marketplace listings: listings the partner did not push (`psync listing
 * create`, docs/operator-cli.md), in sandbox and production workspaces alike. They have a
 * listing id, a name and check-in/out times — what the calendar needs for holds,
 * bookings and `booking.confirmed` (with `provider_id` null) — and are publishable
 * and listed from the start; their guest-facing content lives on the marketplace
 * side, so the catalog's public surfaces do not show them.
 */
import type { Sql } from '../kit/db';
import { appendListingEvent } from './events';
import { newListingId, readListing, type ListingRecord } from './listing-records';
import type { EnvironmentName } from './workspaces';

export const DEFAULT_MARKETPLACE_LISTING = { name: 'Marketplace listing', checkInTime: '15:00', checkOutTime: '11:00' } as const;

/** Creates the listing and writes `catalog.listing.published` in the same transaction. */
export async function createMarketplaceListing(
  sql: Sql,
  args: { workspaceId: string; environment: EnvironmentName; name: string; checkInTime: string; checkOutTime: string },
): Promise<ListingRecord> {
  return await sql.begin<ListingRecord>(async (tx) => {
    const listingId = newListingId();
    await tx`
      insert into catalog.listings (listing_id, workspace_id, environment, origin, name, check_in_time, check_out_time)
      values (${listingId}, ${args.workspaceId}, ${args.environment}, 'marketplace', ${args.name}, ${args.checkInTime}, ${args.checkOutTime})
    `;
    const listing = (await readListing(tx, listingId))!;
    await appendListingEvent(tx, 'published', listing);
    return listing;
  });
}
