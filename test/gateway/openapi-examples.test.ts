/**
 * The examples of the OpenAPI document (docs/openapi.json) sent to a running system:
 * each request example gets the status of the response example of the same name, and
 * the answer validates against that response's schema; an error example's answer has
 * its `code` (and exactly its `errors[]` / `conflicts[]`).
 *
 * The system is started as an operator starts it (test/support/system.ts, with the
 * webhook test set-up: a partner receiver on https://localhost:8443 trusted by the
 * system); partners and tokens through the identity service and POST /v1/token
 * (partners.ts). Only the partner's identifiers are replaced before sending: the
 * examples' listing id by a listing of the test workspace, the webhook URL by the
 * receiver's, the `event_id` by that of a real `user.erased` delivery, a test delivery's
 * `event_id` by that of the test event the sandbox tools' examples send.
 *
 * What is not sent, and why, is listed in NOT_SENT; the last test fails when an example
 * is neither sent nor listed there.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXAMPLE_IDS } from '../../gateway/contract/document-values';
import { OPENAPI_FILE } from '../../gateway/openapi';
import { ROOT } from '../support/process';
import { eventually } from '../notifications/support/harness';
import { webhookSuite } from '../notifications/support/suite';
import { send, type Received } from './http-client';
import { type Partner, Partners } from './partners';
import { documentAjv, exampleCall, type Operation, operations, responseExamples, type Doc } from './openapi-walk';

const suite = webhookSuite('openapi-examples');

/** Response examples not sent to the system, by `status name`, with the reason. */
const NOT_SENT: Record<string, string> = {
  '403 scope_mismatch': 'needs a token whose environment disagrees with its workspace: not producible through the public API',
  '429 quota_used_up': "needs the key's whole hourly quota spent (test/gateway covers rate limiting with a small quota)",
  '429 too_many_exchanges': 'needs the token ceiling spent (covered by the token tests)',
  '429 too_many_failures': 'needs a run of failed exchanges (covered by gateway/token-failures.test.ts)',
  '500 internal_error': "a fault on the service's side",
  '503 unavailable': 'needs a capability switched off',
  '503 not_configured': 'needs a deployment without a token-signing key',
  '200 published': 'a response-only example: the state after photo processing, which needs reachable image URLs',
  '200 not_echoed': 'a response-only example: an endpoint that does not echo the challenge',
  '200 failed': 'a response-only example: a finished run, read by the id its POST answered (test/notifications/endpoint-checks.test.ts reads runs)',
  '200 pending': 'a response-only example: an endpoint that does not echo the challenge',
};

let doc: Doc;
let ops: Operation[];
let schemaAt: ReturnType<typeof documentAjv>['schemaAt'];
let partners: Partners;
let sandbox: Partner;
let production: Partner;
let listingId: string;
let eventId: string | undefined;
/** A test event's delivery (the sandbox tools' examples). */
let deliveryEventId: string | undefined;
const receiverPath = `/openapi-examples/${randomUUID()}`;
/** `KEY status name` of every response example sent. */
const sent = new Set<string>();

beforeAll(async () => {
  doc = JSON.parse(readFileSync(join(ROOT, OPENAPI_FILE), 'utf8'));
  ops = operations(doc);
  ({ schemaAt } = documentAjv(doc));
  partners = new Partners(suite.system);
  sandbox = await partners.partner('sandbox');
  production = await partners.partner('production');
  listingId = (await suite.clients.catalog.createListing({ workspaceId: sandbox.workspaceId })).listing!.listingId;
}, 120_000);

afterAll(() => partners?.close());

/** The examples' placeholders → this test's identifiers. */
function substitute(text: string): string {
  let out = text.split(EXAMPLE_IDS.listingId).join(listingId).split(EXAMPLE_IDS.webhookUrl).join(`${suite.receiver.baseUrl}${receiverPath}`);
  if (eventId) out = out.split(EXAMPLE_IDS.eventId).join(eventId);
  if (deliveryEventId) out = out.split(EXAMPLE_IDS.deliveryEventId).join(deliveryEventId);
  return out;
}

interface Options {
  /** The request example whose request is sent (default: the one named like the response example). */
  requestAs?: string;
  /** Authorization header; default: the sandbox partner's access token; null: none. */
  auth?: Record<string, string> | null;
}

