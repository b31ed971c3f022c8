/**
 * Fair photo fetching with two catalog replicas (one process per service, as
 * Kubernetes runs it; needs DATABASE_URL and NATS_URL): both replicas claim from the
 * same queue, each keeps the per-workspace limit for its own workers, a slow tenant's
 * photos never hold a healthy tenant back, and no photo is fetched twice (the lease
 * queue's lock, which passes over rows another replica holds, and its re-check hold
 * across replicas). The slow host sends a byte a second
 * until the test releases a photo; no assertion is about time.
 */
import { PhotoState } from '../../gen/psync/catalog/v1/catalog_pb';
import { internalClients, type InternalClients } from '../support/internal-clients';
import { canSplit, startSplitSystem, type SplitSystem } from '../support/split-system';
import { freePort, startSystem, type RunningSystem } from '../support/system';
import { completeProperty, newWorkspace, pid, waitForPhotos } from './support/catalog';
import { makeImage, startPhotoServer, type PhotoServer } from './support/photo-server';

jest.setTimeout(240_000);

const REPLICAS = 2;
const PER_WORKSPACE = 1;

(canSplit ? describe : describe.skip)('fair photo fetching with two catalog replicas (needs DATABASE_URL and NATS_URL)', () => {
  let split: SplitSystem;
  let second: RunningSystem;
  let host: PhotoServer;
  const opened: InternalClients[] = [];
  const at = (url: string) => {
    const c = internalClients(url);
    opened.push(c);
    return c;
  };

  beforeAll(async () => {
    host = await startPhotoServer();
    split = await startSplitSystem({
      EGRESS_ALLOW_CIDRS: '127.0.0.0/8',
      DATABASE_POOL_SIZE: '3',
      PHOTO_CONCURRENCY: '2',
      PHOTO_WORKSPACE_CONCURRENCY: String(PER_WORKSPACE),
      PHOTO_FETCH_TIMEOUT_MS: '600000',
    });
    second = await startSystem({ role: 'catalog', env: { ...split.shared, INTERNAL_PORT: String(await freePort()) } });
  }, 240_000);

  afterAll(async () => {
    for (const c of opened) c.close();
    await second?.stop();
    await split?.stop();
    await host?.close();
  });

  test('a healthy tenant is served while a slow tenant holds at most its limit on each replica; each photo is fetched once', async () => {
    const identity = at(split.urls.identity).identity;
    const one = at(split.urls.catalog).catalog;
    const two = at(second.internalUrl).catalog;
    const [wsA, wsB] = [await newWorkspace(identity), await newWorkspace(identity)];
    const slowBody = await makeImage(400, 400, 'jpeg', 80);
    const slow = Array.from({ length: 8 }, (_, i) => `/split-a/${i}.jpg`);
    for (const p of slow) host.route(p, { kind: 'trickle', body: slowBody });
    const fastBody = await makeImage(500, 400, 'jpeg', 81);
    const fast = ['/split-b/0.jpg', '/split-b/1.jpg', '/split-b/2.jpg'];
    for (const p of fast) host.route(p, { kind: 'bytes', body: fastBody, contentType: 'image/jpeg' });
    const idA = pid('split-a');
    const idB = pid('split-b');

    // Pushed through different replicas: either may claim anything.
    await one.upsertProperty({ workspaceId: wsA, providerId: idA, property: completeProperty(slow.map((p) => `${host.base}${p}`)) });
    while (host.openNow('/split-a/') < REPLICAS * PER_WORKSPACE) await new Promise((r) => setTimeout(r, 25));
    await two.upsertProperty({ workspaceId: wsB, providerId: idB, property: completeProperty(fast.map((p) => `${host.base}${p}`)) });

    const b = await waitForPhotos(one, wsB, idB);
    expect(b.publishable).toBe(true);
    // A's first fetches are all still open, and no replica started another of A's.
    expect(host.openNow('/split-a/')).toBe(REPLICAS * PER_WORKSPACE);
    expect(host.arrivals().filter((p) => p.startsWith('/split-a/'))).toHaveLength(REPLICAS * PER_WORKSPACE);

    for (const p of slow) host.release(p);
    const a = await waitForPhotos(two, wsA, idA);
    expect(a.publishable).toBe(true);
    expect(a.photos.every((p) => p.state === PhotoState.PROCESSED)).toBe(true);
    expect([...slow, ...fast].map((p) => host.hits(p))).toEqual([...slow, ...fast].map(() => 1));
    expect(host.maxInFlight('/split-a/')).toBeLessThanOrEqual(REPLICAS * PER_WORKSPACE);
  });
});
