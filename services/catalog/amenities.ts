/**
 * The curated amenity vocabulary (docs/contract-gaps.md "amenity vocabulary": at least
 * 150 snake_case slugs). The data lives in amenities.json ({slug, name, category}, ordered by slug);
 * where it comes from is documented in docs/amenities.md. It is checked when the
 * module loads, so a bad edit fails start-up and the unit test rather than a push.
 */
import vocabulary from './amenities.json';

/** One amenity of the vocabulary. */
export interface AmenityEntry {
  slug: string;
  name: string;
  category: string;
}

const SLUG = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

function load(entries: AmenityEntry[]): readonly AmenityEntry[] {
  const seen = new Set<string>();
  for (const a of entries) {
    if (!SLUG.test(a.slug)) throw new Error(`amenities.json: "${a.slug}" is not a snake_case slug`);
    if (seen.has(a.slug)) throw new Error(`amenities.json: "${a.slug}" appears twice`);
    if (!a.name || !SLUG.test(a.category)) throw new Error(`amenities.json: "${a.slug}" needs a name and a snake_case category`);
    seen.add(a.slug);
  }
  return Object.freeze([...entries].sort((x, y) => (x.slug < y.slug ? -1 : x.slug > y.slug ? 1 : 0)));
}

/** The whole vocabulary, ordered by slug. */
export const AMENITIES: readonly AmenityEntry[] = load(vocabulary);

const known = new Set(AMENITIES.map((a) => a.slug));

/** True if `slug` is in the vocabulary. */
export function isKnownAmenity(slug: string): boolean {
  return known.has(slug);
}

/**
 * Splits the slugs a partner sent into the recognised ones (linked to the property)
 * and the unknown ones (reported in `unknown_amenities`, never a failure). Both keep
 * the payload's order; a slug sent twice counts once.
 */
export function splitAmenities(slugs: readonly string[]): { recognised: string[]; unknown: string[] } {
  const recognised: string[] = [];
  const unknown: string[] = [];
  const seen = new Set<string>();
  for (const s of slugs) {
    if (seen.has(s)) continue;
    seen.add(s);
    (known.has(s) ? recognised : unknown).push(s);
  }
  return { recognised, unknown };
}