/** Sends the request of response example `name` of operation `key` and checks the answer against the example. */
async function sendExample(key: string, name: string, opts: Options = {}): Promise<Received> {
  const op = ops.find((o) => o.key === key);
  if (!op) throw new Error(`no operation ${key}`);
  const matches = responseExamples(doc, op).filter((r) => r.name === name);
  expect([key, name, matches.length]).toEqual([key, name, 1]);
  const resp = matches[0]!;
  const call = exampleCall(op, opts.requestAs ?? name, opts.requestAs ? undefined : resp.example['x-request']);
  const headers: Record<string, string> = { ...(opts.auth === undefined ? sandbox.auth : (opts.auth ?? {})) };
  const path = substitute(call.url);
  const res = await send(
    suite.system.gatewayUrl,
    call.body === undefined
      ? { method: call.method, path, headers }
      : { method: call.method, path, headers: { ...headers, 'Content-Type': 'application/json' }, body: substitute(JSON.stringify(call.body)) },
  );
  expect([key, name, res.status, res.status === Number(resp.status) ? '' : res.text]).toEqual([key, name, Number(resp.status), '']);
  expect([key, name, res.headers['content-type']]).toEqual([key, name, expect.stringContaining(resp.mediaType)]);
  // The caching the document states for this answer (no-store, but for the document itself).
  const cacheControl = doc.components.headers[String(resp.response.headers?.['Cache-Control']?.$ref).split('/').pop()!]?.schema.const;
  expect([key, name, res.headers['cache-control']]).toEqual([key, name, cacheControl ?? 'documented']);
  const fn = schemaAt([...resp.mediaAt, 'schema']);
  expect([key, name, fn(res.json) ? [] : fn.errors]).toEqual([key, name, []]);
  const want = resp.example.value;
  if (resp.mediaType === 'application/problem+json') {
    expect([key, name, res.json.code, res.json.errors, res.json.conflicts]).toEqual([key, name, want.code, want.errors, want.conflicts]);
  }
  sent.add(`${key} ${resp.status} ${name}`);
  return res;
}

/** The errors every token-authenticated operation documents: 400, 401 and 501 (production). */
async function sendCommonErrors(key: string, requestAs?: string): Promise<void> {
  await sendExample(key, 'invalid');
  await sendExample(key, 'missing_token', { auth: null, ...(requestAs ? { requestAs } : {}) });
  await sendExample(key, 'production', { auth: production.auth, ...(requestAs ? { requestAs } : {}) });
}

test('the running system serves the committed document', async () => {
  const res = await send(suite.system.gatewayUrl, { path: '/v1/openapi.json' });
  expect(res.json).toEqual(doc);
  await sendExample('GET /openapi.json', 'document', { auth: null });
});

test('POST /token', async () => {
  const res = await sendExample('POST /token', 'token', { auth: { Authorization: `Bearer ${sandbox.apiKey}` } });
  expect(res.json).toEqual(expect.objectContaining({ token_type: 'Bearer', workspace_id: sandbox.workspaceId, sandbox: true }));
  await sendExample('POST /token', 'invalid_key', { auth: { Authorization: 'Bearer psk_nope_nope' } });
  // The body is ignored (the example sends one): none, or one that is not JSON, gets a token just the same.
  for (const extra of [{}, { headers: { 'Content-Type': 'text/plain' }, body: 'not json at all' }]) {
    const again = await send(suite.system.gatewayUrl, {
      method: 'POST',
      path: '/v1/token',
      ...extra,
      headers: { ...(extra.headers ?? {}), Authorization: `Bearer ${sandbox.apiKey}` },
    });
    expect([again.status, again.json.token_type]).toEqual([200, 'Bearer']);
  }
});

