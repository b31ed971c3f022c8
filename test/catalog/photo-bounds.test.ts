/**
 * Photo memory bounds against the running system (docs/catalog.md "Memory
 * bounds"): decompression bombs are rejected `too_large` on their header, without
 * being decoded, settled once and never fetched again; a progressive JPEG over the
 * progressive ceiling is rejected while a baseline JPEG of the same size is
 * processed; the ordinary photos next to them become ready.
 *
 * That memory actually stays bounded under load is bench/photo-memory.ts's job.
 */
import { PhotoState } from '../../gen/psync/catalog/v1/catalog_pb';
import { backends, logEvents, startSystem, stopAllSystems, type RunningSystem } from '../support/system';
import { CATALOG_TEST_ENV, clientsFor, completeProperty, newWorkspace, pid, rejections, waitForPhotos, type Clients } from './support/catalog';
import { makeImage, startPhotoServer, type PhotoServer } from './support/photo-server';
import { flatImage, headerBomb } from './support/photo-bombs';
import { holdsFor } from '../support/eventually';

jest.setTimeout(180000);

const LEASE_SECONDS = 2;

describe(`photo memory bounds (database: ${backends.database}, bus: ${backends.bus})`, () => {
  let system: RunningSystem;
  let c: Clients;
  let host: PhotoServer;
  let ws: string;

  const serve = (path: string, body: Buffer, type = 'image/jpeg') => host.route(path, { kind: 'bytes', body, contentType: type });
  const push = (id: string, paths: string[]) => c.catalog.upsertProperty({ workspaceId: ws, providerId: id, property: completeProperty(paths.map((p) => `${host.base}${p}`)) });

  beforeAll(async () => {
    host = await startPhotoServer();
    await host.image('/cover.jpg', 1200, 800, 'jpeg', 3);
    await host.image('/second.png', 900, 600, 'png', 4);
    // Header bombs: small real images whose header claims a huge size. Decoded, they
    // would not even be what the header says; judged on the header, they are too large.
    serve('/bomb-progressive.jpg', await headerBomb('progressive-jpeg', 10000, 10000));
    serve('/bomb-baseline.jpg', await headerBomb('baseline-jpeg', 12000, 12000));
    serve('/bomb.png', await headerBomb('png', 20000, 20000), 'image/png');
    serve('/bomb-interlaced.png', await headerBomb('interlaced-png', 8000, 8000), 'image/png');
    // Real images of the same size (56 MP, one colour: a few hundred KB each).
    serve('/big-progressive.jpg', await flatImage('progressive-jpeg', 8000, 7000, 1));
    serve('/big-baseline.jpg', await flatImage('baseline-jpeg', 8000, 7000, 1));
    system = await startSystem({ env: { ...CATALOG_TEST_ENV, PHOTO_LEASE_SECONDS: String(LEASE_SECONDS), PHOTO_CONCURRENCY: '4' } });
    c = clientsFor(system.internalUrl);
    ws = await newWorkspace(c.identity);
  });

  afterAll(async () => {
    c?.close();
    await stopAllSystems();
    await host?.close();
  });

  const bombs = ['/bomb-progressive.jpg', '/bomb-baseline.jpg', '/bomb.png', '/bomb-interlaced.png'];
  let bombProperty: string;

  test('bombs are rejected too_large on their header; the ordinary photos of the same property become ready', async () => {
    bombProperty = pid('bombs');
    await push(bombProperty, ['/cover.jpg', ...bombs, '/second.png']);
    const after = await waitForPhotos(c.catalog, ws, bombProperty);
    expect(rejections(after)).toEqual(bombs.map((p) => ({ url: `${host.base}${p}`, reason: 'too_large' })));
    expect(after.photos.filter((p) => p.state === PhotoState.PROCESSED).map((p) => new URL(p.url).pathname)).toEqual(['/cover.jpg', '/second.png']);
    expect(after.publishable).toBe(true); // a rejected non-cover photo does not block
    for (const p of bombs) expect(host.hits(p)).toBe(1);
  });

  test('a rejected bomb is never claimed again: not after its lease would have run out, not on a re-push', async () => {
    const hits = bombs.map((p) => host.hits(p));
    // Several lease periods: a photo left pending (or re-queued) would be claimed again meanwhile.
    const unchanged = () => bombs.every((p, i) => host.hits(p) === hits[i]);
    await holdsFor('no rejected photo fetched again over three lease periods', unchanged, LEASE_SECONDS * 3 * 1000);
    const again = await push(bombProperty, ['/cover.jpg', ...bombs, '/second.png']);
    expect(rejections(again)).toEqual(bombs.map((p) => ({ url: `${host.base}${p}`, reason: 'too_large' })));
    expect(again.publishable).toBe(true);
    await holdsFor('no rejected photo fetched again after a re-push', unchanged, LEASE_SECONDS * 1000);
    const state = await c.catalog.getProperty({ workspaceId: ws, providerId: bombProperty });
    expect(state.photos.filter((p) => p.state === PhotoState.PENDING)).toEqual([]);
  });

  test('a progressive JPEG over the progressive ceiling (56 MP) is rejected; a baseline JPEG of the same size is processed', async () => {
    const id = pid('progressive');
    await push(id, ['/cover.jpg', '/big-progressive.jpg', '/big-baseline.jpg']);
    const after = await waitForPhotos(c.catalog, ws, id);
    expect(rejections(after)).toEqual([{ url: `${host.base}/big-progressive.jpg`, reason: 'too_large' }]);
    expect(after.photos.find((p) => p.url.endsWith('/big-baseline.jpg'))).toMatchObject({ state: PhotoState.PROCESSED, width: 2048, height: 1792 }); // the derivative's size
    expect(host.hits('/big-progressive.jpg')).toBe(1);
    const logged = logEvents(system.logs(), 'catalog.photo.rejected').map((l) => l.detail);
    expect(logged).toContain('8000x7000 progressive JPEG is over 50 megapixels (decoded whole into memory)');
  });

  test('ordinary photos keep flowing: a batch of them all become ready', async () => {
    const paths = Array.from({ length: 8 }, (_, i) => `/normal-${i}.jpg`);
    for (const [i, p] of paths.entries()) serve(p, await makeImage(1600, 1067, 'jpeg', 20 + i));
    const id = pid('normal');
    await push(id, paths);
    const after = await waitForPhotos(c.catalog, ws, id);
    expect(after.photos.map((p) => p.state)).toEqual(paths.map(() => PhotoState.PROCESSED));
    expect(after.publishable).toBe(true);
  });
});
