/**
 * The partners' sandbox tools through the public gateway (docs/partners/sandbox.md):
 * POST /v1/sandbox/events, GET /v1/webhooks/deliveries, GET
 * /v1/webhooks/deliveries/{event_id} and POST /v1/webhooks/deliveries/{event_id}/resend.
 *
 * - A test event arrives signed at a real HTTPS receiver (https://localhost:8443, trusted
 *   through NODE_EXTRA_CA_CERTS, allowed by EGRESS_ALLOW_CIDRS), marked `"test": true`,
 *   with data built from the partner's listing; the log shows it and its attempts.
 * - Failed attempts, abandonment and a resend: the same event_id and body, signed afresh.
 * - Bad input is a problem document naming every violation; a production workspace gets
 *   501 after full validation; every call is counted toward the key's rate limit.
 * - Tenant isolation for each endpoint: another workspace's listing and deliveries are
 *   404s, indistinguishable from unknown ones, and nothing is sent or changed for them.
 * - In split mode (one process per service) the same trigger reaches the receiver.
 *
 * WEBHOOK_RETRY_SCHEDULE=1,1,1 (the harness default): four attempts over ~3 s.
 */
import { randomUUID } from 'node:crypto';
import { backends } from '../support/system';
import { canSplit, startSplitSystem, type SplitSystem } from '../support/split-system';
import { send, type Received as HttpAnswer } from '../gateway/http-client';
import { Partners, type Partner } from '../gateway/partners';
import { eventually, holdsFor, psync, SystemClients, webhookEnv } from './support/harness';
import { echoAndAccept, verifyDelivery, type Handler, type Received } from './support/receiver';
import { webhookSuite } from './support/suite';

const suite = webhookSuite('sandbox tools');
const ALL = ['booking.confirmed', 'booking.cancelled', 'user.erased'];
const DAY_MS = 86_400_000;

let partners: Partners;

beforeAll(async () => {
  partners = new Partners(suite.system);
}, 60_000);
afterAll(() => partners?.close());

