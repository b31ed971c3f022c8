/**
 * The client's behaviour on every kind of answer, against a scripted API (an injected
 * fetch) and a manual clock: token exchange and refresh, typed errors, rate limits and
 * which requests are retried. test/system.test.ts runs the same client against the
 * running system.
 */
import { isProblem, PartnerClient, type PartnerClientOptions, ProblemError, type Property, TokenExchangeError, UnexpectedResponseError } from '../src';

const BASE = 'https://api.test/v1';
const API_KEY = 'psk_test_key';

/** A request as the scripted API saw it. */
interface Seen {
  method: string;
  path: string;
  authorization: string | null;
  body: string;
}

type Handler = (req: Seen, n: number) => Response | Promise<Response>;

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  const type = status >= 400 && !('message' in (body as object)) ? 'application/problem+json' : 'application/json';
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': type, ...headers } });
}

function problem(status: number, code: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Response {
  return json(
    status,
    {
      type: `https://docs.test/v1/errors/${code.replace(/_/g, '-')}`,
      title: code,
      status,
      detail: `detail of ${code}`,
      instance: 'urn:psync:request:00000000-0000-4000-8000-000000000000',
      code,
      ...extra,
    },
    headers,
  );
}

function rateHeaders(limit: number, remaining: number, reset: number): Record<string, string> {
  return { 'RateLimit-Policy': `${limit};w=3600`, 'RateLimit-Limit': String(limit), 'RateLimit-Remaining': String(remaining), 'RateLimit-Reset': String(reset) };
}

let tokenSerial = 0;
function tokenAnswer(expiresIn = 900): Response {
  tokenSerial++;
  return json(
    200,
    { access_token: `tok-${tokenSerial}`, token_type: 'Bearer', expires_in: expiresIn, workspace_id: '6f1c2e4a-9b3d-4c8e-a1f2-0d5e7b9c3a14', sandbox: true },
    rateHeaders(60, 60 - tokenSerial, 3000),
  );
}

/** A scripted API: `/token` answers a token unless `handlers.token` says otherwise; everything else goes to `handlers.api`. */
function scripted(handlers: { token?: Handler; api: Handler }) {
  const seen: Seen[] = [];
  let apiCalls = 0;
  let tokenCalls = 0;
  const fetch = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const req: Seen = { method: request.method, path: url.pathname + url.search, authorization: request.headers.get('Authorization'), body: await request.text() };
    seen.push(req);
    if (url.pathname === '/v1/token') return handlers.token ? handlers.token(req, tokenCalls++) : tokenAnswer();
    return handlers.api(req, apiCalls++);
  };
  return { fetch, seen, api: () => seen.filter((s) => s.path !== '/v1/token'), tokens: () => seen.filter((s) => s.path === '/v1/token') };
}

/** A clock that only moves when told; sleeping moves it. */
function manualClock(start = 1_800_000_000_000) {
  let now = start;
  const sleeps: number[] = [];
  return {
    clock: {
      now: () => now,
      sleep: async (ms: number) => {
        sleeps.push(ms);
        now += ms;
      },
    },
    advance: (ms: number) => {
      now += ms;
    },
    sleeps,
  };
}

function client(fetch: (r: Request) => Promise<Response>, extra: Partial<PartnerClientOptions> = {}) {
  const time = manualClock();
  return { client: new PartnerClient({ baseUrl: BASE, apiKey: API_KEY, fetch, clock: time.clock, ...extra }), time };
}

const property: Property = { name: 'Villa 42', status: 'listed' } as Property;
const block = { listing_id: 'lst_1', check_in: '2030-08-01', check_out: '2030-08-04', reason: 'reserved' as const };

beforeEach(() => {
  tokenSerial = 0;
});

