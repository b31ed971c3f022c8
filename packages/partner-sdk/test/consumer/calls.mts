/**
 * A partner's TypeScript (ES module) program against the installed package:
 * test/install.test.ts compiles it with the repository's tsc in a project outside this
 * repository (`moduleResolution` nodenext) and checks that it calls every public method
 * of PartnerClient. Compiled, not run.
 */
import {
  type Block,
  isProblem,
  PartnerClient,
  type Property,
  type TestEvent,
  type WebhookEndpoint,
  type WebhookEvent,
  signWebhook,
  verifyWebhook,
} from '@partner-sync/partner-sdk';

declare const property: Property;

export async function everyMethod(client: PartnerClient): Promise<string[]> {
  const seen: string[] = [];
  const token = await client.token();
  seen.push(token.accessToken, String(token.sandbox));
  const upsert = await client.putProperty('villa-42', property);
  seen.push(upsert.result);
  seen.push(String((await client.listProperties({ page: 1, page_size: 10 })).has_more));
  for await (const item of client.properties({ page_size: 100 })) seen.push(item.provider_id, item.listing_id ?? '');
  const stored = await client.getProperty('villa-42');
  seen.push(stored.property.name, ...stored.photos.map((photo) => `${photo.state}:${photo.reason ?? ''}`));

  // `reason` is optional (default reserved), as in docs/openapi.json.
  const withoutReason: Block = { listing_id: 'lst_1', check_in: '2030-08-01', check_out: '2030-08-04' };
  seen.push(String((await client.putBlock('res-1', withoutReason)).nights));
  await client.putBlock('res-2', { provider_id: 'villa-42', check_in: '2030-08-01', check_out: '2030-08-04' });
  await client.putBlock('res-3', { provider_id: 'villa-42', check_in: '2030-09-01', check_out: '2030-09-04', reason: 'maintenance' });
  // @ts-expect-error a reason outside the closed set
  await client.putBlock('res-4', { listing_id: 'lst_1', check_in: '2030-08-01', check_out: '2030-08-04', reason: 'holiday' });
  // @ts-expect-error check_out is required
  await client.putBlock('res-5', { listing_id: 'lst_1', check_in: '2030-08-01' });
  await client.deleteBlock('res-1');

  const page = await client.listBlocks({ from: '2030-08-01', to: '2030-09-01', page: 1, page_size: 50 });
  seen.push(String(page.has_more));
  for await (const item of client.blocks({ from: '2030-08-01' })) seen.push(item.external_uid);
  const nights = await client.listListingNights('lst_1', { from: '2030-08-01', to: '2030-08-08' });
  for (const night of nights.items) seen.push(`${night.date} ${night.state} ${night.external_uid ?? night.booking_reference ?? ''}`);

  const endpoint: WebhookEndpoint = { url: 'https://hooks.partner.example/psync', events: ['booking.confirmed', 'user.erased'] };
  const state = await client.putWebhookEndpoint(endpoint);
  seen.push(state.status, state.signing_secret ?? '');
  seen.push((await client.getWebhookEndpoint()).url);
  const ack = await client.acknowledgeDeletionRequest('7d0c2c52-3c1e-4a8e-9a52-0c7e1b6f2d11', { completed_at: '2030-08-01T10:00:00Z' });
  seen.push(ack.acknowledged_at);
  await client.acknowledgeDeletionRequest('7d0c2c52-3c1e-4a8e-9a52-0c7e1b6f2d12');

  const test: TestEvent = { event_type: 'booking.confirmed', listing_id: 'lst_1' };
  const queued = await client.triggerTestEvent(test);
  const deliveries = await client.listDeliveries({ state: 'delivered', event_type: 'booking.confirmed', page_size: 10 });
  seen.push(String(deliveries.items.length));
  for await (const delivery of client.deliveries({ state: 'abandoned' })) seen.push(delivery.event_id);
  seen.push((await client.getDelivery(queued.event_id)).state);
  seen.push((await client.resendDelivery(queued.event_id)).event_id);
  const requests = await client.listRequests({ code: 'validation_failed', limit: 10 });
  seen.push(requests.items[0]?.instance ?? '', requests.next_cursor ?? '');
  for await (const request of client.requests({ status: 400 })) seen.push(request.route, String(request.errors.length));

  const feed = await client.listEvents({ after: '41', limit: 10 });
  seen.push(feed.next_after ?? '', String(feed.has_more), String(feed.after_expired));
  for (const e of feed.items) if (e.event_type === 'booking.cancelled') seen.push(e.data.initiated_by);
  for await (const { event, nextAfter } of client.events('41', 50)) seen.push(event.event_id, nextAfter);

  const started = await client.startEndpointCheck();
  seen.push(started.status, (await client.getEndpointCheck(started.id)).checks.map((c) => `${c.name}:${String(c.passed)}`).join(','));
  seen.push((await client.checkEndpoint(500)).status);

  const openapi = await client.api.GET('/openapi.json');
  seen.push(typeof openapi.data);
  seen.push(String(client.rateLimit?.remaining), String(client.tokenRateLimit?.limit), String(client.tokenExchanges));
  return seen;
}

export function receive(rawBody: Buffer, headers: Record<string, string>, secret: string): string {
  const event: WebhookEvent = verifyWebhook(rawBody, headers, [secret]);
  if (event.event_type === 'booking.confirmed') return `${event.data.amount_paid.value} ${event.data.amount_paid.currency}`;
  return signWebhook(secret, Math.floor(Date.now() / 1000), rawBody);
}

export function conflicts(e: unknown): string[] {
  return isProblem(e, 'conflict') ? e.conflicts : [];
}
