/**
 * The read-back endpoints through the whole system (docs/partners/properties.md,
 * webhooks.md, calendar.md): GET /v1/properties/{provider_id}, GET /v1/properties,
 * GET /v1/webhooks/endpoint and GET /v1/listings/{listing_id}/nights.
 *
 * For each: the sandbox 200 with its body, a production workspace's 501 after full
 * validation (a bad request is still 400 first), the 400s, tenant isolation (another
 * workspace's object is answered exactly like an unknown one) and 401 without a token.
 *
 * Photos come from a local photo host (test/catalog/support/photo-server.ts), the webhook
 * endpoint is the test receiver on https://localhost:8443 (webhookSuite).
 */
import { CancellationInitiator } from '../../gen/psync/calendar/v1/events_pb';
import { send, jsonRequest, type Received } from './http-client';
import { Partners, type Partner } from './partners';
import { validProperty } from './fixtures';
import { makeImage, startPhotoServer, type PhotoServer } from '../catalog/support/photo-server';
import { eventually } from '../notifications/support/harness';
import { echoAndAccept } from '../notifications/support/receiver';
import { webhookSuite } from '../notifications/support/suite';

const suite = webhookSuite('read-back');

let partners: Partners;
let photos: PhotoServer;

beforeAll(async () => {
  partners = new Partners(suite.system);
  photos = await startPhotoServer();
}, 60_000);

afterAll(async () => {
  partners?.close();
  await photos?.close();
});

/** One public call with the partner's token (no body unless given). */
function api(p: Partner | undefined, method: string, path: string, body?: unknown): Promise<Received> {
  const headers = p ? p.auth : {};
  return send(suite.system.gatewayUrl, body === undefined ? { method, path, headers } : jsonRequest(method, path, body, headers));
}

function expectProblem(res: Received, status: number, code: string, errors?: { field: string; code: string }[]): void {
  expect([res.status, res.headers['content-type'], res.json?.code]).toEqual([status, expect.stringContaining('application/problem+json'), code]);
  if (errors) expect(res.json.errors).toEqual(errors);
}

/**
 * The frame around a valid request `path`: 401 without a token; for a production
 * workspace `invalid` (a bad request) is 400 first and `path` itself 501 not_enabled.
 */
async function expectFrame(prod: Partner, path: string, invalid: string): Promise<void> {
  expectProblem(await api(undefined, 'GET', path), 401, 'unauthorized');
  expectProblem(await api(prod, 'GET', invalid), 400, 'validation_failed');
  expectProblem(await api(prod, 'GET', path), 501, 'not_enabled');
}

/** The body of `res` once it is a 200 satisfying `ok`. */
function eventuallyOk(get: () => Promise<Received>, ok: (body: any) => boolean, what: string): Promise<any> {
  return eventually(
    async () => {
      const res = await get();
      return res.status === 200 && ok(res.json) && res.json;
    },
    45_000,
    what,
  );
}

