/**
 * The public-surface view (search, map, guest feed, listing page, photos).
 *
 * One rule, in one SQL predicate (`PUBLIC`): a listing is shown only if it is a
 * partner property with a listing id, in a production workspace, publishable (which
 * includes `status = listed`). Sandbox, unlisted, unpublishable and marketplace-side
 * listings never appear (marketplace listings have no catalog content to show). A
 * listing that regressed keeps its id but drops out here at once.
 */
import { create } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { PublicListingSchema, type PublicListing, type SearchPublicListingsRequest } from '../../gen/psync/catalog/v1/catalog_pb';
import type { Sql } from '../kit/db';
import { validationFailed } from '../kit/rpc';
import type { PropertyRow } from './property-records';
import { PAGE_SIZE_DEFAULT } from '../kit/base';

interface PublicPhotoRow {
  property_id: string;
  position: number;
  sha256: string;
  width: number;
  height: number;
  content_type: string;
}

type PublicRow = PropertyRow & { cursor: string };

/** The predicate every public read uses, on `catalog.properties p`. */
function publicOnly(sql: Sql) {
  return sql`p.listing_id is not null and p.environment = 'production' and p.publishable and p.status = 'listed'`;
}

/** Escapes LIKE wildcards so partner text matches literally. */
const likeLiteral = (s: string) => `%${s.replace(/[\\%_]/g, (m) => `\\${m}`)}%`;

/** The cursor's instant: UTC with microseconds, e.g. `2026-08-26T10:00:00.123456Z` (whatever the session's DateStyle). */
const PG_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/**
 * Opaque page token: the last row's (changed_at as UTC text, listing_id). The
 * text keeps microseconds (a JavaScript Date would drop them and repeat rows); it goes
 * back as `text` and is cast in SQL, for the same reason.
 */
function encodeToken(cursor: string, listingId: string): string {
  return Buffer.from(JSON.stringify([cursor, listingId])).toString('base64url');
}

function decodeToken(token: string): [string, string] {
  try {
    const v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && PG_TIMESTAMP.test(v[0])) {
      return [v[0], v[1]];
    }
  } catch {
    // fall through
  }
  throw validationFailed([{ field: 'page_token', code: 'invalid' }]);
}

/** Search, map and guest feed: filters combine with AND; ordered by change time, then listing id. */
export async function searchPublicListings(sql: Sql, req: SearchPublicListingsRequest): Promise<{ listings: PublicListing[]; nextPageToken: string }> {
  // page_size (0 to 200) and the box's bounds are checked against catalog.proto's rules before this runs.
  // 0: the default page size (the largest, PAGE_SIZE_MAX, is catalog.proto's rule).
  const pageSize = req.pageSize === 0 ? PAGE_SIZE_DEFAULT : req.pageSize;
  const b = req.bounds;
  const after = req.pageToken ? decodeToken(req.pageToken) : null;
  const none = sql``;

  const rows = await sql<PublicRow[]>`
    select p.*, to_char(p.changed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor
    from catalog.properties p
    where ${publicOnly(sql)}
      ${req.text ? sql`and (p.name ilike ${likeLiteral(req.text)} or p.description ilike ${likeLiteral(req.text)})` : none}
      ${req.country ? sql`and p.address_country = ${req.country.toUpperCase()}` : none}
      ${req.city ? sql`and lower(p.address_city) = lower(${req.city})` : none}
      ${b ? sql`and p.latitude between ${b.minLatitude} and ${b.maxLatitude}` : none}
      ${
        b
          ? b.minLongitude <= b.maxLongitude
            ? sql`and p.longitude between ${b.minLongitude} and ${b.maxLongitude}`
            : sql`and (p.longitude >= ${b.minLongitude} or p.longitude <= ${b.maxLongitude})` // box across the antimeridian
          : none
      }
      ${req.minGuests !== undefined ? sql`and p.max_guests >= ${req.minGuests}` : none}
      ${req.amenities.length > 0 ? sql`and p.amenities @> ${req.amenities}::text[]` : none}
      ${req.updatedAfter ? sql`and p.changed_at > ${timestampDate(req.updatedAfter)}` : none}
      ${after ? sql`and (p.changed_at, p.listing_id) > (${after[0]}::text::timestamptz, ${after[1]})` : none}
    order by p.changed_at, p.listing_id
    limit ${pageSize + 1}
  `;
  const page = rows.slice(0, pageSize);
  const listings = await withPhotos(sql, page);
  const last = page[page.length - 1];
  return { listings, nextPageToken: rows.length > pageSize && last ? encodeToken(last.cursor, last.listing_id!) : '' };
}

/** The public listing page: undefined for sandbox, unlisted, unpublishable, marketplace-side and unknown ids alike. */
export async function getPublicListing(sql: Sql, listingId: string): Promise<PublicListing | undefined> {
  const rows = await sql<PublicRow[]>`
    select p.*, to_char(p.changed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor from catalog.properties p
    where p.listing_id = ${listingId} and ${publicOnly(sql)}
  `;
  const [listing] = await withPhotos(sql, rows);
  return listing;
}

/** A stored image of a publicly shown listing, or undefined. */
export async function getPublicPhoto(sql: Sql, photoId: string): Promise<{ content_type: string; width: number; height: number; bytes: Buffer } | undefined> {
  if (!/^[0-9a-f]{64}$/.test(photoId)) return undefined;
  const [row] = await sql<{ content_type: string; width: number; height: number; bytes: Buffer }[]>`
    select b.content_type, b.width, b.height, b.bytes
    from catalog.photo_blobs b
    where b.sha256 = ${photoId}
      and exists (
        select 1 from catalog.photos ph join catalog.properties p on p.id = ph.property_id
        where ph.blob_sha256 = b.sha256 and ph.state = 'processed' and ${publicOnly(sql)}
      )
  `;
  return row;
}

async function withPhotos(sql: Sql, rows: PublicRow[]): Promise<PublicListing[]> {
  if (rows.length === 0) return [];
  const photos = await sql<PublicPhotoRow[]>`
    select ph.property_id, ph.position, b.sha256, b.width, b.height, b.content_type
    from catalog.photos ph join catalog.photo_blobs b on b.sha256 = ph.blob_sha256
    where ph.property_id in ${sql(rows.map((r) => r.id))} and ph.state = 'processed'
    order by ph.property_id, ph.position, ph.ordinal
  `;
  const byProperty = new Map<string, PublicPhotoRow[]>();
  for (const ph of photos) byProperty.set(ph.property_id, [...(byProperty.get(ph.property_id) ?? []), ph]);
  return rows.map((p) =>
    create(PublicListingSchema, {
      listingId: p.listing_id!,
      name: p.name,
      description: p.description ?? undefined,
      propertyType: p.property_type,
      address: {
        city: p.address_city,
        region: p.address_region ?? undefined,
        country: p.address_country,
        latitude: p.latitude,
        longitude: p.longitude,
      },
      occupancy: { maxGuests: p.max_guests, bedrooms: p.bedrooms, beds: p.beds, bathrooms: p.bathrooms },
      baseRate: { value: p.base_rate_value ?? '', currency: p.base_rate_currency ?? '' },
      amenities: p.amenities,
      photos: (byProperty.get(p.id) ?? []).map((ph) => ({
        photoId: ph.sha256,
        position: ph.position,
        width: ph.width,
        height: ph.height,
        contentType: ph.content_type,
      })),
      checkInTime: p.check_in_time,
      checkOutTime: p.check_out_time,
      updatedAt: timestampFromDate(p.changed_at),
    }),
  );
}