describe('authentication', () => {
  test('the key goes only to POST /token; the token goes on every other call', async () => {
    const api = scripted({ api: () => json(200, { result: 'created', nights: 3, listing_id: 'lst_1' }) });
    const { client: c } = client(api.fetch);
    await c.putBlock('r-1', block);
    await c.putBlock('r-2', block);
    expect(api.tokens().map((s) => [s.method, s.authorization])).toEqual([['POST', `Bearer ${API_KEY}`]]);
    expect(api.api().map((s) => s.authorization)).toEqual(['Bearer tok-1', 'Bearer tok-1']);
    expect(await c.token()).toEqual(expect.objectContaining({ accessToken: 'tok-1', workspaceId: '6f1c2e4a-9b3d-4c8e-a1f2-0d5e7b9c3a14', sandbox: true }));
  });

  test('concurrent first calls share one exchange', async () => {
    const api = scripted({ api: () => json(200, { items: [], has_more: false }) });
    const { client: c } = client(api.fetch);
    await Promise.all([c.listBlocks(), c.listBlocks(), c.listBlocks()]);
    expect(api.tokens()).toHaveLength(1);
  });

  test('refreshes shortly before expiry: 60 s before by default, at most a fifth of the lifetime', async () => {
    const api = scripted({ api: () => json(200, { items: [], has_more: false }) });
    const { client: c, time } = client(api.fetch);
    await c.listBlocks();
    time.advance(839_000); // 900 s token: 61 s left
    await c.listBlocks();
    expect(api.tokens()).toHaveLength(1);
    time.advance(2_000); // 59 s left
    await c.listBlocks();
    expect(api.tokens()).toHaveLength(2);
    expect(api.api().map((s) => s.authorization)).toEqual(['Bearer tok-1', 'Bearer tok-1', 'Bearer tok-2']);

    const short = scripted({ token: () => tokenAnswer(10), api: () => json(200, { items: [], has_more: false }) });
    const s = client(short.fetch);
    await s.client.listBlocks();
    s.time.advance(7_900); // 10 s token: refreshed when less than 2 s are left, not 60
    await s.client.listBlocks();
    expect(short.tokens()).toHaveLength(1);
    s.time.advance(200);
    await s.client.listBlocks();
    expect(short.tokens()).toHaveLength(2);
  });

  test('a 401 on a call is answered once by a fresh exchange and the same request again', async () => {
    const api = scripted({
      api: (req) => (req.authorization === 'Bearer tok-1' ? problem(401, 'unauthorized') : json(200, { result: 'updated', nights: 3, listing_id: 'lst_1' })),
    });
    const { client: c } = client(api.fetch);
    expect(await c.putBlock('r-1', block)).toEqual({ result: 'updated', nights: 3, listing_id: 'lst_1' });
    expect(api.seen.map((s) => [s.method, s.path, s.authorization])).toEqual([
      ['POST', '/v1/token', `Bearer ${API_KEY}`],
      ['PUT', '/v1/blocks/r-1', 'Bearer tok-1'],
      ['POST', '/v1/token', `Bearer ${API_KEY}`],
      ['PUT', '/v1/blocks/r-1', 'Bearer tok-2'],
    ]);
    // The body went again, byte for byte.
    expect(api.api()[1]!.body).toBe(api.api()[0]!.body);
  });

  test('a second 401 is thrown (a revoked key): only one refresh per call', async () => {
    const api = scripted({ api: () => problem(401, 'unauthorized') });
    const { client: c } = client(api.fetch);
    const e = await c.listBlocks().catch((x: unknown) => x);
    expect(isProblem(e, 'unauthorized')).toBe(true);
    expect(api.api()).toHaveLength(2);
    expect(api.tokens()).toHaveLength(2);
  });

  test('a refused key is a TokenExchangeError with the message, not a problem document', async () => {
    const api = scripted({ token: () => json(401, { message: 'invalid API key' }), api: () => json(200, {}) });
    const { client: c } = client(api.fetch);
    const e = await c.listBlocks().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(TokenExchangeError);
    expect(e).toMatchObject({ status: 401, reason: 'invalid API key' });
    expect(api.api()).toHaveLength(0);
  });
});

