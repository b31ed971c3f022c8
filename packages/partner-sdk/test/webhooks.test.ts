/**
 * The SDK's webhook side against real deliveries: the running system with the
 * notifications test set-up (a partner receiver on https://localhost:8443 trusted by
 * the system, test/notifications/support/suite.ts). The endpoint is registered, test
 * events are triggered and resent, and the log is read through the SDK; every request
 * the receiver got is verified with `verifyWebhook`, including a real booking's and,
 * after a secret rotation, with either secret alone.
 */
import { randomUUID } from 'node:crypto';
import { PartnerClient, verifyWebhook, WebhookVerificationError, type WebhookEvent } from '../src';
import { eventually, psync } from '../../../test/notifications/support/harness';
import type { Received } from '../../../test/notifications/support/receiver';
import { webhookSuite } from '../../../test/notifications/support/suite';

const suite = webhookSuite('partner-sdk-webhooks');
const path = `/partner-sdk/${randomUUID()}`;
let client: PartnerClient;
let workspaceId: string;
let listingId: string;
let secret: string;

beforeAll(async () => {
  workspaceId = await suite.driver.newWorkspace('sandbox');
  const key = await suite.clients.identity.issueKey({ workspaceId });
  client = new PartnerClient({ baseUrl: `${suite.system.gatewayUrl}/v1`, apiKey: key.apiKey });
  listingId = (await suite.clients.catalog.createListing({ workspaceId })).listing!.listingId;
}, 60_000);

/** The delivery of `eventId` the receiver got, the `n`th one (resends arrive again). */
function arrival(eventId: string, n = 1): Promise<Received> {
  return suite.receiver.waitFor(() => suite.receiver.at(path, 'delivery').filter((r) => r.json?.event_id === eventId)[n - 1], 30_000, `delivery ${n} of ${eventId}`);
}

function verified(r: Received, secrets: string[]): WebhookEvent {
  return verifyWebhook(r.raw, r.headers, secrets);
}

test('registration through the SDK: the challenge it answered verifies under the secret it returned', async () => {
  const state = await client.putWebhookEndpoint({ url: `${suite.receiver.baseUrl}${path}`, events: ['booking.confirmed', 'booking.cancelled', 'user.erased'] });
  expect(state).toEqual(expect.objectContaining({ status: 'active', signing_secret: expect.stringMatching(/^whsec_/) }));
  secret = state.signing_secret!;
  const [challenge] = suite.receiver.at(path, 'challenge');
  const event = verified(challenge!, [secret]);
  expect(event.event_type).toBe('endpoint.challenge');
});

test('a test event triggered through the SDK arrives signed, verifies typed, is logged as delivered and can be resent', async () => {
  const queued = await client.triggerTestEvent({ event_type: 'booking.confirmed', listing_id: listingId });
  expect(queued).toEqual(expect.objectContaining({ event_type: 'booking.confirmed', test: true }));

  const first = await arrival(queued.event_id);
  const event = verified(first, [secret]);
  if (event.event_type !== 'booking.confirmed') throw new Error(`unexpected ${event.event_type}`);
  expect(event).toEqual(expect.objectContaining({ event_id: queued.event_id, test: true }));
  expect(event.data.listing_id).toBe(listingId);
  expect(() => verified(first, ['whsec_not-the-secret'])).toThrow(WebhookVerificationError);

  await eventually(async () => (await client.getDelivery(queued.event_id)).state === 'delivered', 30_000, 'delivered state');
  const logged: string[] = [];
  for await (const d of client.deliveries({ event_type: 'booking.confirmed' })) logged.push(d.event_id);
  expect(logged).toContain(queued.event_id);

  await client.resendDelivery(queued.event_id);
  const second = await arrival(queued.event_id, 2);
  expect(second.raw).toBe(first.raw);
  expect(verified(second, [secret])).toEqual(event);
});

test('a real booking.confirmed (a marketplace booking) verifies, its guest name intact in UTF-8', async () => {
  const booking = await suite.driver.confirmBooking(workspaceId, { guestId: `guest-${randomUUID()}`, guestName: 'Zoë Ångström 李' });
  const got = await suite.receiver.waitFor(
    () => suite.receiver.at(path, 'delivery').find((r) => r.json?.data?.booking_reference === booking.bookingReference),
    30_000,
    'the booking.confirmed delivery',
  );
  const event = verified(got, [secret]);
  if (event.event_type !== 'booking.confirmed') throw new Error(`unexpected ${event.event_type}`);
  expect(event.data.guest_name).toBe('Zoë Ångström 李');
  expect(event.test).toBeUndefined();
});

test('after a secret rotation each delivery verifies with the new secret alone and with the old one alone', async () => {
  const rotated = (await psync(suite.system, ['webhook', 'rotate-secret', '--workspace', workspaceId])) as { signing_secret: string };
  const old = secret;
  secret = rotated.signing_secret;
  expect(secret).not.toBe(old);
  const queued = await client.triggerTestEvent({ event_type: 'user.erased', listing_id: listingId });
  const got = await arrival(queued.event_id);
  expect(got.headers['x-signature-previous']).toMatch(/^[0-9a-f]{64}$/);
  expect(verified(got, [secret]).event_type).toBe('user.erased');
  expect(verified(got, [old]).event_type).toBe('user.erased');
  expect(verified(got, [old, secret]).event_type).toBe('user.erased');
});
