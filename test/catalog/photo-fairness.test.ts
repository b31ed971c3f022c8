/**
 * Fair photo fetching (docs/catalog.md "Fair scheduling", issue 23 item 4) against the
 * running system with a real slow photo host on loopback: its answers are held until
 * the test releases them, so "slow" lasts exactly as long as the test says and every
 * assertion is about which requests arrived, in what order and how many at once — no
 * wall-clock thresholds.
 *
 * - Tenant A pushes a property with many slow photos, then tenant B one with a fast
 *   photo: B becomes publishable while A's first photos are still held, and A never
 *   has more than PHOTO_WORKSPACE_CONCURRENCY fetches open.
 * - Two tenants with slow hosts fill every worker; once they count as slow, the
 *   workers they free go to a healthy tenant (the shared slow lane), not back to them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SLOW_FETCH_MS } from '../../services/catalog/photo-lanes';
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

  /** `n` held (slow) photos under `/<dir>/`; returns their paths. */
  async function slowPhotos(dir: string, n: number): Promise<string[]> {
    const body = await makeImage(400, 400, 'jpeg', 70);
    const paths = Array.from({ length: n }, (_, i) => `/${dir}/${i}.jpg`);
    for (const p of paths) host.route(p, { kind: 'hold', body });
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

  test('tenants whose hosts are slow share one slow lane: the workers they free go to a healthy tenant first', async () => {
    const [wsA, wsC, wsB] = [await newWorkspace(c.identity), await newWorkspace(c.identity), await newWorkspace(c.identity)];
    const slowA = await slowPhotos('lane-a', 6);
    const slowC = await slowPhotos('lane-c', 6);
    const body = await makeImage(500, 400, 'jpeg', 72);
    const fast = ['/lane-b/0.jpg', '/lane-b/1.jpg'];
    for (const p of fast) host.route(p, { kind: 'bytes', body, contentType: 'image/jpeg' });
    const idA = pid('lane-a');
    const idC = pid('lane-c');
    const idB = pid('lane-b');

    // A and C take every worker (PER_WORKSPACE each), then B queues two photos behind them.
    await push(wsA, idA, slowA);
    await push(wsC, idC, slowC);
    await arrivedUnder('lane-a', PER_WORKSPACE);
    await arrivedUnder('lane-c', PER_WORKSPACE);
    await push(wsB, idB, fast);
    // Until their fetches have run past SLOW_FETCH_MS, A and C are not yet known slow.
    await new Promise((r) => setTimeout(r, SLOW_FETCH_MS + 1000));
    expect(received('lane-b')).toEqual([]);

    // One of A's and one of C's fetches end. Without the slow lane, B's second photo and
    // A's (older) third would be next in turn; with it, A and C (slow, 2 in flight: the
    // lane is full) wait and both workers go to B.
    const firstA = received('lane-a')[0]!;
    const firstC = received('lane-c')[0]!;
    const before = host.arrivals().length;
    host.release(firstA);
    host.release(firstC);
    const b = await waitForPhotos(c.catalog, wsB, idB);
    expect(b.publishable).toBe(true);
    const next = host.arrivals().slice(before);
    expect(next.slice(0, 2).sort()).toEqual([...fast].sort());
    expect(received('lane-a')).toHaveLength(PER_WORKSPACE);
    expect(received('lane-c')).toHaveLength(PER_WORKSPACE);

    for (const p of [...slowA, ...slowC]) host.release(p);
    const [a, cc] = await Promise.all([waitForPhotos(c.catalog, wsA, idA), waitForPhotos(c.catalog, wsC, idC)]);
    expect(a.publishable && cc.publishable).toBe(true);
    expect(host.maxInFlight('/lane-a/')).toBeLessThanOrEqual(PER_WORKSPACE);
    expect(host.maxInFlight('/lane-c/')).toBeLessThanOrEqual(PER_WORKSPACE);
    expect(host.maxInFlight('/')).toBeLessThanOrEqual(CONCURRENCY);
  });
});
