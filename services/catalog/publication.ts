/**
 * Publication: after anything that can change whether a property can be shown —
 * a push, a photo result — recompute publishability, assign the listing id the first
 * time the property is publishable, and write the listing event, all inside the
 * transaction of the change (so the event exists exactly when the change committed).
 *
 * listing_id (spec "Property upsert response"): null until the property can first be
 * shown to a guest, then set and never changed — not by a later regression (the id is
 * kept, the listing leaves the public surfaces and `catalog.listing.unpublished` is
 * written), not by regaining publishability (`catalog.listing.updated`). Sandbox
 * properties get listing ids the same way (the sandbox contract addresses blocks by
 * listing_id); the public surfaces never show them.
 */
import type { Tx } from '../kit/db';
import { appendListingEvent, type ListingEventKind } from './events';
import { newListingId, type ListingRecord } from './listing-records';
import { readPhotos, readProperty, type PhotoRow, type PropertyRow } from './property-records';
import { assessPublishability } from './publishability';

export interface PublicationChange {
  /** The property's own fields changed (a push with a different body), or it was just created. */
  contentChanged: boolean;
  /** Its photo set changed (added, dropped, reordered) or a photo finished processing. */
  photosChanged: boolean;
}

export interface PublicationResult {
  property: PropertyRow;
  photos: PhotoRow[];
  /** Events written (0 or 1); the caller nudges the outbox relay after commit. */
  events: ListingEventKind[];
}

/**
 * Recomputes the publication state of `before` (a row the caller locked in `tx`,
 * with its current `photos`) and writes the consequences.
 */
export async function republish(tx: Tx, before: PropertyRow, photos: PhotoRow[], change: PublicationChange): Promise<PublicationResult> {
  const { publishable, missing } = assessPublishability({
    hasPrice: before.base_rate_value !== null,
    recognisedAmenities: before.amenities.length,
    photos,
    status: before.status,
  });

  let listingId = before.listing_id;
  let listingCreatedAt: Date | undefined;
  let event: ListingEventKind | null = null;
  if (!listingId && publishable) {
    listingId = newListingId();
    const [row] = await tx<{ created_at: Date }[]>`
      insert into catalog.listings (listing_id, workspace_id, environment, origin, property_id)
      values (${listingId}, ${before.workspace_id}, ${before.environment}, 'partner', ${before.id})
      returning created_at
    `;
    listingCreatedAt = row!.created_at;
    event = 'published';
  } else if (listingId) {
    if (before.publishable && !publishable) event = 'unpublished';
    else if (change.contentChanged || change.photosChanged || publishable !== before.publishable) event = 'updated';
  }

  const missingChanged = missing.join(',') !== before.missing.join(',');
  const changed = change.contentChanged || change.photosChanged || publishable !== before.publishable || missingChanged || listingId !== before.listing_id;
  let property = before;
  if (changed) {
    const [row] = await tx<PropertyRow[]>`
      update catalog.properties
      set publishable = ${publishable}, missing = ${missing}::text[], listing_id = ${listingId}, changed_at = now()
      where id = ${before.id}
      returning *
    `;
    property = row!;
  }
  if (event && listingId) {
    if (!listingCreatedAt) {
      const [row] = await tx<{ created_at: Date }[]>`select created_at from catalog.listings where listing_id = ${listingId}`;
      listingCreatedAt = row!.created_at;
    }
    await appendListingEvent(tx, event, partnerListing(property, listingCreatedAt), missing);
  }
  return { property, photos, events: event ? [event] : [] };
}

/** Reads and locks property `id` and its photos, then republishes it (the photo pipeline's entry). */
export async function republishById(tx: Tx, id: string, change: PublicationChange): Promise<PublicationResult> {
  const before = await readProperty(tx, id, true);
  if (!before) throw new Error(`republish: property ${id} vanished inside its transaction`);
  return republish(tx, before, await readPhotos(tx, id), change);
}

/** The listing record of a partner property that has a listing id. */
function partnerListing(p: PropertyRow, createdAt: Date): ListingRecord {
  return {
    listing_id: p.listing_id!,
    workspace_id: p.workspace_id,
    environment: p.environment,
    origin: 'partner',
    provider_id: p.provider_id,
    name: p.name,
    check_in_time: p.check_in_time,
    check_out_time: p.check_out_time,
    publishable: p.publishable,
    status: p.status,
    created_at: createdAt,
  };
}