describe('problem documents are typed errors', () => {
  test('409 conflict carries every colliding night; 400 carries the fields', async () => {
    const api = scripted({
      api: (req) =>
        req.path.startsWith('/v1/blocks')
          ? problem(409, 'conflict', { conflicts: ['2030-08-02', '2030-08-03'] })
          : problem(400, 'validation_failed', {
              errors: [
                { field: 'address.country', code: 'pattern' },
                { field: 'unknown', code: 'unknown_field' },
              ],
            }),
    });
    const { client: c } = client(api.fetch);
    const conflict = await c.putBlock('r-1', block).catch((x: unknown) => x);
    expect(conflict).toBeInstanceOf(ProblemError);
    if (!isProblem(conflict, 'conflict')) throw new Error('not a conflict');
    expect(conflict).toMatchObject({ status: 409, code: 'conflict', title: 'conflict', detail: 'detail of conflict', conflicts: ['2030-08-02', '2030-08-03'], fields: [] });
    expect(conflict.instance).toMatch(/^urn:psync:request:/);
    const invalid = await c.putProperty('villa-42', property).catch((x: unknown) => x);
    expect(invalid).toMatchObject({
      status: 400,
      code: 'validation_failed',
      fields: [
        { field: 'address.country', code: 'pattern' },
        { field: 'unknown', code: 'unknown_field' },
      ],
      conflicts: [],
    });
  });

  test('a code this SDK does not know yet is still a ProblemError with its code', async () => {
    const api = scripted({ api: () => problem(422, 'listing_frozen') });
    const { client: c } = client(api.fetch);
    await expect(c.listBlocks()).rejects.toMatchObject({ name: 'ProblemError', code: 'listing_frozen', status: 422 });
  });

  test("an answer that is not the API's (a proxy page) is an UnexpectedResponseError", async () => {
    const api = scripted({ api: () => new Response('<html>Bad gateway</html>', { status: 502, headers: { 'content-type': 'text/html' } }) });
    const { client: c } = client(api.fetch, { retry: { serverRetries: 0 } });
    const e = await c.listBlocks().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(UnexpectedResponseError);
    expect(e).toMatchObject({ status: 502, body: '<html>Bad gateway</html>' });
  });
});

describe('rate limits', () => {
  test('the RateLimit-* state of the last contract response is exposed; the token ceiling separately', async () => {
    const api = scripted({ api: (_r, n) => json(200, { items: [], has_more: false }, rateHeaders(600, 599 - n, 1800)) });
    const { client: c, time } = client(api.fetch);
    expect(c.rateLimit).toBeUndefined();
    await c.listBlocks();
    await c.listBlocks();
    expect(c.rateLimit).toEqual({ limit: 600, remaining: 598, resetSeconds: 1800, windowSeconds: 3600, observedAt: time.clock.now() });
    expect(c.tokenRateLimit).toEqual(expect.objectContaining({ limit: 60, remaining: 59 }));
  });

  test('a 429 is waited out for Retry-After seconds and retried, at most twice by default', async () => {
    const api = scripted({
      api: (_r, n) =>
        n < 2 ? problem(429, 'rate_limited', {}, { 'Retry-After': '7', ...rateHeaders(600, 0, 7) }) : json(200, { items: [], has_more: false }, rateHeaders(600, 599, 3600)),
    });
    const { client: c, time } = client(api.fetch);
    expect(await c.listBlocks()).toEqual({ items: [], has_more: false });
    expect(time.sleeps).toEqual([7000, 7000]);
    expect(api.api()).toHaveLength(3);
    expect(c.rateLimit).toEqual(expect.objectContaining({ remaining: 599 }));
  });

  test('when retries run out the 429 is thrown with retryAfterSeconds and the rate-limit state', async () => {
    const api = scripted({ api: () => problem(429, 'rate_limited', {}, { 'Retry-After': '5', ...rateHeaders(600, 0, 5) }) });
    const { client: c, time } = client(api.fetch);
    const e = await c.putBlock('r-1', block).catch((x: unknown) => x);
    expect(isProblem(e, 'rate_limited')).toBe(true);
    expect(e).toMatchObject({ status: 429, retryAfterSeconds: 5, rateLimit: expect.objectContaining({ limit: 600, remaining: 0, resetSeconds: 5 }) });
    expect(time.sleeps).toEqual([5000, 5000]);
    expect(api.api()).toHaveLength(3);
  });

  test('a Retry-After beyond maxRetryAfterSeconds is thrown at once, for the caller to schedule', async () => {
    const api = scripted({ api: () => problem(429, 'rate_limited', {}, { 'Retry-After': '1800', ...rateHeaders(600, 0, 1800) }) });
    const { client: c, time } = client(api.fetch);
    await expect(c.listBlocks()).rejects.toMatchObject({ code: 'rate_limited', retryAfterSeconds: 1800 });
    expect(time.sleeps).toEqual([]);
    expect(api.api()).toHaveLength(1);
  });

  test('a 429 is retried for any method: it was not counted and changed nothing', async () => {
    const api = scripted({
      api: (_r, n) =>
        n === 0
          ? problem(429, 'rate_limited', {}, { 'Retry-After': '1' })
          : json(200, { event_id: '0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b', acknowledged_at: '2030-01-01T00:00:00.000Z' }),
    });
    const { client: c, time } = client(api.fetch);
    await c.acknowledgeDeletionRequest('0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b');
    expect(time.sleeps).toEqual([1000]);
  });

  test("the token endpoint's own 429 is honoured the same way and then thrown as a TokenExchangeError", async () => {
    const api = scripted({
      token: () => json(429, { message: 'too many token requests for this API key; retry later' }, { 'Retry-After': '2', ...rateHeaders(60, 0, 2) }),
      api: () => json(200, {}),
    });
    const { client: c, time } = client(api.fetch);
    await expect(c.token()).rejects.toMatchObject({ name: 'TokenExchangeError', status: 429, retryAfterSeconds: 2 });
    expect(time.sleeps).toEqual([2000, 2000]);
    expect(c.tokenRateLimit).toEqual(expect.objectContaining({ limit: 60, remaining: 0 }));
  });
});

