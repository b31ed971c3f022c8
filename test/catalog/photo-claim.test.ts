/**
 * The photo pipeline's fair claim (photo-pipeline.ts, docs/catalog.md "Fair
 * scheduling") against a real database, with the fetch step replaced by one the test
 * finishes by hand: which photos a claim takes, in which order, and what waits.
 * - every workspace's next photo before anyone's one after, the workspace with the
 *   fewest in flight first, at most PHOTO_WORKSPACE_CONCURRENCY of a workspace at once;
 * - a pending photo queued by the previous release (no workspace_id) is given its
 *   property's workspace and claimed.
 */
import { join } from 'node:path';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { PhotoPipeline } from '../../services/catalog/photo-pipeline';
import type { PhotoOutcome } from '../../services/catalog/photo-processor';
import { upsertProperty } from '../../services/catalog/property-upsert';
import type { PropertyInput } from '../../services/catalog/property-input';
import { ROOT } from '../support/process';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { testLogger } from '../support/bus';
import { backends } from '../support/system';
import { holdsFor } from '../support/eventually';

jest.setTimeout(120_000);

const WS = {
  a: '00000000-0000-4000-8000-0000000000a1',
  b: '00000000-0000-4000-8000-0000000000b2',
  c: '00000000-0000-4000-8000-0000000000c3',
  d: '00000000-0000-4000-8000-0000000000d4',
};

function property(urls: string[]): PropertyInput {
  return {
    name: 'Harbour loft',
    description: null,
    propertyType: 'apartment',
    address: { line1: '1 Quai des Arts', city: 'Marseille', region: null, postalCode: null, country: 'FR', latitude: 43.3, longitude: 5.37 },
    occupancy: { maxGuests: 2, bedrooms: 1, beds: 1, bathrooms: 1 },
    baseRate: { value: '90.00', currency: 'EUR' },
    amenities: ['wifi'],
    photos: urls.map((url, position) => ({ url, position })),
    checkInTime: '15:00',
    checkOutTime: '11:00',
    status: 'listed',
  };
}

describe(`fair photo claim (database: ${backends.database})`, () => {
  let db: TestDatabase;
  let pipeline: PhotoPipeline;
  /** URLs handed to the fetch step, in order, and how to finish each. */
  const started: string[] = [];
  const finishers = new Map<string, (o: PhotoOutcome) => void>();
  const waiters: (() => void)[] = [];

  const finish = (url: string) => finishers.get(url)!({ ok: false, reason: 'unreachable', detail: 'finished by the test' });
  async function startedCount(n: number): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (started.length < n) {
      if (Date.now() > deadline) throw new Error(`only ${started.length} of ${n} photos started: ${started.join(', ')}`);
      await new Promise<void>((r) => waiters.push(r) && setTimeout(r, 50));
    }
  }
  const push = (ws: string, id: string, urls: string[]) => upsertProperty(db.sql, { workspaceId: ws, providerId: id, environment: 'sandbox', property: property(urls) });

  beforeAll(async () => {
    db = await startTestDatabase();
    await runMigrations(db.sql, { schema: 'catalog', sources: [KIT_MIGRATIONS, { prefix: 'catalog', dir: join(ROOT, 'services/catalog/migrations') }] });
    pipeline = new PhotoPipeline({
      sql: db.sql,
      log: testLogger(),
      concurrency: 4,
      workspaceConcurrency: 2,
      leaseSeconds: 60,
      fetchTimeoutMs: 30_000,
      allowCidrs: [],
      onEvents: () => undefined,
      pollMs: 50,
      process: (url) =>
        new Promise<PhotoOutcome>((resolve) => {
          started.push(url);
          finishers.set(url, resolve);
          for (const w of waiters.splice(0)) w();
        }),
    });
  });

  afterAll(async () => {
    for (const r of finishers.values()) r({ ok: false, reason: 'unreachable', detail: 'test over' });
    await pipeline?.stop();
    await db?.stop();
  });

  test('round-robin across workspaces, fewest in flight first, at most the limit per workspace', async () => {
    const u = (w: string, i: number) => `https://photos.example/${w}/${i}.jpg`;
    // A queues first and most; B and C after it.
    await push(
      WS.a,
      'a',
      [0, 1, 2, 3, 4].map((i) => u('a', i)),
    );
    await push(
      WS.b,
      'b',
      [0, 1].map((i) => u('b', i)),
    );
    await push(WS.c, 'c', [u('c', 0)]);
    pipeline.start();

    // The fast lane's 4 slots: everyone's first, then A's second (A's photos are the oldest).
    await startedCount(4);
    expect([...started].sort()).toEqual([u('a', 0), u('a', 1), u('b', 0), u('c', 0)].sort());

    // C's ends: A is at its limit, so B's second is next, although A's photos are older.
    finish(u('c', 0));
    await startedCount(5);
    expect(started[4]).toBe(u('b', 1));

    // A's first ends: its third takes its place; nothing else is pending.
    finish(u('a', 0));
    await startedCount(6);
    expect(started[5]).toBe(u('a', 2));
    await holdsFor('A still at its limit: its 4th and 5th wait', () => started.length === 6, 300);

    for (const url of [u('a', 1), u('b', 0), u('b', 1), u('a', 2)]) finish(url);
    await startedCount(8);
    expect(started.slice(6).sort()).toEqual([u('a', 3), u('a', 4)]);
    finish(u('a', 3));
    finish(u('a', 4));
  });

  test('a pending photo queued without a workspace (the previous release) is given its workspace and claimed', async () => {
    const url = 'https://photos.example/d/0.jpg';
    const { property: d } = await push(WS.d, 'd', []);
    const before = started.length;
    // The previous release's insert: no workspace_id.
    await db.sql`
      insert into catalog.photos (property_id, url, position, ordinal, state)
      values (${d.id}, ${url}, 0, 0, 'pending')`;
    pipeline.nudge();
    await startedCount(before + 1);
    expect(started.at(-1)).toBe(url);
    const [row] = await db.sql<{ workspace_id: string }[]>`select workspace_id from catalog.photos where url = ${url}`;
    expect(row!.workspace_id).toBe(WS.d);
    finish(url);
  });
});
