/**
 * The photo pipeline against the running system, with hits counted on the photo
 * hosts: each new URL fetched once per property, an unchanged URL never again (across
 * pushes, reorders and restarts), dropped photos dropped, bounded concurrency, HTTPS
 * with a CA given through NODE_EXTRA_CA_CERTS, and resumption after the system is
 * SIGKILLed while a slow photo host holds the request.
 *
 * The system is restarted on the same database (a DATA_DIR for the embedded default,
 * a scratch database on a real server) and the same bus prefix.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PhotoState } from '../../gen/psync/catalog/v1/catalog_pb';
import { backends, createScratchDatabase, deleteBusStream, startSystem, stopAllSystems, uniqueBusPrefix, type RunningSystem, type ScratchDatabase } from '../support/system';
import { CATALOG_TEST_ENV, clientsFor, completeProperty, missingNames, newWorkspace, pid, rejections, waitForPhotos, type Clients } from './support/catalog';
import { makeImage, startPhotoServer, type PhotoServer } from './support/photo-server';
import { createCertificates } from '../support/tls';
import { holdsFor } from '../support/eventually';

jest.setTimeout(180000);

const LEASE_SECONDS = 3;
const CONCURRENCY = 2;

describe(`photo pipeline (database: ${backends.database}, bus: ${backends.bus})`, () => {
  let dataDir: string;
  let db: ScratchDatabase | undefined;
  let busPrefix: string;
  let caFile: string;
  let system: RunningSystem;
  let c: Clients;
  let http: PhotoServer;
  let https: PhotoServer;
  let untrusted: PhotoServer;
  let ws: string;

  async function start(): Promise<void> {
    system = await startSystem({
      dataDir,
      env: {
        ...(db ? { DATABASE_URL: db.url } : {}),
        BUS_PREFIX: busPrefix,
        ...CATALOG_TEST_ENV,
        NODE_EXTRA_CA_CERTS: caFile,
        PHOTO_LEASE_SECONDS: String(LEASE_SECONDS),
        PHOTO_CONCURRENCY: String(CONCURRENCY),
      },
    });
    c = clientsFor(system.internalUrl);
  }

  async function restart(signal: NodeJS.Signals): Promise<void> {
    c.close();
    await system.stop(signal);
    await start();
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'psync-catalog-photos-'));
    db = process.env.DATABASE_URL ? await createScratchDatabase() : undefined;
    busPrefix = uniqueBusPrefix();
    const pki = await createCertificates();
    caFile = pki.caFile;
    http = await startPhotoServer();
    https = await startPhotoServer(pki);
    untrusted = await startPhotoServer(await createCertificates()); // signed by a CA the system does not know
    for (const [i, path] of ['/a.jpg', '/b.jpg', '/c.jpg', '/d.jpg', '/e.jpg'].entries()) await http.image(path, 800, 600, 'jpeg', 40 + i);
    await https.image('/secure.jpg', 1024, 768, 'jpeg', 50);
    await untrusted.image('/secure.jpg', 1024, 768, 'jpeg', 51);
    await start();
    ws = await newWorkspace(c.identity);
  });

  afterAll(async () => {
    c?.close();
    await stopAllSystems();
    await Promise.all([http?.close(), https?.close(), untrusted?.close()]);
    await db?.drop();
    await deleteBusStream(busPrefix);
    rmSync(dataDir, { recursive: true, force: true });
  });

  const push = (id: string, urls: string[], over: Parameters<typeof completeProperty>[1] = {}) =>
    c.catalog.upsertProperty({ workspaceId: ws, providerId: id, property: completeProperty(urls, over) });

  test('each new URL is fetched once; an unchanged URL is never fetched again, whatever else changes', async () => {
    const id = pid('once');
    const a = `${http.base}/a.jpg`;
    const b = `${http.base}/b.jpg`;
    await push(id, [a]);
    await waitForPhotos(c.catalog, ws, id);
    expect(http.hits('/a.jpg')).toBe(1);

    await push(id, [a]);
    await push(id, [a], { name: 'Other name', amenities: ['pool'] });
    const added = await push(id, [b, a]); // reordered, one new
    expect(missingNames(added.missing)).toEqual(['photos_processing']);
    await waitForPhotos(c.catalog, ws, id);
    await push(id, [a, b]);
    await push(id, [a, b]);
    const done = await waitForPhotos(c.catalog, ws, id);
    expect(done.publishable).toBe(true);
    expect(http.hits('/a.jpg')).toBe(1);
    expect(http.hits('/b.jpg')).toBe(1);
  });

  test('the same URL on two properties is fetched once per property (results are per property)', async () => {
    const url = `${http.base}/c.jpg`;
    const one = pid('one');
    const two = pid('two');
    await push(one, [url]);
    await push(two, [url]);
    const [r1, r2] = await Promise.all([waitForPhotos(c.catalog, ws, one), waitForPhotos(c.catalog, ws, two)]);
    expect(http.hits('/c.jpg')).toBe(2);
    // The stored image is content-addressed: one blob, same photo id.
    expect(r1.photos[0]!.photoId).toBe(r2.photos[0]!.photoId);
  });

  test('a photo dropped from the payload is dropped (rejected ones too); sending it again later is a new fetch', async () => {
    const id = pid('drop');
    const keep = `${http.base}/a.jpg`;
    const gone = `${http.base}/d.jpg`;
    const bad = `${http.base}/missing.jpg`;
    await push(id, [keep, gone, bad]);
    const first = await waitForPhotos(c.catalog, ws, id);
    expect(first.photos).toHaveLength(3);
    expect(rejections(first)).toEqual([{ url: bad, reason: 'unreachable' }]);

    const res = await push(id, [keep]);
    expect(res.photosRejected).toEqual([]);
    expect(res.publishable).toBe(true);
    const after = await c.catalog.getProperty({ workspaceId: ws, providerId: id });
    expect(after.photos.map((p) => p.url)).toEqual([keep]);
    expect(after.property!.photos.map((p) => p.url)).toEqual([keep]);

    const dHits = http.hits('/d.jpg');
    await push(id, [keep, gone]);
    await waitForPhotos(c.catalog, ws, id);
    expect(http.hits('/d.jpg')).toBe(dHits + 1);
  });

  test('HTTPS photo hosts: trusted through NODE_EXTRA_CA_CERTS; an unknown CA makes the photo unreachable', async () => {
    const id = pid('tls');
    const good = `${https.base}/secure.jpg`;
    const bad = `${untrusted.base}/secure.jpg`;
    await push(id, [good, bad]);
    const after = await waitForPhotos(c.catalog, ws, id);
    expect(after.photos.find((p) => p.url === good)).toMatchObject({ state: PhotoState.PROCESSED, width: 1024, height: 768 });
    expect(rejections(after)).toEqual([{ url: bad, reason: 'unreachable' }]);
    expect(after.publishable).toBe(true);
    expect(https.hits('/secure.jpg')).toBe(1);
  });

  test(`bounded concurrency: at most PHOTO_CONCURRENCY (${CONCURRENCY}) fetches in flight`, async () => {
    const body = await makeImage(500, 500, 'jpeg', 60);
    const paths = ['/h1.jpg', '/h2.jpg', '/h3.jpg', '/h4.jpg', '/h5.jpg'];
    for (const p of paths) http.route(p, { kind: 'hold', body });
    const id = pid('bounded');
    await push(
      id,
      paths.map((p) => `${http.base}${p}`),
    );
    const held = () => paths.reduce((n, p) => n + http.hits(p), 0);
    const deadline = Date.now() + 15000;
    while (held() < CONCURRENCY && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(held()).toBe(CONCURRENCY);
    await holdsFor('no fetch beyond the concurrency bound', () => held() === CONCURRENCY, 1500);
    for (const p of paths) http.release(p);
    const after = await waitForPhotos(c.catalog, ws, id);
    expect(after.publishable).toBe(true);
    expect(paths.map((p) => http.hits(p))).toEqual([1, 1, 1, 1, 1]);
  });

  test('never re-fetched across a restart; a fetch interrupted by SIGTERM is resumed by the next start', async () => {
    const id = pid('restart');
    const a = `${http.base}/e.jpg`;
    await push(id, [a]);
    const before = await waitForPhotos(c.catalog, ws, id);
    expect(http.hits('/e.jpg')).toBe(1);

    http.route('/drain.jpg', { kind: 'hold', body: await makeImage(700, 700, 'jpeg', 61) });
    const drainId = pid('drain');
    await push(drainId, [`${http.base}/drain.jpg`]);
    await http.waitForHits('/drain.jpg', 1);

    await restart('SIGTERM');
    const again = await push(id, [a]);
    expect(again.publishable).toBe(true);
    expect(again.listingId).toBe(before.listingId);
    expect(http.hits('/e.jpg')).toBe(1);

    http.release('/drain.jpg');
    const t0 = Date.now();
    const drained = await waitForPhotos(c.catalog, ws, drainId);
    expect(drained.publishable).toBe(true);
    expect(http.hits('/drain.jpg')).toBe(2);
    expect(Date.now() - t0).toBeLessThan(30000);
  });

  test('resumption after a crash: SIGKILL while the photo host holds the request, restart, processing completes', async () => {
    http.route('/slow.jpg', { kind: 'hold', body: await makeImage(900, 900, 'jpeg', 62) });
    const id = pid('crash');
    const first = await push(id, [`${http.base}/slow.jpg`, `${http.base}/a.jpg`]);
    expect(missingNames(first.missing)).toEqual(['photos_processing']);
    await http.waitForHits('/slow.jpg', 1);

    await restart('SIGKILL');
    const during = await c.catalog.getProperty({ workspaceId: ws, providerId: id });
    expect(during.photos.find((p) => p.url.endsWith('/slow.jpg'))!.state).toBe(PhotoState.PENDING);

    // The dead worker's claim runs out after PHOTO_LEASE_SECONDS; then the photo is fetched again.
    http.release('/slow.jpg');
    const after = await waitForPhotos(c.catalog, ws, id);
    expect(after.publishable).toBe(true);
    expect(after.missing).toEqual([]);
    expect(after.listingId).toMatch(/^lst_/);
    expect(after.photos.every((p) => p.state === PhotoState.PROCESSED)).toBe(true);
    expect(http.hits('/slow.jpg')).toBe(2); // the one lost with the crash, and the retry
  });
});
