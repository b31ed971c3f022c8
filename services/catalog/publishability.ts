/**
 * Publishability (spec: "Property publishability"; upsert response `publishable`,
 * `missing`). A pure function of the stored property and the states of its photos,
 * recomputed after every push and every photo result.
 *
 * What each reason means (docs/catalog.md):
 * - `price`: no `base_rate`.
 * - `amenities`: no recognised amenity (unknown slugs do not count).
 * - `cover_photo`: photos were sent and the cover — the lowest `position`, ties
 *   broken by payload order — was rejected, so it cannot be shown.
 * - `photos`: no photo can be shown and none is still on its way: none sent, or
 *   every one rejected.
 * - `photos_processing`: at least one photo is still being fetched. Not a
 *   deficiency; it clears on its own (spec). A rejected photo other than the cover
 *   does not block: it is reported in `photos_rejected` and simply not shown.
 * - `unlisted`: `status` is `unlisted`; reported alongside any real deficiency.
 *
 * `publishable` is true exactly when `missing` is empty. Reasons always come in the
 * order above.
 */

/** A reason `publishable` is false, in its public spelling. */
export type MissingReason = 'price' | 'amenities' | 'cover_photo' | 'photos' | 'photos_processing' | 'unlisted';

/** The order reasons are reported in. */
export const MISSING_ORDER: readonly MissingReason[] = ['price', 'amenities', 'cover_photo', 'photos', 'photos_processing', 'unlisted'];

export type PhotoState = 'pending' | 'processed' | 'rejected';

/** What publishability needs to know about one photo. */
export interface PhotoFact {
  position: number;
  /** Index in the payload; breaks ties between equal positions. */
  ordinal: number;
  state: PhotoState;
}

export interface PublishabilityInput {
  hasPrice: boolean;
  recognisedAmenities: number;
  photos: readonly PhotoFact[];
  status: 'listed' | 'unlisted';
}

export interface Publishability {
  publishable: boolean;
  missing: MissingReason[];
}

/** The cover photo: lowest position, then earliest in the payload. */
export function coverPhoto<T extends PhotoFact>(photos: readonly T[]): T | undefined {
  let cover: T | undefined;
  for (const p of photos) {
    if (!cover || p.position < cover.position || (p.position === cover.position && p.ordinal < cover.ordinal)) cover = p;
  }
  return cover;
}

/** Computes `publishable` and `missing` (see the file comment for each reason). */
export function assessPublishability(input: PublishabilityInput): Publishability {
  const missing = new Set<MissingReason>();
  if (!input.hasPrice) missing.add('price');
  if (input.recognisedAmenities === 0) missing.add('amenities');
  const cover = coverPhoto(input.photos);
  if (cover?.state === 'rejected') missing.add('cover_photo');
  const processed = input.photos.some((p) => p.state === 'processed');
  const pending = input.photos.some((p) => p.state === 'pending');
  if (!processed && !pending) missing.add('photos');
  if (pending) missing.add('photos_processing');
  if (input.status === 'unlisted') missing.add('unlisted');
  const ordered = MISSING_ORDER.filter((r) => missing.has(r));
  return { publishable: ordered.length === 0, missing: ordered };
}