describe('GET /v1/properties/{provider_id}', () => {
  test('the property as last accepted, with listing_id, publishability and each photo’s state (processing, ready, rejected with its reason)', async () => {
    const p = await partners.partner();
    const dir = `/${p.workspaceId}`;
    await photos.image(`${dir}/cover.jpg`, 800, 600);
    await photos.image(`${dir}/tiny.jpg`, 100, 100);
    photos.route(`${dir}/slow.jpg`, { kind: 'hold', body: await makeImage(800, 600, 'jpeg', 1) });
    const body = {
      ...validProperty(),
      amenities: ['wifi', 'kitchen', 'no_such_amenity'],
      photos: [
        { url: `${photos.base}${dir}/cover.jpg`, position: 0 },
        { url: `${photos.base}${dir}/tiny.jpg`, position: 1 },
        { url: `${photos.base}${dir}/slow.jpg`, position: 2 },
      ],
    };
    const put = await api(p, 'PUT', '/v1/properties/villa-1', body);
    expect(put.status).toBe(200);

    const first = await eventuallyOk(
      () => api(p, 'GET', '/v1/properties/villa-1'),
      (b) => b.photos.filter((ph: any) => ph.state !== 'processing').length === 2,
      'the cover and the tiny photo processed',
    );
    expect(first).toEqual({
      provider_id: 'villa-1',
      listing_id: null,
      publishable: false,
      missing: ['photos_processing'],
      unknown_amenities: ['no_such_amenity'],
      photos: [
        { url: body.photos[0]!.url, position: 0, state: 'ready' },
        { url: body.photos[1]!.url, position: 1, state: 'rejected', reason: 'too_small' },
        { url: body.photos[2]!.url, position: 2, state: 'processing' },
      ],
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      property: { ...body, amenities: ['wifi', 'kitchen', 'no_such_amenity'] },
    });
    expect(first.photos[0]).not.toHaveProperty('reason');

    // Once the slow photo arrives the property becomes publishable and gets its listing, with no push.
    photos.release(`${dir}/slow.jpg`);
    const later = await eventuallyOk(
      () => api(p, 'GET', '/v1/properties/villa-1'),
      (b) => b.publishable === true,
      'publishable',
    );
    expect(later).toMatchObject({
      listing_id: expect.stringMatching(/.+/),
      missing: [],
      photos: [{ state: 'ready' }, { state: 'rejected', reason: 'too_small' }, { state: 'ready' }],
    });
    expect(later.updated_at).toBe(first.updated_at);
  }, 90_000);

  test('a property pushed with only the required fields reads back without the optional ones; HEAD answers without a body', async () => {
    const p = await partners.partner();
    const { description: _d, base_rate: _b, amenities: _a, photos: _p, ...required } = validProperty() as Record<string, any>;
    const { region: _r, postal_code: _pc, ...address } = required.address;
    const body = { ...required, address, status: 'unlisted' };
    const put = await api(p, 'PUT', '/v1/properties/bare', body);
    expect(put.status).toBe(200);
    const res = await api(p, 'GET', '/v1/properties/bare');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['ratelimit-remaining']).toEqual(expect.any(String));
    expect(res.json.property).toEqual({ ...body, amenities: [], photos: [] });
    // The upsert answer's fields, as they stand (nothing changed since the push).
    expect(res.json).toMatchObject({ listing_id: null, publishable: false, missing: put.json.missing, unknown_amenities: [], photos: [] });
    expect(res.json.missing).toEqual(['price', 'amenities', 'photos', 'unlisted']);
    const head = await api(p, 'HEAD', '/v1/properties/bare');
    expect([head.status, head.text]).toEqual([200, '']);
  });

  test('another workspace’s provider_id is 404 property_not_found, exactly like an unknown one', async () => {
    const owner = await partners.partner();
    const other = await partners.partner();
    expect((await api(owner, 'PUT', '/v1/properties/shared-id', validProperty())).status).toBe(200);
    const foreign = await api(other, 'GET', '/v1/properties/shared-id');
    const unknown = await api(other, 'GET', '/v1/properties/never-pushed');
    expectProblem(foreign, 404, 'property_not_found');
    expectProblem(unknown, 404, 'property_not_found');
    const shape = (r: Received) => ({ ...r.json, instance: undefined });
    expect(shape(foreign)).toEqual(shape(unknown));
  });

  test('400 for a bad provider_id or an unknown query parameter, all at once; 401 without a token; production: 400 first, then 501', async () => {
    const p = await partners.partner();
    expectProblem(await api(p, 'GET', `/v1/properties/${'x'.repeat(129)}?expand=all`), 400, 'validation_failed', [
      { field: 'provider_id', code: 'max_length' },
      { field: 'expand', code: 'unknown_field' },
    ]);
    await expectFrame(await partners.partner('production'), '/v1/properties/villa-1', '/v1/properties/villa-1?expand=all');
  });
});

