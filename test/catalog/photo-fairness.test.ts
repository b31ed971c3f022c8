/**
 * Fair photo fetching (docs/catalog.md "Fair scheduling") against the
 * running system with a real slow photo host on loopback: it sends a byte a second
 * and the rest of a photo only when the test releases it (never silent long enough
 * for the fetch's silence limit), so "slow" lasts exactly as long as the test says and every
 * assertion is about which requests arrived, in what order and how many at once — no
 * wall-clock thresholds.
 *
 * - Tenant A pushes a property with many slow photos, then tenant B one with a fast
 *   photo: B becomes publishable while A's first photos are still open, and A never
 *   has more than PHOTO_WORKSPACE_CONCURRENCY fetches open.
 * - Two tenants with slow hosts fill every fast slot; once their fetches have run for
 *   SLOW_FETCH_MS they move to the slow lane, and a healthy tenant is served while
 *   every slow fetch is still open.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backends, createScratchDatabase, deleteBusStream, startSystem, stopAllSystems, uniqueBusPrefix, type ScratchDatabase } from '../support/system';
import { CATALOG_TEST_ENV, clientsFor, completeProperty, newWorkspace, pid, waitForPhotos, type Clients } from './support/catalog';
import { makeImage, startPhotoServer, type PhotoServer } from './support/photo-server';

jest.setTimeout(180000);

const CONCURRENCY = 4;
const PER_WORKSPACE = 2;

describe(`fair photo fetching (database: ${backends.database}, bus: ${backends.bus})`, () => {
  let dataDir: string;
  let db: ScratchDatabase | undefined;
  let busPrefix: string;
  let c: Clients;
  let host: PhotoServer;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'psync-photo-fairness-'));
    db = process.env.DATABASE_URL ? await createScratchDatabase() : undefined;
    busPrefix = uniqueBusPrefix();
    host = await startPhotoServer();
    const system = await startSystem({
      dataDir,
      env: {
        ...(db ? { DATABASE_URL: db.url } : {}),
        BUS_PREFIX: busPrefix,
        ...CATALOG_TEST_ENV,
        PHOTO_CONCURRENCY: String(CONCURRENCY),
        PHOTO_WORKSPACE_CONCURRENCY: String(PER_WORKSPACE),
        // Far beyond the test: a slow fetch ends only when the test releases it.
        PHOTO_FETCH_TIMEOUT_MS: '600000',
      },
    });
    c = clientsFor(system.internalUrl);
  });

  afterAll(async () => {
    c?.close();
    await stopAllSystems();
    await host?.close();
    await db?.drop();
    await deleteBusStream(busPrefix);
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** `n` slow photos under `/<dir>/` (a byte a second until released); returns their paths. */
  async function slowPhotos(dir: string, n: number): Promise<string[]> {
    const body = await makeImage(400, 400, 'jpeg', 70);
    const paths = Array.from({ length: n }, (_, i) => `/${dir}/${i}.jpg`);
    for (const p of paths) host.route(p, { kind: 'trickle', body });
    return paths;
  }

  const push = async (ws: string, id: string, paths: string[]) => {
    await c.catalog.upsertProperty({ workspaceId: ws, providerId: id, property: completeProperty(paths.map((p) => `${host.base}${p}`)) });
  };

  /** Paths under `/<dir>/` received so far. */
  const received = (dir: string) => host.arrivals().filter((p) => p.startsWith(`/${dir}/`));

  /** Waits until `n` requests under `/<dir>/` have arrived. */
  async function arrivedUnder(dir: string, n: number): Promise<void> {
    const deadline = Date.now() + 30000;
    while (received(dir).length < n) {
      if (Date.now() > deadline) throw new Error(`only ${received(dir).length} of ${n} requests under /${dir}/ arrived`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  test('a tenant with many slow photos holds at most its limit; another tenant’s fast photo is fetched at once', async () => {
    const [wsA, wsB] = [await newWorkspace(c.identity), await newWorkspace(c.identity)];
    const slow = await slowPhotos('a', 12);
    await host.image('/b/fast.jpg', 640, 480, 'jpeg', 71);
    const idA = pid('slow-a');
    const idB = pid('fast-b');

    await push(wsA, idA, slow);
    await arrivedUnder('a', PER_WORKSPACE);
    await push(wsB, idB, ['/b/fast.jpg']);

    const b = await waitForPhotos(c.catalog, wsB, idB);
    expect(b.publishable).toBe(true);
    // None of A's fetches has ended, so A has had exactly its limit and no more.
    expect(received('a')).toHaveLength(PER_WORKSPACE);
    expect(host.arrivals().filter((p) => p.startsWith('/a/') || p.startsWith('/b/'))).toEqual([...received('a'), '/b/fast.jpg']);

    for (const p of slow) host.release(p);
    const a = await waitForPhotos(c.catalog, wsA, idA);
    expect(a.publishable).toBe(true);
    expect(slow.map((p) => host.hits(p))).toEqual(slow.map(() => 1));
    expect(host.maxInFlight('/a/')).toBe(PER_WORKSPACE);
  });

  test('slow hosts hold the fast lane for SLOW_FETCH_MS at most: a healthy tenant gets workers while every slow fetch is still open', async () => {
    const [wsA, wsC, wsB] = [await newWorkspace(c.identity), await newWorkspace(c.identity), await newWorkspace(c.identity)];
    const slowA = await slowPhotos('lane-a', 6);
    const slowC = await slowPhotos('lane-c', 6);
    const body = await makeImage(500, 400, 'jpeg', 72);
    const fast = ['/lane-b/0.jpg', '/lane-b/1.jpg'];
    for (const p of fast) host.route(p, { kind: 'bytes', body, contentType: 'image/jpeg' });
    const idA = pid('lane-a');
    const idC = pid('lane-c');
    const idB = pid('lane-b');

    // A and C take every fast slot (PER_WORKSPACE each), then B queues two photos behind them.
    await push(wsA, idA, slowA);
    await push(wsC, idC, slowC);
    await arrivedUnder('lane-a', PER_WORKSPACE);
    await arrivedUnder('lane-c', PER_WORKSPACE);
    await push(wsB, idB, fast);

    // Nothing of A's or C's is answered: B is served only because their fetches moved
    // to the slow lane. Every one of them is still open when B is done (no time-out
    // freed a worker: PHOTO_FETCH_TIMEOUT_MS is far away), and none was added.
    const b = await waitForPhotos(c.catalog, wsB, idB);
    expect(b.publishable).toBe(true);
    expect(received('lane-b').sort()).toEqual([...fast].sort());
    expect([host.openNow('/lane-a/'), host.openNow('/lane-c/')]).toEqual([PER_WORKSPACE, PER_WORKSPACE]);
    expect([received('lane-a').length, received('lane-c').length]).toEqual([PER_WORKSPACE, PER_WORKSPACE]);

    for (const p of [...slowA, ...slowC]) host.release(p);
    const [a, cc] = await Promise.all([waitForPhotos(c.catalog, wsA, idA), waitForPhotos(c.catalog, wsC, idC)]);
    expect(a.publishable && cc.publishable).toBe(true);
    expect(host.maxInFlight('/lane-a/')).toBeLessThanOrEqual(PER_WORKSPACE);
    expect(host.maxInFlight('/lane-c/')).toBeLessThanOrEqual(PER_WORKSPACE);
    // Both lanes together.
    expect(host.maxInFlight('/')).toBeLessThanOrEqual(2 * CONCURRENCY);
  });
});
