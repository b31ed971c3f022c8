/**
 * The publishability rules as a table (docs/catalog.md, "Publishability"): each
 * reason on its own, their order, and the photo states that do and do not block.
 */
import { assessPublishability, coverPhoto, MISSING_ORDER, type PhotoFact, type PublishabilityInput } from './publishability';

const photo = (position: number, state: PhotoFact['state'], ordinal = position): PhotoFact => ({ position, ordinal, state });
const complete: PublishabilityInput = { hasPrice: true, recognisedAmenities: 3, photos: [photo(0, 'processed'), photo(1, 'processed')], status: 'listed' };

describe('assessPublishability', () => {
  it.each<[string, Partial<PublishabilityInput>, string[]]>([
    ['complete and processed', {}, []],
    ['no price', { hasPrice: false }, ['price']],
    ['no recognised amenity', { recognisedAmenities: 0 }, ['amenities']],
    ['no photos sent', { photos: [] }, ['photos']],
    ['first push: every photo pending', { photos: [photo(0, 'pending'), photo(1, 'pending')] }, ['photos_processing']],
    ['one photo still pending', { photos: [photo(0, 'processed'), photo(1, 'pending')] }, ['photos_processing']],
    ['cover rejected, others fine', { photos: [photo(0, 'rejected'), photo(1, 'processed')] }, ['cover_photo']],
    ['cover rejected, others pending', { photos: [photo(0, 'rejected'), photo(1, 'pending')] }, ['cover_photo', 'photos_processing']],
    ['every photo rejected', { photos: [photo(0, 'rejected'), photo(1, 'rejected')] }, ['cover_photo', 'photos']],
    ['a non-cover photo rejected does not block', { photos: [photo(0, 'processed'), photo(1, 'rejected')] }, []],
    ['unlisted alone', { status: 'unlisted' }, ['unlisted']],
    ['unlisted alongside deficiencies', { status: 'unlisted', hasPrice: false, photos: [] }, ['price', 'photos', 'unlisted']],
    [
      'everything',
      { hasPrice: false, recognisedAmenities: 0, photos: [photo(0, 'rejected'), photo(1, 'pending')], status: 'unlisted' },
      ['price', 'amenities', 'cover_photo', 'photos_processing', 'unlisted'],
    ],
  ])('%s', (_label, change, missing) => {
    const r = assessPublishability({ ...complete, ...change });
    expect(r.missing).toEqual(missing);
    expect(r.publishable).toBe(missing.length === 0);
  });

  it('reports reasons in the documented order', () => {
    expect(MISSING_ORDER).toEqual(['price', 'amenities', 'cover_photo', 'photos', 'photos_processing', 'unlisted']);
  });

  it('the cover is the lowest position, ties broken by payload order', () => {
    expect(coverPhoto([photo(3, 'processed', 0), photo(1, 'rejected', 1), photo(1, 'processed', 2)])).toEqual(photo(1, 'rejected', 1));
    expect(coverPhoto([])).toBeUndefined();
  });
});