/** One public call. */
function call(baseUrl: string, p: { auth: Record<string, string> }, method: string, path: string, body?: unknown): Promise<HttpAnswer> {
  return send(
    baseUrl,
    body === undefined
      ? { method, path, headers: p.auth }
      : { method, path, headers: { ...p.auth, 'Content-Type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) },
  );
}

const api = (p: { auth: Record<string, string> }, method: string, path: string, body?: unknown) => call(suite.system.gatewayUrl, p, method, path, body);

/** A sandbox partner with a listing, whose endpoint (its own receiver path) answers with `handler`. */
async function partnerWithEndpoint(handler: Handler = echoAndAccept, events: string[] = ALL, env: 'sandbox' | 'production' = 'sandbox') {
  const partner = await partners.partner(env);
  const listingId = (await suite.clients.catalog.createListing({ workspaceId: partner.workspaceId, name: 'Sea view' })).listing!.listingId;
  const path = `/sandbox-tools/${partner.workspaceId}`;
  suite.receiver.on(path, handler);
  let secret = '';
  if (env === 'sandbox') {
    const reg = await api(partner, 'PUT', '/v1/webhooks/endpoint', { url: `${suite.receiver.baseUrl}${path}`, events });
    expect([reg.status, reg.json.status]).toEqual([200, 'active']);
    secret = reg.json.signing_secret;
  }
  return { partner, listingId, path, secret };
}

/** Deliveries received on `path` with this event_id. */
const sentFor = (path: string, eventId: string): Received[] => suite.receiver.at(path, 'delivery').filter((r) => r.json?.event_id === eventId);

/** The delivery as the log shows it, once `ok` holds. */
function logEntry(p: Partner, eventId: string, ok: (d: any) => boolean, what: string): Promise<any> {
  return eventually(
    async () => {
      const res = await api(p, 'GET', `/v1/webhooks/deliveries/${eventId}`);
      return res.status === 200 && ok(res.json) && res.json;
    },
    20_000,
    what,
  );
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const today = () => Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);

function expectProblem(res: HttpAnswer, status: number, code: string, errors?: { field: string; code: string }[]): void {
  expect([res.status, res.headers['content-type'], res.json?.code]).toEqual([status, expect.stringContaining('application/problem+json'), code]);
  if (errors) expect(res.json.errors).toEqual(errors);
  expect(res.headers['ratelimit-remaining']).toEqual(expect.any(String));
}

describe(`partner sandbox tools (${backends.database} + ${backends.bus})`, () => {
  test('a test booking.confirmed arrives signed at the receiver, marked as a test, and the log shows its delivery and attempt', async () => {
    const { partner, listingId, path, secret } = await partnerWithEndpoint();
    const before = Date.now();
    const res = await api(partner, 'POST', '/v1/sandbox/events', { event_type: 'booking.confirmed', listing_id: listingId });
    expect(res.status).toBe(202);
    expect(res.headers['ratelimit-limit']).toEqual(expect.any(String));
    expect(res.json).toEqual({
      event_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      event_type: 'booking.confirmed',
      test: true,
      state: 'pending',
      occurred_at: expect.any(String),
      queued_at: expect.any(String),
      next_attempt_at: expect.any(String),
      attempts_total: 0,
      attempts: [],
    });
    const eventId = res.json.event_id as string;

    const got = await suite.receiver.waitFor(() => sentFor(path, eventId)[0], 15_000, 'the test delivery');
    expect(verifyDelivery(got, secret)).toEqual({ ok: true, matched: 'signature' });
    expect(Number(got.headers['x-signature-timestamp'])).toBeGreaterThanOrEqual(Math.floor(before / 1000) - 1);
    const checkIn = isoDay(today() + 30 * DAY_MS);
    expect(got.json).toEqual({
      event_id: eventId,
      event_type: 'booking.confirmed',
      occurred_at: res.json.occurred_at,
      data: {
        booking_reference: expect.stringMatching(/^TEST-BK[0-9A-HJKMNP-TV-Z]{10}$/),
        listing_id: listingId,
        provider_id: null,
        check_in: checkIn,
        check_out: isoDay(Date.parse(checkIn) + 2 * DAY_MS),
        check_in_time: '15:00',
        check_out_time: '11:00',
        party_size: 2,
        guest_name: 'Test Guest',
        amount_paid: { value: '200.00', currency: 'EUR' },
      },
      test: true,
    });

    const delivered = await logEntry(partner, eventId, (d) => d.state === 'delivered', 'delivered in the log');
    expect(delivered).toEqual({
      ...res.json,
      state: 'delivered',
      next_attempt_at: null,
      attempts_total: 1,
      attempts: [{ attempted_at: expect.any(String), response_status: 200, latency_ms: expect.any(Number), outcome: 'delivered', next_attempt_at: null }],
    });
    expect(Date.parse(delivered.attempts[0].attempted_at)).toBeGreaterThanOrEqual(before - 1000);
    expect(delivered.attempts[0].latency_ms).toBeGreaterThanOrEqual(0);

    const list = await api(partner, 'GET', '/v1/webhooks/deliveries');
    expect(list.status).toBe(200);
    expect(list.json).toEqual({ items: [delivered], has_more: false });
  }, 60_000);

  test('the same test booking cancelled and erased; the test erasure is acknowledged like a real one; dates and initiator as given', async () => {
    const { partner, listingId, path, secret } = await partnerWithEndpoint();
    const confirmed = await api(partner, 'POST', '/v1/sandbox/events', {
      event_type: 'booking.confirmed',
      listing_id: listingId,
      check_in: '2031-02-10',
      check_out: '2031-02-15',
    });
    expect(confirmed.status).toBe(202);
    const first = await suite.receiver.waitFor(() => sentFor(path, confirmed.json.event_id)[0], 15_000, 'the confirmation');
    expect(first.json.data).toEqual(expect.objectContaining({ check_in: '2031-02-10', check_out: '2031-02-15', amount_paid: { value: '500.00', currency: 'EUR' } }));
    const ref = first.json.data.booking_reference as string;

    const cancelled = await api(partner, 'POST', '/v1/sandbox/events', { event_type: 'booking.cancelled', listing_id: listingId, booking_reference: ref, initiated_by: 'host' });
    expect([cancelled.status, cancelled.json.event_type, cancelled.json.test]).toEqual([202, 'booking.cancelled', true]);
    const c = await suite.receiver.waitFor(() => sentFor(path, cancelled.json.event_id)[0], 15_000, 'the cancellation');
    expect(verifyDelivery(c, secret).ok).toBe(true);
    expect(c.json).toEqual({
      event_id: cancelled.json.event_id,
      event_type: 'booking.cancelled',
      occurred_at: cancelled.json.occurred_at,
      data: { booking_reference: ref, listing_id: listingId, cancelled_at: cancelled.json.occurred_at, initiated_by: 'host' },
      test: true,
    });

    const erased = await api(partner, 'POST', '/v1/sandbox/events', { event_type: 'user.erased', listing_id: listingId, booking_reference: ref });
    expect(erased.status).toBe(202);
    const e = await suite.receiver.waitFor(() => sentFor(path, erased.json.event_id)[0], 15_000, 'the erasure');
    expect(e.json).toEqual({
      event_id: erased.json.event_id,
      event_type: 'user.erased',
      occurred_at: erased.json.occurred_at,
      data: { booking_references: [ref], provider_ids: [] },
      test: true,
    });
    const ack = await api(partner, 'POST', `/v1/deletion-requests/${erased.json.event_id}/acknowledge`, {});
    expect([ack.status, ack.json.event_id]).toEqual([200, erased.json.event_id]);
    // The operators see it open, then acknowledged; a test request never escalates (deletion-requests.ts).
    const requests = await suite.clients.notifications.listDeletionRequests({ workspaceId: partner.workspaceId });
    expect(requests.items.map((r) => [r.eventId, r.acknowledgedAt !== undefined, r.escalatedAt, r.test])).toEqual([[erased.json.event_id, true, undefined, true]]);

    // Newest first, filtered by kind and state, paged.
    const all = await eventually(
      async () => {
        const l = await api(partner, 'GET', '/v1/webhooks/deliveries?state=delivered');
        return l.json.items.length === 3 && l.json;
      },
      15_000,
      'three delivered',
    );
    expect(all.items.map((d: any) => d.event_type)).toEqual(['user.erased', 'booking.cancelled', 'booking.confirmed']);
    const page1 = await api(partner, 'GET', '/v1/webhooks/deliveries?page_size=2');
    const page2 = await api(partner, 'GET', '/v1/webhooks/deliveries?page_size=2&page=2');
    expect([page1.json.items.length, page1.json.has_more, page2.json.items.length, page2.json.has_more]).toEqual([2, true, 1, false]);
    expect(page2.json.items[0].event_id).toBe(confirmed.json.event_id);
    const kinds = await api(partner, 'GET', '/v1/webhooks/deliveries?event_type=booking.cancelled');
    expect(kinds.json.items.map((d: any) => d.event_id)).toEqual([cancelled.json.event_id]);
    const none = await api(partner, 'GET', '/v1/webhooks/deliveries?state=abandoned');
    expect(none.json).toEqual({ items: [], has_more: false });
  }, 90_000);

  test('failed attempts are logged with status, latency and next attempt; abandoned; a resend sends the same event_id and body, freshly signed', async () => {
    let healed = false;
    const { partner, listingId, path, secret } = await partnerWithEndpoint((r) =>
      r.json?.event_type === 'endpoint.challenge' ? echoAndAccept(r) : { status: healed ? 200 : 503 },
    );
    const res = await api(partner, 'POST', '/v1/sandbox/events', { event_type: 'booking.confirmed', listing_id: listingId });
    const eventId = res.json.event_id as string;
    const abandoned = await logEntry(partner, eventId, (d) => d.state === 'abandoned', 'abandoned after four attempts');
    expect(abandoned.attempts_total).toBe(4);
    expect(abandoned.attempts.map((a: any) => [a.response_status, a.outcome, a.next_attempt_at === null])).toEqual([
      [503, 'http_status', true],
      [503, 'http_status', false],
      [503, 'http_status', false],
      [503, 'http_status', false],
    ]);
    // Newest first; each scheduled retry is after its attempt.
    const times = abandoned.attempts.map((a: any) => Date.parse(a.attempted_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    for (const a of abandoned.attempts.slice(1)) expect(Date.parse(a.next_attempt_at)).toBeGreaterThan(Date.parse(a.attempted_at));
    const failed = sentFor(path, eventId);
    expect(failed).toHaveLength(4);

    healed = true;
    const before = Date.now();
    const resent = await api(partner, 'POST', `/v1/webhooks/deliveries/${eventId.toUpperCase()}/resend`);
    expect([resent.status, resent.json.event_id, resent.json.state, resent.json.attempts_total]).toEqual([202, eventId, 'pending', 4]);
    const again = await suite.receiver.waitFor(() => sentFor(path, eventId)[4], 10_000, 'the resent delivery');
    expect(again.raw).toBe(failed[0]!.raw);
    expect(verifyDelivery(again, secret)).toEqual({ ok: true, matched: 'signature' });
    expect(Number(again.headers['x-signature-timestamp'])).toBeGreaterThanOrEqual(Math.floor(before / 1000));
    const delivered = await logEntry(partner, eventId, (d) => d.state === 'delivered', 'delivered after the resend');
    expect(delivered.attempts_total).toBe(5);
    expect(delivered.attempts[0]).toEqual(expect.objectContaining({ response_status: 200, outcome: 'delivered' }));
    // Operators see the same attempts.
    const shown = await psync(suite.system, ['deliveries', 'show', '--workspace', partner.workspaceId, '--event', eventId]);
    expect(shown).toEqual(expect.objectContaining({ event_id: eventId, state: 'delivered', test: true, attempt_log_total: 5 }));
    expect(shown.attempt_log.map((a: any) => [a.response_status, a.outcome])).toEqual([[200, 'delivered'], ...Array(4).fill([503, 'http_status'])]);
    expect(shown.attempt_log[0].duration_ms).toBe(delivered.attempts[0].latency_ms);

    // A delivered test event keeps its body: it can be resent again (a duplicate the receiver answers 2xx).
    const twice = await api(partner, 'POST', `/v1/webhooks/deliveries/${eventId}/resend`);
    expect(twice.status).toBe(202);
    await suite.receiver.waitFor(() => sentFor(path, eventId)[5], 10_000, 'the second resend');
    expect(sentFor(path, eventId)[5]!.raw).toBe(failed[0]!.raw);
  }, 90_000);

  test('a real delivered event cannot be resent (its body is gone): 409, nothing sent', async () => {
    const { partner, path } = await partnerWithEndpoint();
    await suite.driver.confirmBooking(partner.workspaceId, { guestId: `guest-${randomUUID()}`, guestName: 'Ada Lovelace' });
    const real = await eventually(
      async () => {
        const l = await api(partner, 'GET', '/v1/webhooks/deliveries?state=delivered');
        return l.json.items[0];
      },
      15_000,
      'the real delivery delivered',
    );
    expect([real.event_type, real.test]).toEqual(['booking.confirmed', false]);
    const refused = await api(partner, 'POST', `/v1/webhooks/deliveries/${real.event_id}/resend`);
    expectProblem(refused, 409, 'delivery_not_resendable');
    await holdsFor('the refused resend sends nothing', () => sentFor(path, real.event_id).length === 1, 1500);
  }, 60_000);

  test('no active endpoint subscribed to the kind: 409 webhook_endpoint_not_active, nothing queued', async () => {
    const none = await partners.partner('sandbox');
    const listing = (await suite.clients.catalog.createListing({ workspaceId: none.workspaceId })).listing!.listingId;
    expectProblem(await api(none, 'POST', '/v1/sandbox/events', { event_type: 'booking.confirmed', listing_id: listing }), 409, 'webhook_endpoint_not_active');

    const { partner, listingId, path } = await partnerWithEndpoint(echoAndAccept, ['booking.confirmed']);
    expectProblem(await api(partner, 'POST', '/v1/sandbox/events', { event_type: 'user.erased', listing_id: listingId }), 409, 'webhook_endpoint_not_active');
    const ok = await api(partner, 'POST', '/v1/sandbox/events', { event_type: 'booking.confirmed', listing_id: listingId });
    await logEntry(partner, ok.json.event_id, (d) => d.state === 'delivered', 'delivered');
    // Paused: neither a test nor a resend is queued.
    await api(partner, 'PUT', '/v1/webhooks/endpoint', { url: `${suite.receiver.baseUrl}${path}`, events: [] });
    expectProblem(await api(partner, 'POST', '/v1/sandbox/events', { event_type: 'booking.confirmed', listing_id: listingId }), 409, 'webhook_endpoint_not_active');
    expectProblem(await api(partner, 'POST', `/v1/webhooks/deliveries/${ok.json.event_id}/resend`), 409, 'webhook_endpoint_not_active');
    const list = await api(partner, 'GET', '/v1/webhooks/deliveries');
    expect(list.json.items.map((d: any) => [d.event_id, d.state])).toEqual([[ok.json.event_id, 'delivered']]);
    expect(suite.receiver.at(path, 'delivery')).toHaveLength(1);
    expect(none.workspaceId).not.toBe(partner.workspaceId);
  }, 60_000);

  test('bad input: a problem document naming every violation, never a value; unknown listing and delivery: 404', async () => {
    const { partner, listingId } = await partnerWithEndpoint();
    const trigger = (body: unknown) => api(partner, 'POST', '/v1/sandbox/events', body);
    expectProblem(await trigger({}), 400, 'validation_failed', [
      { field: 'event_type', code: 'required' },
      { field: 'listing_id', code: 'required' },
    ]);
    expectProblem(await trigger({ event_type: 'booking.modified', listing_id: '', guest_name: 'Ada', booking_reference: 'BK7Q2M4X9C' }), 400, 'validation_failed', [
      { field: 'guest_name', code: 'unknown_field' },
      { field: 'event_type', code: 'enum' },
      { field: 'listing_id', code: 'min_length' },
      { field: 'booking_reference', code: 'pattern' },
    ]);
    expectProblem(await trigger({ event_type: 'booking.cancelled', listing_id: listingId, check_in: '2031-01-01', initiated_by: 'owner' }), 400, 'validation_failed', [
      { field: 'initiated_by', code: 'enum' },
      { field: 'check_in', code: 'invalid' },
    ]);
    expectProblem(await trigger({ event_type: 'user.erased', listing_id: listingId, initiated_by: 'guest' }), 400, 'validation_failed', [
      { field: 'initiated_by', code: 'invalid' },
    ]);
    expectProblem(await trigger({ event_type: 'booking.confirmed', listing_id: listingId, check_in: '2031-02-30' }), 400, 'validation_failed', [
      { field: 'check_in', code: 'format' },
    ]);
    expectProblem(await trigger({ event_type: 'booking.confirmed', listing_id: listingId, check_in: '2031-02-10', check_out: '2031-02-10' }), 400, 'validation_failed', [
      { field: 'check_out', code: 'invalid' },
    ]);
    expectProblem(await trigger({ event_type: 'booking.confirmed', listing_id: listingId, check_in: '2031-01-01', check_out: '2033-01-02' }), 400, 'validation_failed', [
      { field: 'check_out', code: 'maximum' },
    ]);
    expectProblem(await trigger({ event_type: 'booking.confirmed', listing_id: listingId, check_out: isoDay(today()) }), 400, 'validation_failed', [
      { field: 'check_out', code: 'invalid' },
    ]);
    expectProblem(await trigger('{"event_type":'), 400, 'validation_failed', [{ field: 'body', code: 'invalid' }]);
    expectProblem(await trigger([]), 400, 'validation_failed', [{ field: 'body', code: 'type' }]);
    expectProblem(await api(partner, 'POST', '/v1/sandbox/events?listing_id=x', { event_type: 'user.erased', listing_id: listingId }), 400, 'validation_failed', [
      { field: 'listing_id', code: 'unknown_field' },
    ]);
    expectProblem(await trigger({ event_type: 'user.erased', listing_id: 'lst_zzzzzzzzzzzzzzzzzzzzzzzz' }), 404, 'property_not_found');

    expectProblem(await api(partner, 'GET', '/v1/webhooks/deliveries?page=0&page_size=201&state=lost&event_type=endpoint.challenge&since=1'), 400, 'validation_failed', [
      { field: 'since', code: 'unknown_field' },
      { field: 'state', code: 'enum' },
      { field: 'event_type', code: 'enum' },
      { field: 'page', code: 'minimum' },
      { field: 'page_size', code: 'maximum' },
    ]);
    expectProblem(await api(partner, 'GET', '/v1/webhooks/deliveries/evt-1'), 400, 'validation_failed', [{ field: 'event_id', code: 'format' }]);
    expectProblem(await api(partner, 'POST', '/v1/webhooks/deliveries/%ff/resend'), 400, 'validation_failed', [{ field: 'event_id', code: 'invalid' }]);
    expectProblem(await api(partner, 'GET', `/v1/webhooks/deliveries/${randomUUID()}?x=1`), 400, 'validation_failed', [{ field: 'x', code: 'unknown_field' }]);
    expectProblem(await api(partner, 'GET', `/v1/webhooks/deliveries/${randomUUID()}`), 404, 'delivery_not_found');
    expectProblem(await api(partner, 'POST', `/v1/webhooks/deliveries/${randomUUID()}/resend`), 404, 'delivery_not_found');
    // Nothing submitted comes back.
    const echoed = await trigger({ event_type: 'booking.confirmed', listing_id: listingId, check_in: 'canary-4711' });
    expect(echoed.text).not.toContain('canary-4711');
  }, 60_000);

  test('a production workspace: 400 for bad input, then 501 not_enabled for valid requests; nothing is looked up or sent', async () => {
    const prod = await partners.partner('production');
    const listing = (await suite.clients.catalog.createListing({ workspaceId: prod.workspaceId })).listing!.listingId;
    expectProblem(await api(prod, 'POST', '/v1/sandbox/events', { event_type: 'booking.confirmed' }), 400, 'validation_failed', [{ field: 'listing_id', code: 'required' }]);
    expectProblem(
      await api(prod, 'POST', '/v1/sandbox/events', { event_type: 'booking.confirmed', listing_id: listing, check_in: '2031-02-10', check_out: '2031-02-09' }),
      400,
      'validation_failed',
      [{ field: 'check_out', code: 'invalid' }],
    );
    expectProblem(await api(prod, 'POST', '/v1/sandbox/events', { event_type: 'booking.confirmed', listing_id: listing }), 501, 'not_enabled');
    expectProblem(await api(prod, 'POST', '/v1/sandbox/events', { event_type: 'user.erased', listing_id: 'lst_zzzzzzzzzzzzzzzzzzzzzzzz' }), 501, 'not_enabled');
    expectProblem(await api(prod, 'GET', '/v1/webhooks/deliveries?page_size=0'), 400, 'validation_failed', [{ field: 'page_size', code: 'minimum' }]);
    expectProblem(await api(prod, 'GET', '/v1/webhooks/deliveries'), 501, 'not_enabled');
    expectProblem(await api(prod, 'GET', '/v1/webhooks/deliveries/nope'), 400, 'validation_failed', [{ field: 'event_id', code: 'format' }]);
    expectProblem(await api(prod, 'GET', `/v1/webhooks/deliveries/${randomUUID()}`), 501, 'not_enabled');
    expectProblem(await api(prod, 'POST', '/v1/webhooks/deliveries/nope/resend'), 400, 'validation_failed', [{ field: 'event_id', code: 'format' }]);
    expectProblem(await api(prod, 'POST', `/v1/webhooks/deliveries/${randomUUID()}/resend`), 501, 'not_enabled');
    expect((await suite.clients.notifications.listDeliveries({ workspaceId: prod.workspaceId })).items).toEqual([]);
  }, 60_000);

  test("every call is counted toward the key's rate limit, refusals included", async () => {
    const { partner, listingId } = await partnerWithEndpoint();
    const triggered = await api(partner, 'POST', '/v1/sandbox/events', { event_type: 'booking.cancelled', listing_id: listingId });
    const calls: [string, string, unknown?][] = [
      ['POST', '/v1/sandbox/events', { event_type: 'booking.confirmed', listing_id: listingId }],
      ['POST', '/v1/sandbox/events', { event_type: 'nope', listing_id: listingId }],
      ['GET', '/v1/webhooks/deliveries'],
      ['GET', '/v1/webhooks/deliveries?page=0'],
      ['GET', `/v1/webhooks/deliveries/${triggered.json.event_id}`],
      ['GET', `/v1/webhooks/deliveries/${randomUUID()}`],
      ['POST', `/v1/webhooks/deliveries/${triggered.json.event_id}/resend`],
      ['POST', `/v1/webhooks/deliveries/${randomUUID()}/resend`],
    ];
    let remaining = Number(triggered.headers['ratelimit-remaining']);
    for (const [method, path, body] of calls) {
      const res = await api(partner, method, path, body);
      const now = Number(res.headers['ratelimit-remaining']);
      expect([method, path, res.status < 500, now]).toEqual([method, path, true, remaining - 1]);
      expect(res.headers['ratelimit-policy']).toMatch(/^\d+;w=3600$/);
      remaining = now;
    }
  }, 60_000);

  test("tenant isolation: another workspace's listing and deliveries are 404s like unknown ones; nothing is sent or changed for them", async () => {
    let failing = true;
    const a = await partnerWithEndpoint((r) => (r.json?.event_type === 'endpoint.challenge' ? echoAndAccept(r) : { status: failing ? 500 : 200 }));
    const b = await partnerWithEndpoint();
    const mine = await api(a.partner, 'POST', '/v1/sandbox/events', { event_type: 'booking.confirmed', listing_id: a.listingId });
    const id = mine.json.event_id as string;
    await logEntry(a.partner, id, (d) => d.state === 'abandoned', "A's delivery abandoned");
    const aReceived = suite.receiver.at(a.path, 'delivery').length;
    failing = false;

    // B triggers on A's listing: the same 404 as an unknown listing; nothing reaches A or B.
    const foreign = await api(b.partner, 'POST', '/v1/sandbox/events', { event_type: 'booking.confirmed', listing_id: a.listingId });
    const unknown = await api(b.partner, 'POST', '/v1/sandbox/events', { event_type: 'booking.confirmed', listing_id: 'lst_zzzzzzzzzzzzzzzzzzzzzzzz' });
    expectProblem(foreign, 404, 'property_not_found');
    expect(foreign.json.detail).toBe(unknown.json.detail);
    // B reads and resends A's delivery: 404 delivery_not_found, as an unknown id.
    const read = await api(b.partner, 'GET', `/v1/webhooks/deliveries/${id}`);
    const readUnknown = await api(b.partner, 'GET', `/v1/webhooks/deliveries/${randomUUID()}`);
    expectProblem(read, 404, 'delivery_not_found');
    expect(read.json.detail).toBe(readUnknown.json.detail);
    expectProblem(await api(b.partner, 'POST', `/v1/webhooks/deliveries/${id}/resend`), 404, 'delivery_not_found');
    // B's log holds none of A's.
    expect((await api(b.partner, 'GET', '/v1/webhooks/deliveries')).json).toEqual({ items: [], has_more: false });

    await holdsFor(
      "nothing sent for B's attempts on A's delivery",
      () => suite.receiver.at(a.path, 'delivery').length === aReceived && suite.receiver.at(b.path, 'delivery').length === 0,
      2000,
    );
    const stillAbandoned = await api(a.partner, 'GET', `/v1/webhooks/deliveries/${id}`);
    expect([stillAbandoned.json.state, stillAbandoned.json.attempts_total]).toEqual(['abandoned', 4]);
  }, 60_000);
});

(canSplit ? describe : describe.skip)('partner sandbox tools, one process per service (needs DATABASE_URL and NATS_URL)', () => {
  let split: SplitSystem;
  let splitPartners: Partners;

  beforeAll(async () => {
    split = await startSplitSystem(webhookEnv(suite.certs));
    // Workspaces and keys through the identity process, tokens through the gateway.
    splitPartners = new Partners({ ...split.gateway, internalUrl: split.urls.identity });
  }, 180_000);
  afterAll(async () => {
    splitPartners?.close();
    await split?.stop();
  });

  test('a test event crosses gateway → notifications → catalog and arrives signed; its log and resend work', async () => {
    const partner = await splitPartners.partner('sandbox');
    const listingId = await createListing(split, partner.workspaceId);
    const path = `/sandbox-tools-split/${partner.workspaceId}`;
    suite.receiver.on(path, echoAndAccept);
    const reg = await call(split.gateway.gatewayUrl, partner, 'PUT', '/v1/webhooks/endpoint', { url: `${suite.receiver.baseUrl}${path}`, events: ALL });
    expect(reg.json.status).toBe('active');
    const res = await call(split.gateway.gatewayUrl, partner, 'POST', '/v1/sandbox/events', { event_type: 'user.erased', listing_id: listingId });
    expect(res.status).toBe(202);
    const got = await suite.receiver.waitFor(() => sentFor(path, res.json.event_id)[0], 15_000, 'the test delivery');
    expect(verifyDelivery(got, reg.json.signing_secret)).toEqual({ ok: true, matched: 'signature' });
    expect(got.json.test).toBe(true);
    await eventually(
      async () => (await call(split.gateway.gatewayUrl, partner, 'GET', `/v1/webhooks/deliveries/${res.json.event_id}`)).json.state === 'delivered',
      15_000,
      'delivered',
    );
    const resent = await call(split.gateway.gatewayUrl, partner, 'POST', `/v1/webhooks/deliveries/${res.json.event_id}/resend`);
    expect(resent.status).toBe(202);
    await suite.receiver.waitFor(() => sentFor(path, res.json.event_id)[1], 15_000, 'the resent delivery');
  }, 90_000);
});

/** A listing of `workspaceId` in the split system, through its catalog process. */
async function createListing(split: SplitSystem, workspaceId: string): Promise<string> {
  const clients = new SystemClients(split.urls.catalog);
  try {
    return (await clients.catalog.createListing({ workspaceId })).listing!.listingId;
  } finally {
    clients.close();
  }
}
