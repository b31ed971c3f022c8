/**
 * UpsertProperty and the reads around it, against the running system over
 * Connect/gRPC: created/updated, replace-not-merge, identical re-pushes, provider_id
 * namespaced per workspace, validation of every field, unknown amenities and the
 * amenity vocabulary, marketplace listings (CreateListing, GetListing,
 * ResolveListing, `psync listing create`).
 */
import { TEST_TOKENS } from '../support/credentials';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Code } from '@connectrpc/connect';
import { create } from '@bufbuild/protobuf';
import { ListingOrigin, PropertySchema, PropertyStatus } from '../../gen/psync/catalog/v1/catalog_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { UpsertResult } from '../../gen/psync/common/v1/upsert_result_pb';
import { ROOT } from '../support/process';
import { backends, linesOf, runCommand, startSystem, stopAllSystems, type RunningSystem } from '../support/system';
import {
  CATALOG_TEST_ENV,
  clientsFor,
  completeProperty,
  connectErrorOf,
  missingNames,
  newWorkspace,
  pid,
  reasonOf,
  violationsOf,
  waitForPhotos,
  type Clients,
} from './support/catalog';
import { startPhotoServer, type PhotoServer } from './support/photo-server';

jest.setTimeout(120000);

describe(`catalog properties (database: ${backends.database}, bus: ${backends.bus})`, () => {
  let system: RunningSystem;
  let c: Clients;
  let photos: PhotoServer;
  let ws: string;

  beforeAll(async () => {
    photos = await startPhotoServer();
    await photos.image('/a.jpg', 800, 600, 'jpeg', 1);
    await photos.image('/b.png', 640, 480, 'png', 2);
    system = await startSystem({ env: { ...CATALOG_TEST_ENV } });
    c = clientsFor(system.internalUrl);
    ws = await newWorkspace(c.identity);
  });

  afterAll(async () => {
    c?.close();
    await stopAllSystems();
    await photos?.close();
  });

  test('the first push creates, later pushes update; the response echoes provider_id and restates status', async () => {
    const id = pid();
    const first = await c.catalog.upsertProperty({ workspaceId: ws, providerId: id, property: completeProperty([]) });
    expect(first.result).toBe(UpsertResult.CREATED);
    expect(first.providerId).toBe(id);
    expect(first.status).toBe(PropertyStatus.LISTED);
    const second = await c.catalog.upsertProperty({
      workspaceId: ws,
      providerId: id,
      property: completeProperty([], { status: PropertyStatus.UNLISTED }),
    });
    expect(second.result).toBe(UpsertResult.UPDATED);
    expect(second.status).toBe(PropertyStatus.UNLISTED);
    const identical = await c.catalog.upsertProperty({
      workspaceId: ws,
      providerId: id,
      property: completeProperty([], { status: PropertyStatus.UNLISTED }),
    });
    expect(identical.result).toBe(UpsertResult.UPDATED);
    expect(missingNames(identical.missing)).toEqual(missingNames(second.missing));
  });

  test('replace, not merge: omitted amenities, photos, price and optional fields are removed', async () => {
    const id = pid('replace');
    const full = completeProperty([`${photos.base}/a.jpg`, `${photos.base}/b.png`], {
      description: 'Sea view',
      address: { line1: '1 Quai', city: 'Marseille', region: 'PACA', postalCode: '13002', country: 'FR', latitude: 43.3, longitude: 5.37 },
      amenities: ['wifi', 'pool', 'not_a_real_amenity'],
    });
    await c.catalog.upsertProperty({ workspaceId: ws, providerId: id, property: full });
    const done = await waitForPhotos(c.catalog, ws, id);
    expect(done.publishable).toBe(true);
    expect(done.property!.photos).toHaveLength(2);

    const bare = create(PropertySchema, {
      name: 'Harbour loft, renamed',
      propertyType: 'apartment',
      address: { line1: '1 Quai', city: 'Marseille', country: 'FR', latitude: 43.3, longitude: 5.37 },
      occupancy: { maxGuests: 2, bedrooms: 1, beds: 1, bathrooms: 1 },
      checkInTime: '16:00',
      checkOutTime: '10:00',
      status: PropertyStatus.LISTED,
    });
    const res = await c.catalog.upsertProperty({ workspaceId: ws, providerId: id, property: bare });
    expect(res.result).toBe(UpsertResult.UPDATED);
    expect(res.publishable).toBe(false);
    expect(missingNames(res.missing)).toEqual(['price', 'amenities', 'photos']);
    expect(res.unknownAmenities).toEqual([]);
    expect(res.listingId).toBe(done.listingId); // kept across the regression

    const got = await c.catalog.getProperty({ workspaceId: ws, providerId: id });
    const p = got.property!;
    expect(p.name).toBe('Harbour loft, renamed');
    expect(p.baseRate).toBeUndefined();
    expect(p.amenities).toEqual([]);
    expect(p.photos).toEqual([]);
    expect(got.photos).toEqual([]);
    expect(p.description).toBeUndefined();
    expect(p.address!.region).toBeUndefined();
    expect(p.address!.postalCode).toBeUndefined();
    expect(p.occupancy!.maxGuests).toBe(2);
    expect(p.checkInTime).toBe('16:00');
  });

  test('GetProperty returns the property as pushed, with per-photo status in position order', async () => {
    const id = pid('get');
    const sent = completeProperty([`${photos.base}/b.png`, `${photos.base}/a.jpg`], { amenities: ['wifi', 'zz_unknown', 'kitchen', 'wifi'] });
    sent.photos[0]!.position = 5;
    sent.photos[1]!.position = 1;
    await c.catalog.upsertProperty({ workspaceId: ws, providerId: id, property: sent });
    const got = await waitForPhotos(c.catalog, ws, id);
    expect(got.providerId).toBe(id);
    expect(got.property!.name).toBe(sent.name);
    expect(got.property!.baseRate).toMatchObject({ value: '120.00', currency: 'EUR' });
    expect(got.property!.amenities).toEqual(['wifi', 'kitchen', 'zz_unknown']);
    expect(got.unknownAmenities).toEqual(['zz_unknown']);
    expect(got.photos.map((p) => [p.url, p.position])).toEqual([
      [`${photos.base}/a.jpg`, 1],
      [`${photos.base}/b.png`, 5],
    ]);
    for (const p of got.photos) {
      expect(p.photoId).toMatch(/^[0-9a-f]{64}$/);
      expect(p.contentType).toBe('image/webp');
    }
    expect(got.photos[0]).toMatchObject({ width: 800, height: 600 });
    expect(got.updatedAt).toBeDefined();
  });

  test('provider_id is namespaced per workspace: same value, two properties, never crossed', async () => {
    const other = await newWorkspace(c.identity);
    const id = pid('shared');
    const a = await c.catalog.upsertProperty({ workspaceId: ws, providerId: id, property: completeProperty([], { name: 'Mine' }) });
    const b = await c.catalog.upsertProperty({ workspaceId: other, providerId: id, property: completeProperty([], { name: 'Theirs' }) });
    expect(a.result).toBe(UpsertResult.CREATED);
    expect(b.result).toBe(UpsertResult.CREATED);
    await c.catalog.upsertProperty({ workspaceId: other, providerId: id, property: completeProperty([], { name: 'Theirs, updated' }) });
    expect((await c.catalog.getProperty({ workspaceId: ws, providerId: id })).property!.name).toBe('Mine');
    expect((await c.catalog.getProperty({ workspaceId: other, providerId: id })).property!.name).toBe('Theirs, updated');

    const third = await newWorkspace(c.identity);
    const foreign = await connectErrorOf(c.catalog.getProperty({ workspaceId: third, providerId: id }));
    const unknown = await connectErrorOf(c.catalog.getProperty({ workspaceId: ws, providerId: pid('nobody') }));
    for (const err of [foreign, unknown]) {
      expect(err.code).toBe(Code.NotFound);
      expect(reasonOf(err)).toBe(ErrorReason.PROPERTY_NOT_FOUND);
    }
    expect(foreign.rawMessage).toBe(unknown.rawMessage);
  });

  test('unknown amenity slugs are reported, not linked, and never fail the push', async () => {
    const id = pid('amen');
    const res = await c.catalog.upsertProperty({
      workspaceId: ws,
      providerId: id,
      property: completeProperty([], { amenities: ['hovercraft_pad', 'wifi', 'moat', 'hovercraft_pad'] }),
    });
    expect(res.unknownAmenities).toEqual(['hovercraft_pad', 'moat']);
    expect(missingNames(res.missing)).not.toContain('amenities');
    const onlyUnknown = await c.catalog.upsertProperty({ workspaceId: ws, providerId: id, property: completeProperty([], { amenities: ['moat'] }) });
    expect(onlyUnknown.unknownAmenities).toEqual(['moat']);
    expect(missingNames(onlyUnknown.missing)).toContain('amenities');
  });

  test('ListAmenities serves the curated vocabulary: >= 150 snake_case slugs, ordered, the required ones included, as documented', async () => {
    const { amenities } = await c.catalog.listAmenities({});
    expect(amenities.length).toBeGreaterThanOrEqual(150);
    const slugs = amenities.map((a) => a.slug);
    expect([...slugs].sort()).toEqual(slugs);
    expect(new Set(slugs).size).toBe(slugs.length);
    for (const a of amenities) {
      expect(a.slug).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
      expect(a.name).not.toBe('');
      expect(a.category).toMatch(/^[a-z_]+$/);
    }
    for (const required of [
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
      expect(slugs).toContain(required);
    }
    const docs = readFileSync(join(ROOT, 'docs/amenities.md'), 'utf8');
    for (const slug of slugs) expect(docs).toContain(`\`${slug}\``);
  });

  describe('validation (INVALID_ARGUMENT with {field, code}; nothing written)', () => {
    const cases: [string, (p: ReturnType<typeof completeProperty>) => void, { field: string; code: string }][] = [
      ['empty name', (p) => (p.name = ''), { field: 'property.name', code: 'required' }],
      ['name over 120', (p) => (p.name = 'x'.repeat(121)), { field: 'property.name', code: 'max_length' }],
      ['description over 4000', (p) => (p.description = 'x'.repeat(4001)), { field: 'property.description', code: 'max_length' }],
      ['property_type pattern', (p) => (p.propertyType = 'Apartment'), { field: 'property.property_type', code: 'pattern' }],
      ['property_type over 60', (p) => (p.propertyType = 'a'.repeat(61)), { field: 'property.property_type', code: 'max_length' }],
      ['no address', (p) => (p.address = undefined), { field: 'property.address', code: 'required' }],
      ['line1 over 200', (p) => (p.address!.line1 = 'x'.repeat(201)), { field: 'property.address.line1', code: 'max_length' }],
      ['empty city', (p) => (p.address!.city = ''), { field: 'property.address.city', code: 'required' }],
      ['empty region', (p) => (p.address!.region = ''), { field: 'property.address.region', code: 'min_length' }],
      ['postal_code over 20', (p) => (p.address!.postalCode = '1'.repeat(21)), { field: 'property.address.postal_code', code: 'max_length' }],
      ['country lower-case', (p) => (p.address!.country = 'fr'), { field: 'property.address.country', code: 'pattern' }],
      ['country unassigned', (p) => (p.address!.country = 'XX'), { field: 'property.address.country', code: 'enum' }],
      ['latitude over 90', (p) => (p.address!.latitude = 90.5), { field: 'property.address.latitude', code: 'maximum' }],
      ['longitude under -180', (p) => (p.address!.longitude = -181), { field: 'property.address.longitude', code: 'minimum' }],
      ['no occupancy', (p) => (p.occupancy = undefined), { field: 'property.occupancy', code: 'required' }],
      ['max_guests 0', (p) => (p.occupancy!.maxGuests = 0), { field: 'property.occupancy.max_guests', code: 'minimum' }],
      ['bedrooms over 100', (p) => (p.occupancy!.bedrooms = 101), { field: 'property.occupancy.bedrooms', code: 'maximum' }],
      ['beds negative', (p) => (p.occupancy!.beds = -1), { field: 'property.occupancy.beds', code: 'minimum' }],
      ['base_rate value not decimal', (p) => (p.baseRate!.value = '12,50'), { field: 'property.base_rate.value', code: 'pattern' }],
      ['base_rate currency', (p) => (p.baseRate!.currency = 'euro'), { field: 'property.base_rate.currency', code: 'pattern' }],
      ['61 amenities', (p) => (p.amenities = Array.from({ length: 61 }, (_, i) => `a${i}`)), { field: 'property.amenities', code: 'max_items' }],
      ['amenity slug pattern', (p) => (p.amenities = ['wifi', 'Hot Tub']), { field: 'property.amenities[1]', code: 'pattern' }],
      [
        '31 photos',
        (p) => (p.photos = Array.from({ length: 31 }, (_, i) => ({ $typeName: 'psync.catalog.v1.Photo' as const, url: `https://x.example/${i}.jpg`, position: i }))),
        { field: 'property.photos', code: 'max_items' },
      ],
      ['photo url not a URI', (p) => (p.photos = [{ $typeName: 'psync.catalog.v1.Photo', url: 'not a uri', position: 0 }]), { field: 'property.photos[0].url', code: 'format' }],
      [
        'second photo url not a URI',
        (p) =>
          (p.photos = [
            { $typeName: 'psync.catalog.v1.Photo', url: 'https://[::ffff:127.0.0.1]:8443/a.png', position: 0 },
            { $typeName: 'psync.catalog.v1.Photo', url: 'https://x.example/a b.jpg', position: 1 },
          ]),
        { field: 'property.photos[1].url', code: 'format' },
      ],
      [
        'photo position negative',
        (p) => (p.photos = [{ $typeName: 'psync.catalog.v1.Photo', url: 'https://x.example/a.jpg', position: -1 }]),
        { field: 'property.photos[0].position', code: 'minimum' },
      ],
      ['check_in_time 24:00', (p) => (p.checkInTime = '24:00'), { field: 'property.check_in_time', code: 'pattern' }],
      ['check_out_time 9:00', (p) => (p.checkOutTime = '9:00'), { field: 'property.check_out_time', code: 'pattern' }],
      ['status unspecified', (p) => (p.status = PropertyStatus.UNSPECIFIED), { field: 'property.status', code: 'required' }],
      ['status not a value of the enum', (p) => (p.status = 7 as PropertyStatus), { field: 'property.status', code: 'enum' }],
      ['base_rate negative', (p) => (p.baseRate!.value = '-5'), { field: 'property.base_rate', code: 'pattern' }],
      ['latitude not a number', (p) => (p.address!.latitude = Number.NaN), { field: 'property.address.latitude', code: 'type' }],
    ];

    test.each(cases)('%s', async (_label, mutate, violation) => {
      const id = pid('invalid');
      const property = completeProperty([]);
      mutate(property);
      const err = await connectErrorOf(c.catalog.upsertProperty({ workspaceId: ws, providerId: id, property }));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(reasonOf(err)).toBe(ErrorReason.VALIDATION_FAILED);
      expect(violationsOf(err)).toEqual([violation]);
      const gone = await connectErrorOf(c.catalog.getProperty({ workspaceId: ws, providerId: id }));
      expect(gone.code).toBe(Code.NotFound);
    });

    test('provider_id length 1 to 128', async () => {
      for (const [providerId, code] of [
        ['', 'min_length'],
        ['p'.repeat(129), 'max_length'],
      ] as const) {
        const err = await connectErrorOf(c.catalog.upsertProperty({ workspaceId: ws, providerId, property: completeProperty([]) }));
        expect(violationsOf(err)).toEqual([{ field: 'provider_id', code }]);
      }
      const ok = await c.catalog.upsertProperty({ workspaceId: ws, providerId: `${'p'.repeat(120)}${pid('').slice(-8)}`, property: completeProperty([]) });
      expect(ok.result).toBe(UpsertResult.CREATED);
    });

    test('every violation is reported, never the submitted value', async () => {
      const property = completeProperty([]);
      property.name = '';
      property.address!.country = 'zz-secret';
      property.checkInTime = 'noon';
      const err = await connectErrorOf(c.catalog.upsertProperty({ workspaceId: ws, providerId: pid(), property }));
      expect(violationsOf(err)).toEqual([
        { field: 'property.name', code: 'required' },
        { field: 'property.address.country', code: 'pattern' },
        { field: 'property.check_in_time', code: 'pattern' },
      ]);
      expect(JSON.stringify(err)).not.toContain('zz-secret');
      expect(err.message).not.toContain('zz-secret');
    });
  });

  test('a workspace identity does not know is NOT_FOUND and nothing is written', async () => {
    const ghost = '00000000-0000-4000-8000-000000000000';
    const err = await connectErrorOf(c.catalog.upsertProperty({ workspaceId: ghost, providerId: pid(), property: completeProperty([]) }));
    expect(err.code).toBe(Code.NotFound);
    expect(reasonOf(err)).toBe(ErrorReason.WORKSPACE_NOT_FOUND);
  });

  describe('through the public gateway (PUT /v1/properties/{provider_id})', () => {
    /** A partner: a sandbox workspace, an API key, an access token. */
    async function partner(): Promise<{ workspaceId: string; put(id: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> }> {
      const workspaceId = await newWorkspace(c.identity);
      const key = await c.identity.issueKey({ workspaceId });
      const tokenRes = await fetch(`${system.gatewayUrl}/v1/token`, { method: 'POST', headers: { authorization: `Bearer ${key.apiKey}` } });
      expect(tokenRes.status).toBe(200);
      const token = ((await tokenRes.json()) as { access_token: string }).access_token;
      return {
        workspaceId,
        async put(id, body) {
          const res = await fetch(`${system.gatewayUrl}/v1/properties/${encodeURIComponent(id)}`, {
            method: 'PUT',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          return { status: res.status, json: (await res.json()) as Record<string, unknown> };
        },
      };
    }

    const body = (photoUrls: string[], over: Record<string, unknown> = {}) => ({
      name: 'Harbour loft',
      property_type: 'apartment',
      address: { line1: '1 Quai des Arts', city: 'Marseille', country: 'FR', latitude: 43.2965, longitude: 5.3698 },
      occupancy: { max_guests: 4, bedrooms: 2, beds: 2, bathrooms: 1 },
      base_rate: { value: '120.00', currency: 'EUR' },
      amenities: ['wifi', 'kitchen', 'moat'],
      photos: photoUrls.map((url, position) => ({ url, position })),
      check_in_time: '15:00',
      check_out_time: '11:00',
      status: 'listed',
      ...over,
    });

    test('a photo URL the schema accepts is never refused whole: loopback spellings, the IPv4-mapped one included, are forbidden_url', async () => {
      const p = await partner();
      const spellings = [
        'https://[::ffff:127.0.0.1]:8443/a.png',
        'https://[::ffff:7f00:1]:8443/a.png',
        'https://[::1]:8443/a.png',
        'https://0x7f000001:8443/a.png',
        'https://127.1:8443/a.png',
        'https://user:pass@localhost:8443/a.png',
      ];
      for (const url of spellings) {
        const res = await p.put(pid('mapped'), body([url]));
        expect({ url, status: res.status }).toEqual({ url, status: 200 });
        expect(res.json.photos_rejected).toEqual([{ url, reason: 'forbidden_url' }]);
      }
      // All of them in one property: each one rejected, the property stored.
      const all = await p.put(pid('mapped-all'), body(spellings));
      expect(all.status).toBe(200);
      expect(all.json.photos_rejected).toEqual(spellings.map((url) => ({ url, reason: 'forbidden_url' })));
    });

    test('a photo URL that is not a URI is refused by the schema under the contract name photos[i].url, never property.photos[i].url', async () => {
      const p = await partner();
      const id = pid('not-uri');
      const res = await p.put(id, body([`${photos.base}/a.jpg`, 'not a uri']));
      expect(res.status).toBe(400);
      expect(res.json.errors).toEqual([{ field: 'photos[1].url', code: 'format' }]);
      expect(JSON.stringify(res.json)).not.toContain('property.');
      const gone = await connectErrorOf(c.catalog.getProperty({ workspaceId: p.workspaceId, providerId: id }));
      expect(gone.code).toBe(Code.NotFound);
    });

    test('the upsert response as partners see it: null listing_id, photos_processing, then a listing id', async () => {
      const p = await partner();
      const id = pid('http');
      const first = await p.put(id, body([`${photos.base}/a.jpg`, 'http://10.0.0.1/x.jpg']));
      expect(first.status).toBe(200);
      expect(first.json).toEqual({
        provider_id: id,
        result: 'created',
        listing_id: null,
        status: 'listed',
        publishable: false,
        missing: ['photos_processing'],
        unknown_amenities: ['moat'],
        photos_rejected: [{ url: 'http://10.0.0.1/x.jpg', reason: 'forbidden_url' }],
      });
      await waitForPhotos(c.catalog, p.workspaceId, id);
      const second = await p.put(id, body([`${photos.base}/a.jpg`, 'http://10.0.0.1/x.jpg']));
      expect(second.json).toMatchObject({ result: 'updated', publishable: true, missing: [] });
      expect(second.json.listing_id).toMatch(/^lst_[a-z2-7]{24}$/);

      const unlisted = await p.put(id, body([], { status: 'unlisted', base_rate: undefined, amenities: [] }));
      expect(unlisted.json).toMatchObject({
        status: 'unlisted',
        publishable: false,
        missing: ['price', 'amenities', 'photos', 'unlisted'],
        listing_id: second.json.listing_id,
        unknown_amenities: [],
        photos_rejected: [],
      });
    });

    test('two partners using the same provider_id never touch each other', async () => {
      const [a, b] = await Promise.all([partner(), partner()]);
      const id = pid('twin');
      expect((await a.put(id, body([], { name: 'A' }))).json.result).toBe('created');
      expect((await b.put(id, body([], { name: 'B' }))).json.result).toBe('created');
      expect((await a.put(id, body([], { name: 'A2' }))).json.result).toBe('updated');
      expect((await c.catalog.getProperty({ workspaceId: a.workspaceId, providerId: id })).property!.name).toBe('A2');
      expect((await c.catalog.getProperty({ workspaceId: b.workspaceId, providerId: id })).property!.name).toBe('B');
    });
  });

  describe('marketplace listings', () => {
    const psync = (...args: string[]) => runCommand('bin/psync', args, { ...process.env, PSYNC_INTERNAL_URL: system.internalUrl, PSYNC_TOKEN: TEST_TOKENS.operator });

    test('psync listing create works for sandbox and production workspaces and prints {"listing_id"}', async () => {
      for (const env of ['sandbox', 'production'] as const) {
        const workspace = await newWorkspace(c.identity, env);
        const res = await psync('listing', 'create', '--workspace', workspace);
        expect(res.stderr).toBe('');
        expect(res.code).toBe(0);
        const lines = linesOf(res.stdout);
        expect(lines).toHaveLength(1);
        const out = JSON.parse(lines[0]!) as Record<string, unknown>;
        expect(Object.keys(out)).toEqual(['listing_id']);
        expect(out.listing_id).toMatch(/^lst_[a-z2-7]{24}$/);

        const { listing } = await c.catalog.getListing({ workspaceId: workspace, listingId: out.listing_id as string });
        expect(listing).toMatchObject({
          listingId: out.listing_id,
          workspaceId: workspace,
          environment: env === 'sandbox' ? Environment.SANDBOX : Environment.PRODUCTION,
          origin: ListingOrigin.MARKETPLACE,
          publishable: true,
          status: PropertyStatus.LISTED,
          checkInTime: '15:00',
          checkOutTime: '11:00',
        });
        expect(listing!.providerId).toBeUndefined();
      }
    });

    test('psync listing create without --workspace is a usage error; an unknown workspace exits 1', async () => {
      const usage = await psync('listing', 'create');
      expect(usage.code).toBe(2);
      expect(linesOf(usage.stderr)).toHaveLength(1);
      const unknown = await psync('listing', 'create', '--workspace', '00000000-0000-4000-8000-000000000000');
      expect(unknown.code).toBe(1);
      expect(unknown.stdout).toBe('');
      expect(linesOf(unknown.stderr)).toHaveLength(1);
    });

    test('GetListing is workspace-scoped (unknown and foreign indistinguishable); ResolveListing is global', async () => {
      const created = await c.catalog.createListing({ workspaceId: ws, name: 'Chalet', checkInTime: '16:00' });
      const id = created.listing!.listingId;
      expect(created.listing).toMatchObject({ name: 'Chalet', checkInTime: '16:00', checkOutTime: '11:00' });

      const other = await newWorkspace(c.identity);
      const foreign = await connectErrorOf(c.catalog.getListing({ workspaceId: other, listingId: id }));
      const unknown = await connectErrorOf(c.catalog.getListing({ workspaceId: ws, listingId: 'lst_aaaaaaaaaaaaaaaaaaaaaaaa' }));
      for (const err of [foreign, unknown]) {
        expect(err.code).toBe(Code.NotFound);
        expect(reasonOf(err)).toBe(ErrorReason.PROPERTY_NOT_FOUND);
      }
      expect(foreign.rawMessage).toBe(unknown.rawMessage);

      const resolved = await c.catalog.resolveListing({ listingId: id });
      expect(resolved.listing).toMatchObject({ listingId: id, workspaceId: ws, environment: Environment.SANDBOX });
      const missing = await connectErrorOf(c.catalog.resolveListing({ listingId: 'lst_aaaaaaaaaaaaaaaaaaaaaaaa' }));
      expect(missing.code).toBe(Code.NotFound);
      expect(reasonOf(missing)).toBe(ErrorReason.LISTING_NOT_FOUND);
    });

    test('a partner listing resolves with its provider_id, name and times once published', async () => {
      const id = pid('partner');
      await c.catalog.upsertProperty({ workspaceId: ws, providerId: id, property: completeProperty([`${photos.base}/a.jpg`], { name: 'Loft' }) });
      const done = await waitForPhotos(c.catalog, ws, id);
      expect(done.listingId).toMatch(/^lst_/);
      const { listing } = await c.catalog.resolveListing({ listingId: done.listingId! });
      expect(listing).toMatchObject({
        workspaceId: ws,
        origin: ListingOrigin.PARTNER,
        providerId: id,
        name: 'Loft',
        checkInTime: '15:00',
        checkOutTime: '11:00',
        publishable: true,
        status: PropertyStatus.LISTED,
      });
    });

    test('CreateListing validates its arguments', async () => {
      const err = await connectErrorOf(c.catalog.createListing({ workspaceId: 'nope', checkOutTime: '25:00' }));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(violationsOf(err)).toEqual([
        { field: 'workspace_id', code: 'format' },
        { field: 'check_out_time', code: 'pattern' },
      ]);
    });
  });
});
