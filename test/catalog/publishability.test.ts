/**
 * Publishability, exactly per the spec's state table ("Property publishability"),
 * with real photos fetched from a local server and decoded by the running system:
 *
 * | incomplete (publishable false, listing_id null) | PUT | price, photos and amenities supplied and all photos processed | publishable true, listing_id set |
 * | publishable false with photos_processing        | photo fetching and processing finish | automatic | publishable true if nothing else is missing |
 * | any                                             | PUT | status unlisted | `unlisted` appears in missing |
 *
 * plus every `missing` reason, their order, the listing_id lifecycle (null until
 * first showable, then never changed) and every photo rejection reason.
 */
import { UpsertResult } from '../../gen/psync/common/v1/upsert_result_pb';
import { PropertyStatus } from '../../gen/psync/catalog/v1/catalog_pb';
import { backends, startSystem, stopAllSystems, type RunningSystem } from '../support/system';
import { CATALOG_TEST_ENV, clientsFor, completeProperty, missingNames, newWorkspace, pid, rejections, waitForPhotos, type Clients } from './support/catalog';
import { makeImage, startPhotoServer, type PhotoServer } from './support/photo-server';

jest.setTimeout(120000);

describe(`publishability (database: ${backends.database}, bus: ${backends.bus})`, () => {
  let system: RunningSystem;
  let c: Clients;
  let photos: PhotoServer;
  let ws: string;
  const url = (path: string) => `${photos.base}${path}`;

  beforeAll(async () => {
    photos = await startPhotoServer();
    await Promise.all([
      photos.image('/cover.jpg', 1200, 800, 'jpeg', 1),
      photos.image('/second.png', 800, 800, 'png', 2),
      photos.image('/third.webp', 600, 900, 'webp', 3),
      photos.image('/other.jpg', 1000, 700, 'jpeg', 4),
      photos.image('/small.jpg', 640, 299, 'jpeg', 5),
      photos.image('/tiny.png', 100, 100, 'png', 6),
      photos.image('/anim.gif', 800, 600, 'gif', 7),
    ]);
    photos.route('/text.jpg', { kind: 'bytes', body: Buffer.from('<html>definitely not a jpeg</html>'), contentType: 'image/jpeg' });
    const jpeg = await makeImage(1000, 1000, 'jpeg', 8);
    photos.route('/truncated.jpg', { kind: 'bytes', body: jpeg.subarray(0, Math.floor(jpeg.length / 2)), contentType: 'image/jpeg' });
    // A decompression bomb: a real JPEG whose frame header claims 12000 x 9000 (108 MP).
    const bomb = Buffer.from(await makeImage(400, 400, 'jpeg', 9));
    const sof = bomb.indexOf(Buffer.from([0xff, 0xc0]));
    bomb.writeUInt16BE(9000, sof + 5);
    bomb.writeUInt16BE(12000, sof + 7);
    photos.route('/megapixels.jpg', { kind: 'bytes', body: bomb, contentType: 'image/jpeg' });
    photos.route('/huge.jpg', { kind: 'stream', bytes: 26 * 1024 * 1024 }); // no Content-Length: cut while streaming
    photos.route('/huge-declared.jpg', { kind: 'bytes', body: Buffer.alloc(10), headers: { 'content-length': String(30 * 1024 * 1024) } });
    photos.route('/error.jpg', { kind: 'bytes', body: Buffer.from('boom'), status: 500 });
    photos.route('/moved.jpg', { kind: 'redirect', location: '/cover.jpg' });

    system = await startSystem({ env: { ...CATALOG_TEST_ENV } });
    c = clientsFor(system.internalUrl);
    ws = await newWorkspace(c.identity);
  });

  afterAll(async () => {
    c?.close();
    await stopAllSystems();
    await photos?.close();
  });

  const push = (id: string, property: ReturnType<typeof completeProperty>) => c.catalog.upsertProperty({ workspaceId: ws, providerId: id, property });

  test('row 1 + row 2: the first push of a complete property answers photos_processing; processing ends on its own and the listing id appears', async () => {
    const id = pid('complete');
    const first = await push(id, completeProperty([url('/cover.jpg'), url('/second.png'), url('/third.webp')]));
    expect(first.result).toBe(UpsertResult.CREATED);
    expect(first.publishable).toBe(false);
    expect(missingNames(first.missing)).toEqual(['photos_processing']);
    expect(first.listingId).toBeUndefined();
    expect(first.photosRejected).toEqual([]);

    // No partner action: just wait.
    const after = await waitForPhotos(c.catalog, ws, id);
    expect(after.publishable).toBe(true);
    expect(after.missing).toEqual([]);
    expect(after.listingId).toMatch(/^lst_[a-z2-7]{24}$/);
    expect(after.photos.every((p) => p.photoId)).toBe(true);

    // A push with the photos unchanged is publishable at once, with the same listing id.
    const again = await push(id, completeProperty([url('/cover.jpg'), url('/second.png'), url('/third.webp')], { name: 'Renamed' }));
    expect(again.result).toBe(UpsertResult.UPDATED);
    expect(again.publishable).toBe(true);
    expect(again.missing).toEqual([]);
    expect(again.listingId).toBe(after.listingId);
  });

  test('row 3: status unlisted puts `unlisted` in missing, alone or alongside real deficiencies', async () => {
    const id = pid('unlisted');
    await push(id, completeProperty([url('/cover.jpg')]));
    const listed = await waitForPhotos(c.catalog, ws, id);
    expect(listed.publishable).toBe(true);

    const unlisted = await push(id, completeProperty([url('/cover.jpg')], { status: PropertyStatus.UNLISTED }));
    expect(unlisted.publishable).toBe(false);
    expect(missingNames(unlisted.missing)).toEqual(['unlisted']);
    expect(unlisted.status).toBe(PropertyStatus.UNLISTED);
    expect(unlisted.listingId).toBe(listed.listingId);

    const worse = await push(id, completeProperty([url('/cover.jpg')], { status: PropertyStatus.UNLISTED, baseRate: undefined, amenities: [] }));
    expect(missingNames(worse.missing)).toEqual(['price', 'amenities', 'unlisted']);

    const relisted = await push(id, completeProperty([url('/cover.jpg')]));
    expect(relisted.publishable).toBe(true);
    expect(relisted.listingId).toBe(listed.listingId);
  });

  test('an unlisted complete property is never given a listing id (it cannot be shown to a guest)', async () => {
    const id = pid('never');
    await push(id, completeProperty([url('/cover.jpg')], { status: PropertyStatus.UNLISTED }));
    const after = await waitForPhotos(c.catalog, ws, id);
    expect(missingNames(after.missing)).toEqual(['unlisted']);
    expect(after.listingId).toBeUndefined();
  });

  test('each deficiency on its own', async () => {
    const noPrice = await push(pid(), completeProperty([], { baseRate: undefined }));
    expect(missingNames(noPrice.missing)).toEqual(['price', 'photos']);

    const id = pid('deficient');
    await push(id, completeProperty([url('/cover.jpg')]));
    await waitForPhotos(c.catalog, ws, id);
    const price = await push(id, completeProperty([url('/cover.jpg')], { baseRate: undefined }));
    expect(missingNames(price.missing)).toEqual(['price']);
    const amenities = await push(id, completeProperty([url('/cover.jpg')], { amenities: [] }));
    expect(missingNames(amenities.missing)).toEqual(['amenities']);
    const unknownOnly = await push(id, completeProperty([url('/cover.jpg')], { amenities: ['moat', 'drawbridge'] }));
    expect(missingNames(unknownOnly.missing)).toEqual(['amenities']);
    const noPhotos = await push(id, completeProperty([]));
    expect(missingNames(noPhotos.missing)).toEqual(['photos']);
  });

  test('everything missing: reasons come in the documented order', async () => {
    const res = await push(pid(), completeProperty([], { baseRate: undefined, amenities: [], status: PropertyStatus.UNLISTED }));
    expect(missingNames(res.missing)).toEqual(['price', 'amenities', 'photos', 'unlisted']);
    expect(res.publishable).toBe(false);
    expect(res.listingId).toBeUndefined();
  });

  test('cover_photo: the lowest-position photo was rejected; the other photos still count', async () => {
    const id = pid('cover');
    const p = completeProperty([url('/other.jpg'), url('/tiny.png')]);
    p.photos[0]!.position = 2;
    p.photos[1]!.position = 1; // the cover
    await push(id, p);
    const after = await waitForPhotos(c.catalog, ws, id);
    expect(missingNames(after.missing)).toEqual(['cover_photo']);
    expect(rejections(after)).toEqual([{ url: url('/tiny.png'), reason: 'too_small' }]);
    expect(after.listingId).toBeUndefined();

    // Moving a good photo in front fixes it, without re-fetching anything.
    const hits = photos.totalHits();
    p.photos[0]!.position = 0;
    const fixed = await push(id, p);
    expect(fixed.publishable).toBe(true);
    expect(rejections(fixed)).toEqual([{ url: url('/tiny.png'), reason: 'too_small' }]);
    expect(photos.totalHits()).toBe(hits);
  });

  test('photos: every photo rejected means both cover_photo and photos', async () => {
    const id = pid('allbad');
    await push(id, completeProperty([url('/tiny.png'), url('/text.jpg')]));
    const after = await waitForPhotos(c.catalog, ws, id);
    expect(missingNames(after.missing)).toEqual(['cover_photo', 'photos']);
  });

  test('a rejected photo other than the cover does not block publishing; it is reported in photos_rejected', async () => {
    const id = pid('somebad');
    await push(id, completeProperty([url('/cover.jpg'), url('/error.jpg')]));
    const after = await waitForPhotos(c.catalog, ws, id);
    expect(after.publishable).toBe(true);
    expect(rejections(after)).toEqual([{ url: url('/error.jpg'), reason: 'unreachable' }]);
    const again = await push(id, completeProperty([url('/cover.jpg'), url('/error.jpg')]));
    expect(again.publishable).toBe(true);
    expect(rejections(again)).toEqual([{ url: url('/error.jpg'), reason: 'unreachable' }]);
  });

  test('a new photo sends a published property back to photos_processing, keeping its listing id', async () => {
    const id = pid('adding');
    await push(id, completeProperty([url('/cover.jpg')]));
    const first = await waitForPhotos(c.catalog, ws, id);
    const adding = await push(id, completeProperty([url('/cover.jpg'), url('/second.png')]));
    expect(missingNames(adding.missing)).toEqual(['photos_processing']);
    expect(adding.publishable).toBe(false);
    expect(adding.listingId).toBe(first.listingId);
    const done = await waitForPhotos(c.catalog, ws, id);
    expect(done.publishable).toBe(true);
    expect(done.listingId).toBe(first.listingId);
  });

  test('listing_id, once set, never changes: through a regression and back', async () => {
    const id = pid('stable');
    await push(id, completeProperty([url('/cover.jpg')]));
    const { listingId } = await waitForPhotos(c.catalog, ws, id);
    expect(listingId).toBeDefined();
    const regressed = await push(id, completeProperty([], { baseRate: undefined }));
    expect(regressed.publishable).toBe(false);
    expect(regressed.listingId).toBe(listingId);
    const back = await push(id, completeProperty([url('/cover.jpg')]));
    expect(missingNames(back.missing)).toEqual(['photos_processing']); // the dropped photo is a new photo again
    const done = await waitForPhotos(c.catalog, ws, id);
    expect(done.publishable).toBe(true);
    expect(done.listingId).toBe(listingId);
  });

  describe('photo rejection reasons (photos_rejected entries {url, reason})', () => {
    const cases: [string, () => string, string][] = [
      ['unreachable: 404', () => url('/nowhere.jpg'), 'unreachable'],
      ['unreachable: 500', () => url('/error.jpg'), 'unreachable'],
      ['unreachable: a redirect is not followed', () => url('/moved.jpg'), 'unreachable'],
      ['unreachable: connection refused', () => 'http://localhost:1/a.jpg', 'unreachable'],
      ['unreachable: the name does not resolve', () => 'http://photos.invalid/a.jpg', 'unreachable'],
      ['forbidden_url: IP literal', () => `http://127.0.0.1:${photos.port}/cover.jpg`, 'forbidden_url'],
      ['forbidden_url: IPv6 literal', () => `http://[::1]:${photos.port}/cover.jpg`, 'forbidden_url'],
      ['forbidden_url: not http(s)', () => `ftp://localhost:${photos.port}/cover.jpg`, 'forbidden_url'],
      ['forbidden_url: credentials in the URL', () => `http://user:pw@localhost:${photos.port}/cover.jpg`, 'forbidden_url'],
      ['not_an_image: HTML served as image/jpeg', () => url('/text.jpg'), 'not_an_image'],
      ['not_an_image: truncated JPEG', () => url('/truncated.jpg'), 'not_an_image'],
      ['not_an_image: GIF is not accepted', () => url('/anim.gif'), 'not_an_image'],
      ['too_large: over 25 MiB while streaming', () => url('/huge.jpg'), 'too_large'],
      ['too_large: declared over 25 MiB', () => url('/huge-declared.jpg'), 'too_large'],
      ['too_large: over 100 megapixels', () => url('/megapixels.jpg'), 'too_large'],
      ['too_small: shorter side 299 px', () => url('/small.jpg'), 'too_small'],
      ['too_small: 100 x 100', () => url('/tiny.png'), 'too_small'],
    ];

    test.each(cases)('%s', async (_label, photoUrl, reason) => {
      const id = pid('reject');
      const u = photoUrl();
      const res = await push(id, completeProperty([url('/cover.jpg'), u]));
      if (reason === 'forbidden_url') {
        // Refused at push time, without any fetch.
        expect(rejections(res)).toEqual([{ url: u, reason }]);
      }
      const after = await waitForPhotos(c.catalog, ws, id);
      expect(rejections(after)).toEqual([{ url: u, reason }]);
      const status = after.photos.find((p) => p.url === u)!;
      expect(status.photoId).toBeUndefined();
      expect(after.publishable).toBe(true); // the cover is fine
      // And the next push reports it again, without fetching it again.
      const hits = photos.totalHits();
      const again = await push(id, completeProperty([url('/cover.jpg'), u]));
      expect(rejections(again)).toEqual([{ url: u, reason }]);
      expect(photos.totalHits()).toBe(hits);
    });

    test('JPEG, PNG and WebP are accepted and stored as a WebP derivative no larger than 2048 px', async () => {
      await photos.image('/large.jpg', 4000, 3000, 'jpeg', 11);
      const id = pid('formats');
      await push(id, completeProperty([url('/large.jpg'), url('/second.png'), url('/third.webp')]));
      const after = await waitForPhotos(c.catalog, ws, id);
      expect(after.photosRejected).toEqual([]);
      expect(after.photos.map((p) => [p.width, p.height, p.contentType])).toEqual([
        [2048, 1536, 'image/webp'],
        [800, 800, 'image/webp'],
        [600, 900, 'image/webp'],
      ]);
    });
  });
});
