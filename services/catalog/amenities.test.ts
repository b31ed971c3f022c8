/**
 * The amenity vocabulary as data: size, shape, the required slugs, and the split of
 * a payload into recognised and unknown slugs.
 */
import { AMENITIES, isKnownAmenity, splitAmenities } from './amenities';
import { newListingId } from './listing-records';

describe('amenity vocabulary', () => {
  it('has at least 150 unique snake_case slugs with a name and category, ordered by slug', () => {
    expect(AMENITIES.length).toBeGreaterThanOrEqual(150);
    const slugs = AMENITIES.map((a) => a.slug);
    expect(new Set(slugs).size).toBe(slugs.length);
    expect([...slugs].sort()).toEqual(slugs);
    for (const a of AMENITIES) {
      expect(a.slug).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
      expect(a.name.length).toBeGreaterThan(0);
      expect(a.category).toMatch(/^[a-z]+(_[a-z]+)*$/);
    }
  });

  it('includes every slug docs/contract-gaps.md "amenity vocabulary" requires', () => {
    for (const s of [
      'wifi',
      'kitchen',
      'heating',
      'washer',
      'dryer',
      'tv',
      'parking',
      'air_conditioning',
      'pool',
      'hot_tub',
      'elevator',
      'crib',
      'smoke_alarm',
      'carbon_monoxide_alarm',
      'workspace',
    ]) {
      expect(isKnownAmenity(s)).toBe(true);
    }
  });

  it('splits a payload into recognised and unknown slugs, keeping order and dropping repeats', () => {
    expect(splitAmenities(['moat', 'wifi', 'moat', 'pool', 'Wifi', 'wifi'])).toEqual({ recognised: ['wifi', 'pool'], unknown: ['moat', 'Wifi'] });
  });
});

describe('listing ids', () => {
  it('are lst_ and 24 base32 characters, and unique', () => {
    const ids = new Set(Array.from({ length: 1000 }, newListingId));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^lst_[a-z2-7]{24}$/);
  });
});
