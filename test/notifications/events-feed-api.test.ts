/**
 * GET /v1/events through the public gateway, on a running system
 * (docs/partners/missed-events.md): a workspace's booking.confirmed and
 * booking.cancelled events, delivered or not, each the envelope its delivery carries;
 * paged with `after`/`limit`; bad input a problem document naming every violation; a
 * production workspace 501 after full validation; another workspace's events never
 * shown. The event-level rules (erasure, retention, concurrent intakes) are in
 * test/notifications/event-feed.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { send, type Received as HttpAnswer } from '../gateway/http-client';
import { Partners } from '../gateway/partners';
import { eventually } from './support/harness';
import { echoAndAccept } from './support/receiver';
import { webhookSuite } from './support/suite';

const suite = webhookSuite('events feed');
let partners: Partners;

beforeAll(async () => {
  partners = new Partners(suite.system);
}, 60_000);
afterAll(() => partners?.close());

const get = (p: { auth: Record<string, string> }, path: string): Promise<HttpAnswer> => send(suite.system.gatewayUrl, { method: 'GET', path, headers: p.auth });

/** The feed once it holds `n` events. */
function feedOf(p: { auth: Record<string, string> }, n: number): Promise<any> {
  return eventually(
    async () => {
      const res = await get(p, '/v1/events?limit=200');
      return res.status === 200 && res.json.items.length >= n && res.json;
    },
    20_000,
    `${n} events in the feed`,
  );
}

test('events of a workspace without an endpoint are in its feed, in order, paged by position', async () => {
  const partner = await partners.partner('sandbox');
  const booking = await suite.driver.confirmBooking(partner.workspaceId, { guestId: `guest-${randomUUID()}`, guestName: 'Ada Lovelace' });
  await suite.driver.cancelBooking(partner.workspaceId, booking.bookingReference, 'guest');
  const all = await feedOf(partner, 2);
  expect(all.items.map((e: any) => [e.event_type, e.data.booking_reference])).toEqual([
    ['booking.confirmed', booking.bookingReference],
    ['booking.cancelled', booking.bookingReference],
  ]);
  expect(all.items[0].data.guest_name).toBe('Ada Lovelace');
  expect(Object.keys(all.items[0])).toEqual(['event_id', 'event_type', 'occurred_at', 'data']);
  expect([all.has_more, all.after_expired]).toEqual([false, false]);

  const first = await get(partner, '/v1/events?limit=1');
  expect([first.status, first.json.items.length, first.json.has_more]).toEqual([200, 1, true]);
  expect(first.headers['ratelimit-limit']).toBeDefined();
  const rest = await get(partner, `/v1/events?after=${first.json.next_after}&limit=1`);
  expect([rest.json.items[0].event_id, rest.json.has_more]).toEqual([all.items[1].event_id, false]);
  const after = await get(partner, `/v1/events?after=${rest.json.next_after}`);
  expect([after.json.items, after.json.next_after]).toEqual([[], rest.json.next_after]);

  // Another sandbox workspace sees none of them.
  const other = await partners.partner('sandbox');
  const theirs = await get(other, '/v1/events');
  expect([theirs.status, theirs.json.items, theirs.json.next_after]).toEqual([200, [], null]);
});

test("a delivered event's feed entry is the body the endpoint received", async () => {
  const partner = await partners.partner('sandbox');
  const path = `/events-feed/${partner.workspaceId}`;
  suite.receiver.on(path, echoAndAccept);
  const reg = await send(suite.system.gatewayUrl, {
    method: 'PUT',
    path: '/v1/webhooks/endpoint',
    headers: { ...partner.auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ url: `${suite.receiver.baseUrl}${path}`, events: ['booking.confirmed'] }),
  });
  expect([reg.status, reg.json.status]).toEqual([200, 'active']);
  const booking = await suite.driver.confirmBooking(partner.workspaceId, { guestId: `guest-${randomUUID()}`, guestName: 'Grace Hopper' });
  const [delivered] = await suite.receiver.waitFor(
    () => {
      const got = suite.receiver.at(path, 'delivery').filter((r) => r.json?.data?.booking_reference === booking.bookingReference);
      return got.length > 0 && got;
    },
    20_000,
    'the delivery',
  );
  const feed = await feedOf(partner, 1);
  expect(feed.items).toEqual([JSON.parse(delivered!.raw)]);
});

test('bad input names every violation; production answers 501 only after validation; no token is 401', async () => {
  const partner = await partners.partner('sandbox');
  const bad = await get(partner, '/v1/events?after=abc&limit=0&page=2');
  expect(bad.status).toBe(400);
  expect(bad.json.code).toBe('validation_failed');
  expect(bad.json.errors).toEqual(
    expect.arrayContaining([
      { field: 'after', code: 'pattern' },
      { field: 'limit', code: 'minimum' },
      { field: 'page', code: 'unknown_field' },
    ]),
  );
  expect((await get(partner, `/v1/events?after=${'9'.repeat(19)}`)).json.errors).toEqual([{ field: 'after', code: 'pattern' }]);

  const production = await partners.partner('production');
  const valid = await get(production, '/v1/events?after=5&limit=10');
  expect([valid.status, valid.json.code]).toEqual([501, 'not_enabled']);
  expect((await get(production, '/v1/events?limit=201')).status).toBe(400);
  expect((await send(suite.system.gatewayUrl, { method: 'GET', path: '/v1/events' })).status).toBe(401);
});
