/**
 * Listings as stored and as other services see them: the `catalog.listings` registry
 * of listing ids (partner properties that became publishable, and marketplace
 * listings the partner did not push), read together with the property behind a
 * partner listing, and turned into the `Listing` message that GetListing,
 * ResolveListing and the listing events carry.
 */
import { randomBytes } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { ListingOriginSchema, ListingSchema, type Listing, type ListingOrigin } from '../../gen/psync/catalog/v1/catalog_pb';
import { base32 } from '../kit/base';
import type { Sql, Tx } from '../kit/db';
import { EnumNames, environments } from '../kit/base';
import { propertyStatuses } from './messages';

/** One listing with what the calendar needs to know about it. */
export interface ListingRecord {
  listing_id: string;
  workspace_id: string;
  environment: 'sandbox' | 'production';
  origin: 'partner' | 'marketplace';
  provider_id: string | null;
  name: string;
  check_in_time: string;
  check_out_time: string;
  publishable: boolean;
  status: 'listed' | 'unlisted';
  created_at: Date;
}

/**
 * A new listing id: `lst_` and 24 base32 characters (120 random bits). Opaque to
 * partners and marketplace; never reused, never a placeholder.
 */
export function newListingId(): string {
  return `lst_${base32(randomBytes(15))}`;
}

/** Reads listings by id (any workspace); partner listings take their fields from the property. */
export async function readListings(q: Sql | Tx, listingIds: string[]): Promise<ListingRecord[]> {
  const db = q as Sql;
  return db<ListingRecord[]>`
    select l.listing_id, l.workspace_id::text as workspace_id, l.environment, l.origin,
           p.provider_id,
           coalesce(p.name, l.name) as name,
           coalesce(p.check_in_time, l.check_in_time) as check_in_time,
           coalesce(p.check_out_time, l.check_out_time) as check_out_time,
           coalesce(p.publishable, true) as publishable,
           coalesce(p.status, 'listed') as status,
           l.created_at
    from catalog.listings l
    left join catalog.properties p on p.id = l.property_id
    where l.listing_id in ${db(listingIds)}
  `;
}

/** Reads one listing by id, or undefined. */
export async function readListing(q: Sql | Tx, listingId: string): Promise<ListingRecord | undefined> {
  const [row] = await readListings(q, [listingId]);
  return row;
}

const listingOrigins = new EnumNames<ListingOrigin, 'partner' | 'marketplace'>(ListingOriginSchema);

/** The `Listing` message of a record. */
export function listingMessage(r: ListingRecord): Listing {
  return create(ListingSchema, {
    listingId: r.listing_id,
    workspaceId: r.workspace_id,
    environment: environments.value(r.environment),
    origin: listingOrigins.value(r.origin),
    providerId: r.provider_id ?? undefined,
    name: r.name,
    checkInTime: r.check_in_time,
    checkOutTime: r.check_out_time,
    publishable: r.publishable,
    status: propertyStatuses.value(r.status),
    createdAt: timestampFromDate(r.created_at),
  });
}