test('outside the operations: a path not in the document (404) and another method on a documented path (405), as NotFound and MethodNotAllowed say', async () => {
  const problem = async (response: string, name: string, method: string, path: string) => {
    const media = doc.components.responses[response].content['application/problem+json'];
    const res = await send(suite.system.gatewayUrl, { method, path, headers: sandbox.auth });
    const fn = schemaAt(['components', 'responses', response, 'content', 'application/problem+json', 'schema']);
    expect([response, res.status, res.json.code, fn(res.json) ? [] : fn.errors]).toEqual([response, media.examples[name].value.status, media.examples[name].value.code, []]);
    // The rate-limit headers of the presented token's key (looked at, not counted).
    expect(res.headers['ratelimit-policy']).toEqual(expect.stringMatching(/^[0-9]+;w=3600$/));
    sent.add(`components/responses/${response} ${name}`);
    return res;
  };
  await problem('NotFound', 'unknown_path', 'GET', '/v1/bookings');
  const res = await problem('MethodNotAllowed', 'other_method', 'GET', `/v1/blocks/${EXAMPLE_IDS.externalUid}`);
  expect(res.headers.allow).toBe(doc.paths['/blocks/{external_uid}']['x-other-methods'].allow);
});

test('GET /properties/{provider_id} before the property is pushed: 404, and the common errors', async () => {
  await sendExample('GET /properties/{provider_id}', 'unknown_listing');
  await sendCommonErrors('GET /properties/{provider_id}');
});

test('PUT /properties/{provider_id}', async () => {
  const complete = await sendExample('PUT /properties/{provider_id}', 'complete');
  expect(complete.json).toEqual(expect.objectContaining({ provider_id: EXAMPLE_IDS.providerId, result: 'created', listing_id: null, publishable: false }));
  expect(complete.json.missing).toContain('photos_processing');
  const incomplete = await sendExample('PUT /properties/{provider_id}', 'incomplete');
  expect(incomplete.json.missing).toEqual(expect.arrayContaining(['price', 'amenities', 'unlisted']));
  await sendCommonErrors('PUT /properties/{provider_id}', 'complete');
});

test('GET /properties/{provider_id} and GET /properties once pushed', async () => {
  // A 200 of the documented shape; the example's photo states need reachable image URLs.
  const one = await sendExample('GET /properties/{provider_id}', 'photo_rejected');
  expect(one.json).toEqual(expect.objectContaining({ provider_id: EXAMPLE_IDS.providerId, listing_id: null }));
  const page = await sendExample('GET /properties', 'page');
  expect(page.json).toEqual({ items: [one.json], has_more: false });
  await sendCommonErrors('GET /properties');
});

test('GET /listings/{listing_id}/nights', async () => {
  const res = await sendExample('GET /listings/{listing_id}/nights', 'week');
  expect(res.json.items.map((n: { date: string }) => n.date)).toEqual(['2030-07-01', '2030-07-02', '2030-07-03', '2030-07-04', '2030-07-05', '2030-07-06', '2030-07-07']);
  await sendCommonErrors('GET /listings/{listing_id}/nights');
  // The shared 404 example has no request of its own: the listing is one no workspace has.
  const unknown = await send(suite.system.gatewayUrl, { path: `/v1/listings/${EXAMPLE_IDS.unknownListingId}/nights?from=2030-07-01&to=2030-07-08`, headers: sandbox.auth });
  expect([unknown.status, unknown.json.code]).toEqual([404, 'property_not_found']);
  sent.add('GET /listings/{listing_id}/nights 404 unknown_listing');
});

test('GET /blocks', async () => {
  await sendExample('GET /blocks', 'page');
  await sendExample('GET /blocks', 'past_the_end');
  await sendCommonErrors('GET /blocks', 'page');
});

test('PUT /blocks/{external_uid}', async () => {
  const created = await sendExample('PUT /blocks/{external_uid}', 'created');
  expect(created.json).toEqual({ result: 'created', nights: 4, listing_id: listingId });
  const moved = await sendExample('PUT /blocks/{external_uid}', 'moved');
  expect(moved.json).toEqual({ result: 'updated', nights: 3, listing_id: listingId });
  await sendExample('PUT /blocks/{external_uid}', 'unknown_listing');
  // The nights the 409 example names are held by a marketplace guest.
  await suite.clients.calendar.placeHold({ listingId, checkIn: '2030-08-02', checkOut: '2030-08-04', requiresPayment: false });
  await sendExample('PUT /blocks/{external_uid}', 'colliding');
  await sendExample('PUT /blocks/{external_uid}', 'by_provider_id');
  await sendCommonErrors('PUT /blocks/{external_uid}', 'created');
  const list = await send(suite.system.gatewayUrl, { path: '/v1/blocks?from=2030-07-01&to=2030-07-31', headers: sandbox.auth });
  expect(list.json.items).toEqual([expect.objectContaining({ external_uid: EXAMPLE_IDS.externalUid, check_in: '2030-07-12', check_out: '2030-07-15', nights: 3 })]);
});

