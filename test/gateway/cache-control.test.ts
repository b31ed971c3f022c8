/**
 * No API answer is cached (docs/decisions.md "Gateway contract", "No answer is
 * cached"): through the whole system, every answer that carries a token, a signing
 * secret or a guest's name — and every other API answer, problem documents and token
 * refusals included — has `Cache-Control: no-store`. Only the OpenAPI document and
 * the console's files state their own caching, as documented.
 *
 * The webhook endpoint is the test receiver on https://localhost:8443 (webhookSuite),
 * photos come from a local photo host so the property gets a listing for a test event
 * and a booking, whose guest the events feed names.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startPhotoServer, type PhotoServer } from '../catalog/support/photo-server';
import { eventually } from '../notifications/support/harness';
import { echoAndAccept } from '../notifications/support/receiver';
import { webhookSuite } from '../notifications/support/suite';
import { ROOT } from '../support/process';
import { validProperty } from './fixtures';
import { jsonRequest, send, type Received } from './http-client';
import { Partners, type Partner } from './partners';

const suite = webhookSuite('cache-control');
const DOC = JSON.parse(readFileSync(join(ROOT, 'docs', 'openapi.json'), 'utf8'));

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

function api(p: Partner | undefined, method: string, path: string, body?: unknown): Promise<Received> {
  const headers = p ? p.auth : {};
  return send(suite.system.gatewayUrl, body === undefined ? { method, path, headers } : jsonRequest(method, path, body, headers));
}

/** `[label, status, Cache-Control]`, so a failure names the answer. */
const caching = (label: string, res: Received) => [label, res.status, res.headers['cache-control']];

test('every answer carrying a token, a secret or personal data is no-store, and so is every other API answer', async () => {
  const p = await partners.partner();
  const seen: unknown[][] = [];
  const expected: unknown[][] = [];
  const check = (label: string, res: Received, status: number) => {
    seen.push(caching(label, res));
    expected.push([label, status, 'no-store']);
  };

  // The token: RFC 6749 §5.1.
  check('POST /v1/token', await send(suite.system.gatewayUrl, { method: 'POST', path: '/v1/token', headers: { Authorization: `Bearer ${p.apiKey}` } }), 200);

  // A property and its read-back, with photos that arrive, so that it has a listing.
  const dir = `/${p.workspaceId}`;
  await photos.image(`${dir}/a.jpg`, 800, 600);
  await photos.image(`${dir}/b.jpg`, 800, 600, 'jpeg', 2);
  const photoList = [`${dir}/a.jpg`, `${dir}/b.jpg`].map((path, position) => ({ url: `${photos.base}${path}`, position }));
  check('PUT /v1/properties/{id}', await api(p, 'PUT', '/v1/properties/villa-1', { ...validProperty(), photos: photoList }), 200);
  const listingId = await eventually(async () => (await api(p, 'GET', '/v1/properties/villa-1')).json.listing_id as string | null, 30_000);
  check('GET /v1/properties/{id}', await api(p, 'GET', '/v1/properties/villa-1'), 200);
  check('GET /v1/properties', await api(p, 'GET', '/v1/properties'), 200);
  check('HEAD /v1/properties', await api(p, 'HEAD', '/v1/properties'), 200);

  // The webhook endpoint: its registration answers the signing secret.
  const receiverPath = `/cache-control/${p.workspaceId}`;
  suite.receiver.on(receiverPath, echoAndAccept);
  const registered = await api(p, 'PUT', '/v1/webhooks/endpoint', { url: `${suite.receiver.baseUrl}${receiverPath}`, events: ['booking.confirmed'] });
  expect(registered.json.signing_secret).toEqual(expect.any(String));
  check('PUT /v1/webhooks/endpoint (signing_secret)', registered, 200);
  check('GET /v1/webhooks/endpoint', await api(p, 'GET', '/v1/webhooks/endpoint'), 200);

  // A test event's delivery, and a real booking: the events feed names its guest.
  const sent = await api(p, 'POST', '/v1/sandbox/events', { event_type: 'booking.confirmed', listing_id: listingId });
  check('POST /v1/sandbox/events', sent, 202);
  check('GET /v1/webhooks/deliveries', await api(p, 'GET', '/v1/webhooks/deliveries'), 200);
  check('GET /v1/webhooks/deliveries/{id}', await api(p, 'GET', `/v1/webhooks/deliveries/${sent.json.event_id as string}`), 200);
  const guestName = `Ada ${p.workspaceId.slice(0, 8)}`;
  const guest = { guestId: `g-${p.workspaceId}`, guestName, partySize: 2, amountPaid: { value: '200.00', currency: 'EUR' }, requiresPayment: false };
  await suite.clients.calendar.confirmBooking({ listingId, checkIn: '2032-03-10', checkOut: '2032-03-12', ...guest });
  const feed = await eventually(async () => {
    const res = await api(p, 'GET', '/v1/events');
    return res.text.includes(guestName) && res;
  }, 30_000);
  check('GET /v1/events (guest_name)', feed, 200);
  check('GET /v1/requests', await api(p, 'GET', '/v1/requests'), 200);
  check('GET /v1/blocks', await api(p, 'GET', '/v1/blocks?from=2032-03-01&to=2032-03-31'), 200);

  // Refusals: problem documents and the token endpoint's {message}.
  check('GET /v1/events without a token', await api(undefined, 'GET', '/v1/events'), 401);
  check('PUT /v1/properties/{id} invalid', await api(p, 'PUT', '/v1/properties/broken', { name: '' }), 400);
  check('GET /v1/webhooks/deliveries/{unknown}', await api(p, 'GET', '/v1/webhooks/deliveries/00000000-0000-4000-8000-000000000000'), 404);
  check('GET /v1/nothing-here', await api(p, 'GET', '/v1/nothing-here'), 404);
  // A route with caching of its own does not pass it to its problem document.
  check('POST /v1/openapi.json', await api(undefined, 'POST', '/v1/openapi.json'), 405);
  check('POST /v1/token refused', await send(suite.system.gatewayUrl, { method: 'POST', path: '/v1/token', headers: { Authorization: 'Bearer psk_test_nope' } }), 401);
  check('GET /console/assets/{unknown}', await api(undefined, 'GET', '/console/assets/nope.js'), 404);
  check('GET /healthz', await api(undefined, 'GET', '/healthz'), 200);

  expect(seen).toEqual(expected);
}, 120_000);

test('the OpenAPI document and the console keep their own caching', async () => {
  const openapi = await api(undefined, 'GET', '/v1/openapi.json');
  const documented = DOC.components.headers[DOC.paths['/openapi.json'].get.responses['200'].headers['Cache-Control'].$ref.split('/').pop()];
  expect(caching('GET /v1/openapi.json', openapi)).toEqual(['GET /v1/openapi.json', 200, documented.schema.const]);
  expect(documented.schema.const).toBe('public, max-age=300');

  const index = await api(undefined, 'GET', '/console/');
  expect(caching('GET /console/', index)).toEqual(['GET /console/', 200, 'no-cache']);
  const again = await send(suite.system.gatewayUrl, { path: '/console/', headers: { 'If-None-Match': String(index.headers.etag) } });
  expect(caching('GET /console/ (304)', again)).toEqual(['GET /console/ (304)', 304, 'no-cache']);
  const asset = /\/console\/assets\/[^"]+/.exec(index.text)![0];
  expect(caching('an asset', await api(undefined, 'GET', asset))).toEqual(['an asset', 200, 'public, max-age=31536000, immutable']);
});
