/**
 * UpsertProperty (spec: PUT /properties/{provider_id}): the body is the complete
 * property — replace, not merge. Everything happens in one transaction: the property
 * row, its photo rows, publication (publishability, listing id, listing event).
 *
 * Photos: one row per (property, URL). A URL already known for this property keeps
 * its row and its result (only its position is updated), so it is never fetched
 * again; a new URL gets a `pending` row the photo pipeline picks up after commit, or
 * is rejected at once as `forbidden_url` when the URL itself breaks the outbound
 * rules (not http/https, an IP literal, credentials); a URL no longer in the payload
 * loses its row. A URL sent twice is one photo, at the lowest position it was sent
 * with (the earlier occurrence on a tie).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Sql, Tx } from '../kit/db';
import { EgressError, PHOTO_URL_RULES, checkUrl } from '../kit/egress';
import { splitAmenities } from './amenities';
import type { EnvironmentName } from './workspaces';
import { republish } from './publication';
import { readPhotos, type PhotoRow, type PropertyRow } from './property-records';
import type { PropertyInput } from './property-input';

export interface UpsertOutcome {
  created: boolean;
  property: PropertyRow;
  photos: PhotoRow[];
  /** Listing events written; nudge the outbox relay when non-empty. */
  events: number;
  /** New photos waiting for the pipeline; nudge it when non-zero. */
  queuedPhotos: number;
}

interface PhotoPlan {
  url: string;
  position: number;
  ordinal: number;
  /** Set when the URL is refused without fetching. */
  rejection: 'forbidden_url' | null;
}

/** The photos as they will be stored: one per URL, with immediate refusals. */
function planPhotos(photos: PropertyInput['photos']): PhotoPlan[] {
  const byUrl = new Map<string, PhotoPlan>();
  photos.forEach((ph, ordinal) => {
    const seen = byUrl.get(ph.url);
    if (seen && seen.position <= ph.position) return;
    let rejection: PhotoPlan['rejection'] = null;
    try {
      checkUrl(ph.url, PHOTO_URL_RULES);
    } catch (err) {
      if (!(err instanceof EgressError)) throw err;
      rejection = 'forbidden_url';
    }
    byUrl.set(ph.url, { url: ph.url, position: ph.position, ordinal, rejection });
  });
  return [...byUrl.values()];
}

/** sha256 over the normalised property: equal hashes mean an identical push. */
function contentHash(p: PropertyInput, amenities: { recognised: string[]; unknown: string[] }, photos: PhotoPlan[]): string {
  const canonical = JSON.stringify([
    p.name,
    p.description,
    p.propertyType,
    [p.address.line1, p.address.city, p.address.region, p.address.postalCode, p.address.country, p.address.latitude, p.address.longitude],
    [p.occupancy.maxGuests, p.occupancy.bedrooms, p.occupancy.beds, p.occupancy.bathrooms],
    p.baseRate ? [p.baseRate.value, p.baseRate.currency] : null,
    amenities.recognised,
    amenities.unknown,
    photos.map((ph) => [ph.url, ph.position, ph.ordinal]),
    p.checkInTime,
    p.checkOutTime,
    p.status,
  ]);
  return createHash('sha256').update(canonical).digest('hex');
}

/** Creates or replaces the property `providerId` of `workspaceId`. */
export async function upsertProperty(sql: Sql, args: { workspaceId: string; providerId: string; environment: EnvironmentName; property: PropertyInput }): Promise<UpsertOutcome> {
  const p = args.property;
  const amenities = splitAmenities(p.amenities);
  const photos = planPhotos(p.photos);
  const columns = {
    name: p.name,
    description: p.description,
    property_type: p.propertyType,
    address_line1: p.address.line1,
    address_city: p.address.city,
    address_region: p.address.region,
    address_postal_code: p.address.postalCode,
    address_country: p.address.country,
    latitude: p.address.latitude,
    longitude: p.address.longitude,
    max_guests: p.occupancy.maxGuests,
    bedrooms: p.occupancy.bedrooms,
    beds: p.occupancy.beds,
    bathrooms: p.occupancy.bathrooms,
    base_rate_value: p.baseRate?.value ?? null,
    base_rate_currency: p.baseRate?.currency ?? null,
    check_in_time: p.checkInTime,
    check_out_time: p.checkOutTime,
    status: p.status,
    amenities: amenities.recognised,
    unknown_amenities: amenities.unknown,
    content_hash: contentHash(p, amenities, photos),
  };

  return sql.begin<UpsertOutcome>(async (tx) => {
    const { row, created, contentChanged } = await writeProperty(tx, args, columns);
    let current = await readPhotos(tx, row.id);
    const { changed: photosChanged, queued } = await syncPhotos(tx, row, current, photos);
    if (photosChanged) current = await readPhotos(tx, row.id);
    // Publishability depends only on the property and its photos' states; the pipeline
    // republishes when a state changes. An identical push therefore has nothing to redo.
    if (!contentChanged && !photosChanged) return { created, property: row, photos: current, events: 0, queuedPhotos: 0 };
    const result = await republish(tx, row, current, { contentChanged, photosChanged });
    return { created, property: result.property, photos: result.photos, events: result.events.length, queuedPhotos: queued };
  });
}