test('DELETE /blocks/{external_uid}', async () => {
  const op = ops.find((o) => o.key === 'DELETE /blocks/{external_uid}')!;
  const call = exampleCall(op, '(parameters)');
  for (let i = 0; i < 2; i++) {
    // 204 with no body, whether the block existed or not.
    const res = await send(suite.system.gatewayUrl, { method: call.method, path: call.url, headers: sandbox.auth });
    expect([i, res.status, res.text]).toEqual([i, 204, '']);
  }
  sent.add('DELETE /blocks/{external_uid} 204 (no body)');
  await sendCommonErrors('DELETE /blocks/{external_uid}');
});

test('GET /webhooks/endpoint before any registration: 404, and the common errors', async () => {
  await sendExample('GET /webhooks/endpoint', 'none_registered');
  await sendCommonErrors('GET /webhooks/endpoint');
});

test('PUT /webhooks/endpoint, and the acknowledgement of a real user.erased delivery', async () => {
  const registered = await sendExample('PUT /webhooks/endpoint', 'register');
  expect(registered.json).toEqual(expect.objectContaining({ status: 'active', signing_secret: expect.stringMatching(/^whsec_/) }));
  await sendCommonErrors('PUT /webhooks/endpoint', 'register');

  // A guest with a booking on the workspace erases their account: a user.erased delivery.
  const guestId = `guest-${randomUUID()}`;
  await suite.driver.confirmBooking(sandbox.workspaceId, { guestId, guestName: 'Ada Lovelace' });
  await suite.driver.eraseGuest(guestId);
  const erased = await suite.receiver.waitFor(
    () => suite.receiver.at(receiverPath, 'delivery').find((r) => r.json?.event_type === 'user.erased'),
    30_000,
    'the user.erased delivery',
  );
  eventId = erased.json.event_id as string;

  const first = await sendExample('POST /deletion-requests/{event_id}/acknowledge', 'completed_at');
  expect(first.json.event_id).toBe(eventId);
  const again = await sendExample('POST /deletion-requests/{event_id}/acknowledge', 'now');
  expect(again.json.acknowledged_at).toBe(first.json.acknowledged_at);
  await sendExample('POST /deletion-requests/{event_id}/acknowledge', 'unknown_event');
  await sendCommonErrors('POST /deletion-requests/{event_id}/acknowledge', 'now');

  const paused = await sendExample('PUT /webhooks/endpoint', 'pause');
  expect(paused.json).toEqual({ url: `${suite.receiver.baseUrl}${receiverPath}`, events: [], status: 'active' });
}, 120_000);

test('GET /webhooks/endpoint once registered: never the secret', async () => {
  const res = await sendExample('GET /webhooks/endpoint', 'active');
  expect(res.json).toEqual({ url: `${suite.receiver.baseUrl}${receiverPath}`, events: [], status: 'active' });
});

