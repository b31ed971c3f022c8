/**
 * The public surfaces (SearchPublicListings for search, map and guest feed;
 * GetPublicListing for the listing page; GetPublicPhoto for its images) show only
 * listed, publishable, production partner listings. Sandbox, unlisted, unpublishable
 * (never published, still processing, or regressed) and marketplace-side listings
 * are proven absent — each next to a production twin that is present, so the
 * absence is the rule at work and not an empty index.
 *
 * Listing events (catalog.listing.published / updated / unpublished) are checked on
 * real NATS only: the embedded bus lives inside the system's process.
 */
import { Code } from '@connectrpc/connect';
import { fromBinary, toJson } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import sharp from 'sharp';
import pino from 'pino';
import { ListingOrigin, PropertyStatus, PublicListingSchema, type PublicListing } from '../../gen/psync/catalog/v1/catalog_pb';
import { ListingPublishedSchema, ListingUnpublishedSchema, ListingUpdatedSchema } from '../../gen/psync/catalog/v1/events_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import type { ReceivedEvent, Subscription } from '../../services/kit/events';
import { connectNatsBus } from '../../services/kit/events';
import { backends, startSystem, stopAllSystems, type RunningSystem } from '../support/system';
import { CATALOG_TEST_ENV, clientsFor, completeProperty, connectErrorOf, missingNames, newWorkspace, pid, reasonOf, waitForPhotos, type Clients } from './support/catalog';
import { startPhotoServer, type PhotoServer } from './support/photo-server';
import { holdsFor } from '../support/eventually';

jest.setTimeout(120000);