describe('retries only where safe', () => {
  const failing = (status: number) => (_r: Seen, n: number) =>
    n < 1 ? problem(status, status === 503 ? 'service_unavailable' : 'internal_error') : json(200, { result: 'created', nights: 3, listing_id: 'lst_1' });

  test('a 500 on an idempotent PUT is retried with backoff', async () => {
    const api = scripted({ api: failing(500) });
    const { client: c, time } = client(api.fetch);
    await c.putBlock('r-1', block);
    expect(api.api()).toHaveLength(2);
    expect(time.sleeps).toHaveLength(1);
    expect(time.sleeps[0]).toBeGreaterThanOrEqual(250);
    expect(time.sleeps[0]).toBeLessThanOrEqual(500);
  });

  test('a 500 on a POST that makes something (a test event, a resend) is never repeated', async () => {
    const api = scripted({ api: failing(500) });
    const { client: c } = client(api.fetch);
    await expect(c.triggerTestEvent({ event_type: 'booking.confirmed', listing_id: 'lst_1' })).rejects.toMatchObject({ code: 'internal_error' });
    expect(api.api()).toHaveLength(1);
    const again = scripted({ api: failing(500) });
    await expect(client(again.fetch).client.resendDelivery('0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b')).rejects.toMatchObject({ code: 'internal_error' });
    expect(again.api()).toHaveLength(1);
  });

  test('a 503 service_unavailable is retried for any method: nothing was written', async () => {
    const api = scripted({ api: failing(503) });
    const { client: c } = client(api.fetch);
    await c.triggerTestEvent({ event_type: 'booking.confirmed', listing_id: 'lst_1' });
    expect(api.api()).toHaveLength(2);
  });

  test('a network failure is retried for an idempotent request only', async () => {
    let calls = 0;
    const flaky = scripted({ api: () => json(200, { items: [], has_more: false }) });
    const fetch = async (r: Request) => {
      if (!r.url.endsWith('/token') && calls++ === 0) throw new TypeError('fetch failed');
      return flaky.fetch(r);
    };
    const { client: c } = client(fetch);
    await c.listBlocks();
    expect(flaky.api()).toHaveLength(1);
    calls = 0;
    await expect(c.triggerTestEvent({ event_type: 'user.erased', listing_id: 'lst_1' })).rejects.toThrow('fetch failed');
  });

  test('retries stop after serverRetries', async () => {
    const api = scripted({ api: () => problem(500, 'internal_error') });
    const { client: c } = client(api.fetch, { retry: { serverRetries: 3 } });
    await expect(c.deleteBlock('r-1')).rejects.toMatchObject({ code: 'internal_error', status: 500 });
    expect(api.api()).toHaveLength(4);
  });
});