type Columns = Record<string, string | number | string[] | null>;

/**
 * Inserts or replaces the property row, locked for the rest of the transaction;
 * reports whether it was new and whether its content changed. An identical push
 * costs one statement (it only records the push time).
 */
async function writeProperty(
  tx: Tx,
  args: { workspaceId: string; providerId: string; environment: EnvironmentName },
  columns: Columns,
): Promise<{ row: PropertyRow; created: boolean; contentChanged: boolean }> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const [existing] = await tx<PropertyRow[]>`
      update catalog.properties set pushed_at = now()
      where workspace_id = ${args.workspaceId} and provider_id = ${args.providerId}
      returning *
    `;
    if (existing) {
      if (existing.content_hash === columns.content_hash) return { row: existing, created: false, contentChanged: false };
      const [row] = await tx<PropertyRow[]>`update catalog.properties set ${tx(columns)} where id = ${existing.id} returning *`;
      return { row: row!, created: false, contentChanged: true };
    }
    const [inserted] = await tx<PropertyRow[]>`
      insert into catalog.properties ${tx({
        ...columns,
        id: randomUUID(),
        workspace_id: args.workspaceId,
        provider_id: args.providerId,
        environment: args.environment,
      })}
      on conflict (workspace_id, provider_id) do nothing
      returning *
    `;
    if (inserted) return { row: inserted, created: true, contentChanged: true };
    // Another push of the same provider_id created it a moment ago: replace that one.
  }
  throw new Error('property row neither insertable nor updatable');
}

/**
 * Makes the photo rows match the payload (the property row is locked, so the photo
 * pipeline cannot settle a photo of it meanwhile); reports whether anything changed
 * and how many fetches were queued.
 */
async function syncPhotos(tx: Tx, property: Pick<PropertyRow, 'id' | 'workspace_id'>, existing: PhotoRow[], photos: PhotoPlan[]): Promise<{ changed: boolean; queued: number }> {
  const propertyId = property.id;
  const known = new Map(existing.map((e) => [e.url, e]));
  const wanted = new Set(photos.map((p) => p.url));
  const dropped = existing.filter((e) => !wanted.has(e.url)).map((e) => e.url);
  const added = photos.filter((p) => !known.has(p.url));
  const moved = photos.filter((p) => {
    const e = known.get(p.url);
    return e !== undefined && (e.position !== p.position || e.ordinal !== p.ordinal);
  });

  if (dropped.length > 0) {
    await tx`delete from catalog.photos where property_id = ${propertyId} and url in ${tx(dropped)}`;
  }
  if (added.length > 0) {
    await tx`
      insert into catalog.photos (property_id, workspace_id, url, position, ordinal, state, rejection_reason, finished_at)
      select ${propertyId}, ${property.workspace_id}, t.url, t.position, t.ordinal,
             case when t.rejection is null then 'pending' else 'rejected' end,
             t.rejection,
             case when t.rejection is null then null else now() end
      from unnest(${added.map((a) => a.url)}::text[], ${added.map((a) => a.position)}::int[],
                  ${added.map((a) => a.ordinal)}::int[], ${added.map((a) => a.rejection)}::text[])
           as t(url, position, ordinal, rejection)
    `;
  }
  if (moved.length > 0) {
    await tx`
      update catalog.photos ph set position = t.position, ordinal = t.ordinal
      from unnest(${moved.map((m) => m.url)}::text[], ${moved.map((m) => m.position)}::int[], ${moved.map((m) => m.ordinal)}::int[])
           as t(url, position, ordinal)
      where ph.property_id = ${propertyId} and ph.url = t.url
    `;
  }
  return {
    changed: dropped.length + added.length + moved.length > 0,
    queued: added.filter((a) => a.rejection === null).length,
  };
}