describe('GET /v1/properties', () => {
  test('every property of the workspace, ordered by provider_id in byte order, paged like GET /blocks; each item as GET /properties/{provider_id} reads it', async () => {
    const p = await partners.partner();
    const ids = ['b-2', 'B-1', 'a-3', 'c-1', 'a-10'];
    for (const id of ids) expect((await api(p, 'PUT', `/v1/properties/${id}`, { ...validProperty(), name: `Home ${id}` })).status).toBe(200);
    // Another workspace's properties never appear.
    const other = await partners.partner();
    expect((await api(other, 'PUT', '/v1/properties/a-0', validProperty())).status).toBe(200);

    const ordered = ['B-1', 'a-10', 'a-3', 'b-2', 'c-1'];
    const first = await api(p, 'GET', '/v1/properties?page_size=2');
    expect(first.status).toBe(200);
    expect([first.json.items.map((i: any) => i.provider_id), first.json.has_more]).toEqual([ordered.slice(0, 2), true]);
    const second = await api(p, 'GET', '/v1/properties?page=2&page_size=2');
    expect([second.json.items.map((i: any) => i.provider_id), second.json.has_more]).toEqual([ordered.slice(2, 4), true]);
    const last = await api(p, 'GET', '/v1/properties?page=3&page_size=2');
    expect([last.json.items.map((i: any) => i.provider_id), last.json.has_more]).toEqual([ordered.slice(4), false]);
    const past = await api(p, 'GET', '/v1/properties?page=9');
    expect(past.json).toEqual({ items: [], has_more: false });

    const all = await api(p, 'GET', '/v1/properties');
    expect(all.json.items.map((i: any) => i.provider_id)).toEqual(ordered);
    const one = await api(p, 'GET', '/v1/properties/a-3');
    expect(all.json.items[2]).toEqual(one.json);
    expect(all.json.items[2].property.name).toBe('Home a-3');

    expect((await api(await partners.partner(), 'GET', '/v1/properties')).json).toEqual({ items: [], has_more: false });
  });

  test('400 for page and page_size out of bounds or an unknown parameter; 401 without a token; production: 400 first, then 501', async () => {
    const p = await partners.partner();
    expectProblem(await api(p, 'GET', '/v1/properties?page=0&page_size=201&workspace=x'), 400, 'validation_failed', [
      { field: 'workspace', code: 'unknown_field' },
      { field: 'page', code: 'minimum' },
      { field: 'page_size', code: 'maximum' },
    ]);
    await expectFrame(await partners.partner('production'), '/v1/properties', '/v1/properties?page=0');
  });
});

describe('GET /v1/webhooks/endpoint', () => {
  test('url, events and status as registered, never the signing secret; 404 webhook_endpoint_not_found before any registration', async () => {
    const p = await partners.partner();
    expectProblem(await api(p, 'GET', '/v1/webhooks/endpoint'), 404, 'webhook_endpoint_not_found');
    const path = `/read-back/${p.workspaceId}`;
    suite.receiver.on(path, echoAndAccept);
    const url = `${suite.receiver.baseUrl}${path}`;
    const reg = await api(p, 'PUT', '/v1/webhooks/endpoint', { url, events: ['booking.confirmed', 'user.erased'] });
    expect([reg.status, reg.json.status, typeof reg.json.signing_secret]).toEqual([200, 'active', 'string']);

    const res = await api(p, 'GET', '/v1/webhooks/endpoint');
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ url, events: ['booking.confirmed', 'user.erased'], status: 'active' });
    expect(res.text).not.toContain(reg.json.signing_secret);

    // Paused: the empty event list reads back.
    expect((await api(p, 'PUT', '/v1/webhooks/endpoint', { url, events: [] })).status).toBe(200);
    expect((await api(p, 'GET', '/v1/webhooks/endpoint')).json).toEqual({ url, events: [], status: 'active' });
  });

  test('another workspace’s endpoint is not shown: its own 404, exactly like a workspace that never registered', async () => {
    const owner = await partners.partner();
    const path = `/read-back/${owner.workspaceId}`;
    suite.receiver.on(path, echoAndAccept);
    expect((await api(owner, 'PUT', '/v1/webhooks/endpoint', { url: `${suite.receiver.baseUrl}${path}`, events: ['booking.confirmed'] })).status).toBe(200);
    const other = await partners.partner();
    const res = await api(other, 'GET', '/v1/webhooks/endpoint');
    expectProblem(res, 404, 'webhook_endpoint_not_found');
    expect(res.text).not.toContain(path);
  });

  test('400 for a query parameter; 401 without a token; production: 400 first, then 501', async () => {
    const p = await partners.partner();
    expectProblem(await api(p, 'GET', '/v1/webhooks/endpoint?include=secret'), 400, 'validation_failed', [{ field: 'include', code: 'unknown_field' }]);
    await expectFrame(await partners.partner('production'), '/v1/webhooks/endpoint', '/v1/webhooks/endpoint?include=secret');
  });
});