test('the sandbox tools: test events, their deliveries in the log, a resend; a paused endpoint refuses both', async () => {
  const url = `${suite.receiver.baseUrl}${receiverPath}`;
  const events = ['booking.confirmed', 'booking.cancelled', 'user.erased'];
  // Active again: the test above ended by pausing delivery.
  const active = await send(suite.system.gatewayUrl, {
    method: 'PUT',
    path: '/v1/webhooks/endpoint',
    headers: { ...sandbox.auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ url, events }),
  });
  expect(active.json.status).toBe('active');

  const confirmed = await sendExample('POST /sandbox/events', 'confirmed');
  deliveryEventId = confirmed.json.event_id as string;
  for (const name of ['cancelled', 'erased', 'dated', 'unknown_listing']) await sendExample('POST /sandbox/events', name);
  await sendCommonErrors('POST /sandbox/events', 'confirmed');
  await eventually(
    async () => {
      const res = await send(suite.system.gatewayUrl, { path: `/v1/webhooks/deliveries/${deliveryEventId}`, headers: sandbox.auth });
      return res.json?.state === 'delivered';
    },
    20_000,
    'the test event delivered',
  );

  const one = await sendExample('GET /webhooks/deliveries/{event_id}', 'delivery');
  expect(one.json).toEqual(expect.objectContaining({ event_id: deliveryEventId, test: true, state: 'delivered', attempts_total: 1 }));
  await sendExample('GET /webhooks/deliveries/{event_id}', 'unknown_delivery');
  await sendCommonErrors('GET /webhooks/deliveries/{event_id}');
  await sendExample('GET /webhooks/deliveries', 'page');
  await sendExample('GET /webhooks/deliveries', 'past_the_end');
  await sendCommonErrors('GET /webhooks/deliveries');

  const resent = await sendExample('POST /webhooks/deliveries/{event_id}/resend', 'resent');
  expect([resent.json.event_id, resent.json.state]).toEqual([deliveryEventId, 'pending']);
  await sendExample('POST /webhooks/deliveries/{event_id}/resend', 'unknown_delivery');
  // The real user.erased delivery of the test above, delivered: its body is gone.
  await sendExample('POST /webhooks/deliveries/{event_id}/resend', 'not_resendable');
  await sendCommonErrors('POST /webhooks/deliveries/{event_id}/resend');

  const paused = await send(suite.system.gatewayUrl, {
    method: 'PUT',
    path: '/v1/webhooks/endpoint',
    headers: { ...sandbox.auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ url, events: [] }),
  });
  expect(paused.json.events).toEqual([]);
  await sendExample('POST /sandbox/events', 'endpoint_not_active');
  await sendExample('POST /webhooks/deliveries/{event_id}/resend', 'endpoint_not_active');
}, 120_000);

test('the events feed and the receiver checks', async () => {
  await sendExample('GET /events', 'page');
  await sendExample('GET /events', 'caught_up');
  await sendCommonErrors('GET /events', 'page');
  // The test above ended with the endpoint paused.
  await sendExample('POST /sandbox/endpoint-checks', 'endpoint_not_active');
  const active = await send(suite.system.gatewayUrl, {
    method: 'PUT',
    path: '/v1/webhooks/endpoint',
    headers: { ...sandbox.auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ url: `${suite.receiver.baseUrl}${receiverPath}`, events: ['booking.confirmed'] }),
  });
  expect(active.json.status).toBe('active');
  const started = await sendExample('POST /sandbox/endpoint-checks', 'started');
  expect(started.json.status).toBe('running');
  await sendCommonErrors('POST /sandbox/endpoint-checks', 'started');
  await sendExample('GET /sandbox/endpoint-checks/{id}', 'unknown');
  await sendCommonErrors('GET /sandbox/endpoint-checks/{id}', 'unknown');
}, 120_000);

test('GET /requests: the request log finds a validation_failed answer by its instance', async () => {
  const bad = await send(suite.system.gatewayUrl, { method: 'PUT', path: '/v1/blocks/resv-1', headers: { ...sandbox.auth, 'Content-Type': 'application/json' }, body: '{}' });
  expect(bad.status).toBe(400);
  const page = await eventually(
    async () => {
      const res = await sendExample('GET /requests', 'page');
      return (res.json.items as { instance: string }[]).some((i) => i.instance === bad.json.instance) && res;
    },
    15_000,
    'the 400 in the request log',
  );
  expect(page.json.items[0]).toEqual(expect.objectContaining({ route: '/v1/blocks/{external_uid}', status: 400, code: 'validation_failed' }));
  await sendExample('GET /requests', 'first_page');
  await sendCommonErrors('GET /requests');
});

test('every response example of every operation was sent, or is listed in NOT_SENT with its reason', () => {
  const missing: string[] = [];
  for (const op of ops.filter((o) => o.at[0] === 'paths')) {
    for (const r of responseExamples(doc, op)) {
      const id = `${op.key} ${r.status} ${r.name}`;
      if (!sent.has(id) && !NOT_SENT[`${r.status} ${r.name}`]) missing.push(id);
    }
  }
  for (const [response, name] of [
    ['NotFound', 'unknown_path'],
    ['MethodNotAllowed', 'other_method'],
  ]) {
    if (!sent.has(`components/responses/${response} ${name}`)) missing.push(`components/responses/${response} ${name}`);
  }
  expect(missing).toEqual([]);
  expect(sent.size).toBeGreaterThanOrEqual(37);
});