describe('requests', () => {
  test('methods send the documented paths, queries and bodies, and return the bodies', async () => {
    const api = scripted({
      api: (req) => {
        if (req.method === 'DELETE') return new Response(null, { status: 204 });
        if (req.path.startsWith('/v1/blocks?')) return json(200, { items: [], has_more: false });
        return json(200, { echoed: JSON.parse(req.body || '{}') });
      },
    });
    const { client: c } = client(api.fetch, { headers: { 'User-Agent': 'acme-channel-manager/2.1' } });
    expect(await c.putProperty('villa 42/a', property)).toEqual({ echoed: property });
    await c.deleteBlock('r-1');
    await c.listBlocks({ from: '2030-01-01', page_size: 10 });
    await c.putWebhookEndpoint({ url: 'https://hooks.acme.example/psync', events: ['booking.confirmed'] });
    await c.acknowledgeDeletionRequest('0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b', { completed_at: '2030-01-01T00:00:00Z' });
    await c.triggerTestEvent({ event_type: 'booking.cancelled', listing_id: 'lst_1', initiated_by: 'host' });
    await c.getDelivery('0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b');
    await c.resendDelivery('0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b');
    expect(api.api().map((s) => `${s.method} ${s.path}`)).toEqual([
      'PUT /v1/properties/villa%2042%2Fa',
      'DELETE /v1/blocks/r-1',
      'GET /v1/blocks?from=2030-01-01&page_size=10',
      'PUT /v1/webhooks/endpoint',
      'POST /v1/deletion-requests/0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b/acknowledge',
      'POST /v1/sandbox/events',
      'GET /v1/webhooks/deliveries/0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b',
      'POST /v1/webhooks/deliveries/0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b/resend',
    ]);
    expect(api.api()[5]!.body).toBe('{"event_type":"booking.cancelled","listing_id":"lst_1","initiated_by":"host"}');
  });

  test('deliveries() walks every page of the delivery log, with its filters', async () => {
    const delivery = (n: number) => ({ event_id: `e-${n}`, event_type: 'booking.confirmed', test: true, state: 'delivered', attempts: [] });
    const api = scripted({
      api: (req) => (req.path.includes('page=1') ? json(200, { items: [delivery(1)], has_more: true }) : json(200, { items: [delivery(2)], has_more: false })),
    });
    const { client: c } = client(api.fetch);
    const ids: string[] = [];
    for await (const d of c.deliveries({ state: 'delivered', page_size: 1 })) ids.push(d.event_id);
    expect(ids).toEqual(['e-1', 'e-2']);
    expect(api.api().map((s) => s.path)).toEqual(['/v1/webhooks/deliveries?state=delivered&page_size=1&page=1', '/v1/webhooks/deliveries?state=delivered&page_size=1&page=2']);
  });

  test('blocks() walks every page', async () => {
    const item = (n: number) => ({ external_uid: `r-${n}`, listing_id: 'lst_1', check_in: '2030-08-01', check_out: '2030-08-02', reason: 'reserved', nights: 1 });
    const api = scripted({
      api: (req) => (req.path.includes('page=1') ? json(200, { items: [item(1), item(2)], has_more: true }) : json(200, { items: [item(3)], has_more: false })),
    });
    const { client: c } = client(api.fetch);
    const uids: string[] = [];
    for await (const b of c.blocks({ page_size: 2 })) uids.push(b.external_uid);
    expect(uids).toEqual(['r-1', 'r-2', 'r-3']);
    expect(api.api().map((s) => s.path)).toEqual(['/v1/blocks?page_size=2&page=1', '/v1/blocks?page_size=2&page=2']);
  });

  test("extra headers go on every request; Authorization is the client's", async () => {
    const headers: Headers[] = [];
    const api = scripted({ api: () => json(200, { items: [], has_more: false }) });
    const { client: c } = client(
      async (r) => {
        headers.push(r.headers);
        return api.fetch(r);
      },
      { headers: { 'User-Agent': 'acme-channel-manager/2.1', Authorization: 'Bearer not-this' } },
    );
    await c.listBlocks();
    expect(headers.map((h) => [h.get('user-agent'), h.get('authorization')])).toEqual([
      ['acme-channel-manager/2.1', `Bearer ${API_KEY}`],
      ['acme-channel-manager/2.1', 'Bearer tok-1'],
    ]);
  });
});