describe(`public surfaces (database: ${backends.database}, bus: ${backends.bus})`, () => {
  let system: RunningSystem;
  let c: Clients;
  let photos: PhotoServer;
  let prod: string;
  let sandbox: string;
  const url = (path: string) => `${photos.base}${path}`;

  beforeAll(async () => {
    photos = await startPhotoServer();
    for (let i = 0; i < 8; i++) await photos.image(`/p${i}.jpg`, 900, 600, 'jpeg', 20 + i);
    system = await startSystem({ env: { ...CATALOG_TEST_ENV } });
    c = clientsFor(system.internalUrl);
    prod = await newWorkspace(c.identity, 'production');
    sandbox = await newWorkspace(c.identity, 'sandbox');
  });

  afterAll(async () => {
    c?.close();
    await stopAllSystems();
    await photos?.close();
  });

  /** Pushes a property and waits until its photos are processed. */
  async function publish(workspaceId: string, providerId: string, property: ReturnType<typeof completeProperty>) {
    await c.catalog.upsertProperty({ workspaceId, providerId, property });
    return waitForPhotos(c.catalog, workspaceId, providerId);
  }

  const search = async (req: Parameters<Clients['catalog']['searchPublicListings']>[0]) => (await c.catalog.searchPublicListings(req)).listings;
  const ids = (ls: PublicListing[]) => ls.map((l) => l.listingId);

  async function expectHidden(listingId: string) {
    const err = await connectErrorOf(c.catalog.getPublicListing({ listingId }));
    expect(err.code).toBe(Code.NotFound);
    expect(reasonOf(err)).toBe(ErrorReason.LISTING_NOT_FOUND);
    return err.rawMessage;
  }

  test('a listed, publishable production listing is shown; its sandbox twin never is', async () => {
    const city = `Prodville-${pid('')}`;
    const shown = await publish(
      prod,
      pid('prod'),
      completeProperty([url('/p0.jpg'), url('/p1.jpg')], {
        name: 'Shown',
        amenities: ['wifi', 'pool', 'moat'],
        address: { line1: '9 Secret Lane', city, country: 'PT', latitude: 38.7, longitude: -9.1 },
      }),
    );
    const twin = await publish(
      sandbox,
      pid('sandbox'),
      completeProperty([url('/p2.jpg')], {
        name: 'Shown',
        address: { line1: '9 Secret Lane', city, country: 'PT', latitude: 38.7, longitude: -9.1 },
      }),
    );
    expect(shown.publishable && twin.publishable).toBe(true);
    expect(shown.listingId && twin.listingId).toBeTruthy();

    const found = await search({ city });
    expect(ids(found)).toEqual([shown.listingId]);
    const { listing } = await c.catalog.getPublicListing({ listingId: shown.listingId! });
    expect(listing).toMatchObject({
      listingId: shown.listingId,
      name: 'Shown',
      propertyType: 'apartment',
      amenities: ['wifi', 'pool'], // recognised only
      checkInTime: '15:00',
      checkOutTime: '11:00',
      baseRate: { value: '120.00', currency: 'EUR' },
      address: { city, country: 'PT', latitude: 38.7, longitude: -9.1 },
    });
    const json = JSON.stringify(toJson(PublicListingSchema, listing!));
    expect(json).not.toContain('Secret Lane'); // the street line is not public
    expect(json).not.toContain(photos.base); // nor the partner's photo URLs
    expect(listing!.photos.map((p) => p.position)).toEqual([0, 1]);

    const sandboxMessage = await expectHidden(twin.listingId!);
    expect(sandboxMessage).toBe(await expectHidden('lst_aaaaaaaaaaaaaaaaaaaaaaaa'));
    expect(ids(await search({ text: 'Shown' }))).not.toContain(twin.listingId);
    expect(ids(await search({ pageSize: 200 }))).not.toContain(twin.listingId);

    // Photos of a shown listing can be fetched; a sandbox photo cannot.
    const photo = await c.catalog.getPublicPhoto({ photoId: listing!.photos[0]!.photoId });
    expect(photo.contentType).toBe('image/webp');
    const meta = await sharp(Buffer.from(photo.data)).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['webp', 900, 600]);
    const sandboxPhoto = twin.photos[0]!.photoId!;
    expect((await connectErrorOf(c.catalog.getPublicPhoto({ photoId: sandboxPhoto }))).code).toBe(Code.NotFound);
  });

  test('unlisted, unpublishable, still-processing and marketplace listings are never shown', async () => {
    const city = `Hiddenville-${pid('')}`;
    const address = { line1: '1 Main St', city, country: 'ES', latitude: 40.4, longitude: -3.7 };
    const control = await publish(prod, pid('control'), completeProperty([url('/p3.jpg')], { address }));

    const unlistedId = pid('unlisted');
    const wasShown = await publish(prod, unlistedId, completeProperty([url('/p4.jpg')], { address }));
    expect(ids(await search({ city }))).toContain(wasShown.listingId);
    const unlisted = await c.catalog.upsertProperty({
      workspaceId: prod,
      providerId: unlistedId,
      property: completeProperty([url('/p4.jpg')], { address, status: PropertyStatus.UNLISTED }),
    });
    expect(unlisted.listingId).toBe(wasShown.listingId);

    const regressedId = pid('regressed');
    const regressedBefore = await publish(prod, regressedId, completeProperty([url('/p5.jpg')], { address }));
    const regressed = await c.catalog.upsertProperty({
      workspaceId: prod,
      providerId: regressedId,
      property: completeProperty([url('/p5.jpg')], { address, baseRate: undefined }),
    });
    expect(missingNames(regressed.missing)).toEqual(['price']);
    expect(regressed.listingId).toBe(regressedBefore.listingId);

    const neverComplete = await c.catalog.upsertProperty({ workspaceId: prod, providerId: pid('incomplete'), property: completeProperty([], { address }) });
    expect(neverComplete.listingId).toBeUndefined();

    photos.route('/held.jpg', {
      kind: 'hold',
      body: await sharp({ create: { width: 800, height: 800, channels: 3, background: 'green' } })
        .jpeg()
        .toBuffer(),
    });
    const processing = await c.catalog.upsertProperty({ workspaceId: prod, providerId: pid('processing'), property: completeProperty([url('/held.jpg')], { address }) });
    expect(missingNames(processing.missing)).toEqual(['photos_processing']);

    const marketplace = (await c.catalog.createListing({ workspaceId: prod, name: 'Market' })).listing!;
    expect(marketplace.environment).toBe(Environment.PRODUCTION);

    const shown = ids(await search({ city }));
    expect(shown).toEqual([control.listingId]);
    const all = ids(await search({ pageSize: 200 }));
    for (const hidden of [wasShown.listingId!, regressedBefore.listingId!, marketplace.listingId]) {
      expect(all).not.toContain(hidden);
      await expectHidden(hidden);
    }
    photos.release('/held.jpg');
  });

  test('filters: text, country, city, map bounds (across the antimeridian too), guests, amenities, guest feed, pages', async () => {
    const tag = pid('filt').replace(/-/g, '');
    const mk = (name: string, over: Parameters<typeof completeProperty>[1]) => publish(prod, pid(name), completeProperty([url('/p6.jpg')], { name: `${tag} ${name}`, ...over }));
    const fiji = await mk('fiji', {
      address: { line1: 'x', city: 'Suva', country: 'FJ', latitude: -18.1, longitude: 178.4 },
      occupancy: { maxGuests: 8, bedrooms: 4, beds: 4, bathrooms: 2 },
    });
    const samoa = await mk('samoa', { address: { line1: 'x', city: 'Apia', country: 'WS', latitude: -13.8, longitude: -171.8 }, amenities: ['wifi', 'hot_tub'] });
    const t0 = new Date();
    await new Promise((r) => setTimeout(r, 20));
    const lisbon = await mk('lisbon', { address: { line1: 'x', city: 'Lisboa', country: 'PT', latitude: 38.7, longitude: -9.1 }, description: 'Azulejo tiles everywhere' });

    expect(ids(await search({ text: tag })).sort()).toEqual([fiji, samoa, lisbon].map((x) => x.listingId!).sort());
    expect(ids(await search({ text: `${tag} sam` }))).toEqual([samoa.listingId]);
    expect(ids(await search({ text: 'azulejo', country: 'PT' }))).toEqual([lisbon.listingId]);
    expect(ids(await search({ text: tag, country: 'fj' }))).toEqual([fiji.listingId]);
    expect(ids(await search({ text: tag, city: 'APIA' }))).toEqual([samoa.listingId]);
    expect(ids(await search({ text: '100%_' }))).toEqual([]); // wildcards match literally
    // A map box over the antimeridian: 170E .. 170W.
    const pacific = { minLatitude: -25, maxLatitude: -5, minLongitude: 170, maxLongitude: -170 };
    expect(ids(await search({ text: tag, bounds: pacific })).sort()).toEqual([fiji.listingId!, samoa.listingId!].sort());
    expect(ids(await search({ text: tag, bounds: { minLatitude: 30, maxLatitude: 45, minLongitude: -10, maxLongitude: 0 } }))).toEqual([lisbon.listingId]);
    expect(ids(await search({ text: tag, minGuests: 6 }))).toEqual([fiji.listingId]);
    expect(ids(await search({ text: tag, amenities: ['hot_tub', 'wifi'] }))).toEqual([samoa.listingId]);
    expect(ids(await search({ text: tag, updatedAfter: timestampFromDate(t0) }))).toEqual([lisbon.listingId]);

    // Pages of one, in change order, end with an empty token.
    const seen: string[] = [];
    let pageToken = '';
    do {
      if (seen.length > 3) throw new Error(`paging repeats rows: ${seen.join(', ')}`);
      const res = await c.catalog.searchPublicListings({ text: tag, pageSize: 1, pageToken });
      expect(res.listings.length).toBeLessThanOrEqual(1);
      seen.push(...ids(res.listings));
      pageToken = res.nextPageToken;
    } while (pageToken);
    expect(seen).toEqual([fiji.listingId, samoa.listingId, lisbon.listingId]);

    const bad = await connectErrorOf(c.catalog.searchPublicListings({ pageSize: 201 }));
    expect(bad.code).toBe(Code.InvalidArgument);
    expect((await connectErrorOf(c.catalog.searchPublicListings({ pageToken: 'garbage' }))).code).toBe(Code.InvalidArgument);
  });

  const natsOnly = process.env.NATS_URL ? test : test.skip;
  natsOnly('listing events on the bus: published, updated, unpublished (real NATS only; the embedded bus is in-process)', async () => {
    const received: ReceivedEvent[] = [];
    const bus = await connectNatsBus({ url: process.env.NATS_URL!, prefix: system.env.BUS_PREFIX!, log: pino({ level: 'error' }) });
    let sub: Subscription | undefined;
    try {
      sub = await bus.subscribe({
        durable: `catalog-test-${Date.now()}`,
        subjects: ['catalog.listing.>'],
        handler: async (e) => void received.push(e),
      });
      const providerId = pid('events');
      const push = (over: Parameters<typeof completeProperty>[1] = {}) =>
        c.catalog.upsertProperty({ workspaceId: prod, providerId, property: completeProperty([url('/p7.jpg')], over) });
      const eventsFor = (listingId: string) =>
        received
          .map((e) => {
            const decode = {
              'catalog.listing.published': ListingPublishedSchema,
              'catalog.listing.updated': ListingUpdatedSchema,
              'catalog.listing.unpublished': ListingUnpublishedSchema,
            }[e.subject];
            const msg = decode ? fromBinary(decode as typeof ListingPublishedSchema, e.data) : undefined;
            // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- it widens: an unpublished event also carries `missing`
            return { subject: e.subject, id: e.id, msg: msg as (typeof msg & { missing?: number[] }) | undefined };
          })
          .filter((e) => e.msg?.listing?.listingId === listingId);
      const waitFor = async (listingId: string, n: number) => {
        const deadline = Date.now() + 20000;
        while (eventsFor(listingId).length < n) {
          if (Date.now() > deadline) throw new Error(`expected ${n} events for ${listingId}, got ${JSON.stringify(eventsFor(listingId).map((e) => e.subject))}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        return eventsFor(listingId);
      };

      await push();
      const { listingId } = await waitForPhotos(c.catalog, prod, providerId);
      let events = await waitFor(listingId!, 1);
      expect(events[0]!.subject).toBe('catalog.listing.published');
      expect(events[0]!.msg).toMatchObject({
        workspaceId: prod,
        listing: { listingId, workspaceId: prod, environment: Environment.PRODUCTION, origin: ListingOrigin.PARTNER, providerId, publishable: true },
      });
      expect(events[0]!.id).toBe(events[0]!.msg!.eventId);

      await push(); // identical: no event
      await push({ name: 'Renamed' });
      events = await waitFor(listingId!, 2);
      expect(events[1]!.subject).toBe('catalog.listing.updated');
      expect(events[1]!.msg!.listing!.name).toBe('Renamed');

      await push({ name: 'Renamed', baseRate: undefined });
      events = await waitFor(listingId!, 3);
      expect(events[2]!.subject).toBe('catalog.listing.unpublished');
      expect(events[2]!.msg!.listing!.publishable).toBe(false);
      expect(events[2]!.msg!.missing).toEqual([1]); // PRICE

      await push({ name: 'Renamed' });
      events = await waitFor(listingId!, 4);
      expect(events[3]!.subject).toBe('catalog.listing.updated');
      expect(events[3]!.msg!.listing!.publishable).toBe(true);
      await holdsFor('no fifth event for the listing', () => eventsFor(listingId!).length === 4, 500);

      const market = (await c.catalog.createListing({ workspaceId: sandbox })).listing!;
      const [created] = await waitFor(market.listingId, 1);
      expect(created!.subject).toBe('catalog.listing.published');
      expect(created!.msg!.listing).toMatchObject({ origin: ListingOrigin.MARKETPLACE, environment: Environment.SANDBOX });
    } finally {
      await sub?.stop();
      await bus.close();
    }
  });
});
