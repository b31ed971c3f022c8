/**
 * Stored partner properties and their photos: the row shapes and the queries that
 * read them (tagged-template SQL only: every value is a bound parameter).
 */
import type { Sql, Tx } from '../kit/db';
import type { MissingReason, PhotoState } from './publishability';

/** A `catalog.properties` row. */
export interface PropertyRow {
  id: string;
  workspace_id: string;
  provider_id: string;
  environment: 'sandbox' | 'production';
  name: string;
  description: string | null;
  property_type: string;
  address_line1: string;
  address_city: string;
  address_region: string | null;
  address_postal_code: string | null;
  address_country: string;
  latitude: number;
  longitude: number;
  max_guests: number;
  bedrooms: number;
  beds: number;
  bathrooms: number;
  base_rate_value: string | null;
  base_rate_currency: string | null;
  check_in_time: string;
  check_out_time: string;
  status: 'listed' | 'unlisted';
  amenities: string[];
  unknown_amenities: string[];
  content_hash: string;
  publishable: boolean;
  missing: MissingReason[];
  listing_id: string | null;
  created_at: Date;
  pushed_at: Date;
  changed_at: Date;
}

/** Rejection reasons of a photo (docs/contract-gaps.md "photos"). */
export type RejectionReason = 'unreachable' | 'forbidden_url' | 'not_an_image' | 'too_large' | 'too_small';

/** A `catalog.photos` row joined with its stored image, as the API shows it. */
export interface PhotoRow {
  url: string;
  position: number;
  ordinal: number;
  state: PhotoState;
  rejection_reason: RejectionReason | null;
  blob_sha256: string | null;
  width: number | null;
  height: number | null;
  content_type: string | null;
}

/** A property by id, optionally locked `for update`. */
export async function readProperty(q: Sql | Tx, id: string, lock = false): Promise<PropertyRow | undefined> {
  const db = q as Sql;
  const [row] = lock
    ? await db<PropertyRow[]>`select * from catalog.properties where id = ${id} for update`
    : await db<PropertyRow[]>`select * from catalog.properties where id = ${id}`;
  return row;
}

/** A property by its partner identifier inside one workspace. */
export async function findProperty(q: Sql | Tx, workspaceId: string, providerId: string): Promise<PropertyRow | undefined> {
  const db = q as Sql;
  const [row] = await db<PropertyRow[]>`
    select * from catalog.properties
    where workspace_id = ${workspaceId} and provider_id = ${providerId}
  `;
  return row;
}

/**
 * One page of a workspace's properties, ordered by provider_id in byte order (the same
 * on every backend), `limit` rows from `offset`.
 */
export async function propertyPage(q: Sql | Tx, workspaceId: string, limit: number, offset: number): Promise<PropertyRow[]> {
  const db = q as Sql;
  return db<PropertyRow[]>`
    select * from catalog.properties
    where workspace_id = ${workspaceId}
    order by provider_id collate "C"
    limit ${limit} offset ${offset}
  `;
}

/** The photos of several properties in one query, by property id, each cover first (as readPhotos). */
export async function readPhotosOf(q: Sql | Tx, propertyIds: readonly string[]): Promise<Map<string, PhotoRow[]>> {
  const out = new Map<string, PhotoRow[]>(propertyIds.map((id) => [id, []]));
  if (propertyIds.length === 0) return out;
  const db = q as Sql;
  const rows = await db<(PhotoRow & { property_id: string })[]>`
    select ph.property_id, ph.url, ph.position, ph.ordinal, ph.state, ph.rejection_reason, ph.blob_sha256,
           b.width, b.height, b.content_type
    from catalog.photos ph
    left join catalog.photo_blobs b on b.sha256 = ph.blob_sha256
    where ph.property_id = any(${propertyIds as string[]}::uuid[])
    order by ph.property_id, ph.position, ph.ordinal
  `;
  for (const { property_id: id, ...photo } of rows) out.get(id)?.push(photo);
  return out;
}

/** The photos of a property, cover first (position, then payload order). */
export async function readPhotos(q: Sql | Tx, propertyId: string): Promise<PhotoRow[]> {
  return (await readPhotosOf(q, [propertyId])).get(propertyId) ?? [];
}

/** `{url, reason}` of every rejected photo, in photo order. */
export function rejectedPhotos(photos: readonly PhotoRow[]): { url: string; reason: RejectionReason }[] {
  return photos.filter((p) => p.state === 'rejected' && p.rejection_reason).map((p) => ({ url: p.url, reason: p.rejection_reason! }));
}