describe('GET /v1/listings/{listing_id}/nights', () => {
  const calendar = () => suite.clients.calendar;

  /** A sandbox partner with a marketplace listing of its own. */
  async function partnerWithListing(env: 'sandbox' | 'production' = 'sandbox') {
    const p = await partners.partner(env);
    const listingId = (await suite.clients.catalog.createListing({ workspaceId: p.workspaceId, name: 'Nights' })).listing!.listingId;
    return { p, listingId };
  }

  test('one item per night: free, blocked with the partner’s external_uid, booked with the reference, held, a host-cancelled booking as booked and withdrawn — nothing about guests', async () => {
    const { p, listingId } = await partnerWithListing();
    // 2032-03-01 … 2032-03-12 (to exclusive): blocks on the 2nd–3rd (two overlapping), a booking 4th–5th,
    // a live hold on the 6th, an expired hold on the 7th, a host-cancelled booking 8th–9th, a guest-cancelled one on the 10th.
    expect((await api(p, 'PUT', '/v1/blocks/res-b', { listing_id: listingId, check_in: '2032-03-02', check_out: '2032-03-04' })).status).toBe(200);
    expect((await api(p, 'PUT', '/v1/blocks/res-a', { listing_id: listingId, check_in: '2032-03-03', check_out: '2032-03-04' })).status).toBe(200);
    const guest = { guestId: `g-${p.workspaceId}`, guestName: 'Ada Guest', partySize: 2, amountPaid: { value: '200.00', currency: 'EUR' }, requiresPayment: false };
    const booked = await calendar().confirmBooking({ listingId, checkIn: '2032-03-04', checkOut: '2032-03-06', ...guest });
    await calendar().placeHold({ listingId, checkIn: '2032-03-06', checkOut: '2032-03-07', ttlSeconds: 3600, requiresPayment: false });
    await calendar().placeHold({ listingId, checkIn: '2032-03-07', checkOut: '2032-03-08', ttlSeconds: 1, requiresPayment: false });
    const withdrawn = await calendar().confirmBooking({ listingId, checkIn: '2032-03-08', checkOut: '2032-03-10', ...guest });
    await calendar().cancelBooking({ bookingReference: withdrawn.booking!.bookingReference, initiatedBy: CancellationInitiator.HOST });
    const cancelled = await calendar().confirmBooking({ listingId, checkIn: '2032-03-10', checkOut: '2032-03-11', ...guest });
    await calendar().cancelBooking({ bookingReference: cancelled.booking!.bookingReference, initiatedBy: CancellationInitiator.GUEST });
    await new Promise((r) => setTimeout(r, 1100)); // timing under test: the 1-second hold is past its expires_at on the database's clock

    const res = await api(p, 'GET', `/v1/listings/${listingId}/nights?from=2032-03-01&to=2032-03-12`);
    expect(res.status).toBe(200);
    const ref = booked.booking!.bookingReference;
    const wref = withdrawn.booking!.bookingReference;
    expect(res.json).toEqual({
      items: [
        { date: '2032-03-01', state: 'free' },
        { date: '2032-03-02', state: 'blocked', external_uid: 'res-b' },
        { date: '2032-03-03', state: 'blocked', external_uid: 'res-a' },
        { date: '2032-03-04', state: 'booked', booking_reference: ref },
        { date: '2032-03-05', state: 'booked', booking_reference: ref },
        { date: '2032-03-06', state: 'held' },
        { date: '2032-03-07', state: 'free' },
        { date: '2032-03-08', state: 'booked', booking_reference: wref, withdrawn: true },
        { date: '2032-03-09', state: 'booked', booking_reference: wref, withdrawn: true },
        { date: '2032-03-10', state: 'free' },
        { date: '2032-03-11', state: 'free' },
      ],
    });
    expect(res.text).not.toContain('Ada');
    expect(res.text).not.toContain(guest.guestId);
    expect(res.text).not.toContain('200.00');
  });

  test(`366 nights in one read (a leap year), one item each; a 367-night range, to not after from, bad dates and missing ones are 400`, async () => {
    const { p, listingId } = await partnerWithListing();
    const year = await api(p, 'GET', `/v1/listings/${listingId}/nights?from=2032-01-01&to=2033-01-01`);
    expect(year.status).toBe(200);
    expect(year.json.items).toHaveLength(366);
    expect(year.json.items[59]).toEqual({ date: '2032-02-29', state: 'free' });
    expect(year.json.items[365]).toEqual({ date: '2032-12-31', state: 'free' });
    const nights = (q: string) => api(p, 'GET', `/v1/listings/${listingId}/nights${q}`);
    expectProblem(await nights('?from=2032-01-01&to=2033-01-02'), 400, 'validation_failed', [{ field: 'to', code: 'maximum' }]);
    expectProblem(await nights('?from=2032-01-02&to=2032-01-02'), 400, 'validation_failed', [{ field: 'to', code: 'invalid' }]);
    expectProblem(await nights('?from=2032-02-30&to=tomorrow'), 400, 'validation_failed', [
      { field: 'from', code: 'format' },
      { field: 'to', code: 'format' },
    ]);
    expectProblem(await nights(''), 400, 'validation_failed', [
      { field: 'from', code: 'required' },
      { field: 'to', code: 'required' },
    ]);
    expectProblem(await api(p, 'GET', `/v1/listings/${'l'.repeat(256)}/nights?from=2032-01-01&to=2032-01-01&guest=1`), 400, 'validation_failed', [
      { field: 'listing_id', code: 'max_length' },
      { field: 'guest', code: 'unknown_field' },
      { field: 'to', code: 'invalid' },
    ]);
  });

  test('another workspace’s listing is 404 property_not_found, exactly like an unknown one; 401 without a token; production: 400 first, then 501', async () => {
    const { listingId } = await partnerWithListing();
    const other = await partners.partner();
    const q = '?from=2032-01-01&to=2032-01-08';
    const foreign = await api(other, 'GET', `/v1/listings/${listingId}/nights${q}`);
    const unknown = await api(other, 'GET', `/v1/listings/lst_no_such_listing/nights${q}`);
    expectProblem(foreign, 404, 'property_not_found');
    expectProblem(unknown, 404, 'property_not_found');
    expect({ ...foreign.json, instance: undefined }).toEqual({ ...unknown.json, instance: undefined });
    expectProblem(await api(undefined, 'GET', `/v1/listings/${listingId}/nights${q}`), 401, 'unauthorized');
    const prod = await partnerWithListing('production');
    await expectFrame(prod.p, `/v1/listings/${prod.listingId}/nights${q}`, `/v1/listings/${prod.listingId}/nights?from=2032-01-08&to=2032-01-01`);
  });
});
