/**
 * The SDK against the running system (test/support/system.ts: the embedded default,
 * or the real servers when DATABASE_URL / NATS_URL are set), started with a small
 * contract quota (RATE_LIMIT_PER_HOUR) and short tokens (TOKEN_TTL_SECONDS) so that a
 * 429 and a token expiry happen within the test. Workspaces, keys, listings and holds
 * are made through the internal API, as an operator and the marketplace make them;
 * everything a partner does goes through the SDK.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isProblem, PartnerClient, type PartnerClientOptions, ProblemError, type Property, TokenExchangeError } from '../src';
import { createWorkspace, internalClients, type InternalClients } from '../../../test/support/internal-clients';
import { type RunningSystem, startSystem, stopAllSystems } from '../../../test/support/system';
import { tsExamples } from './support/examples';

const QUOTA = 10;
const TOKEN_TTL_SECONDS = 3;

let system: RunningSystem;
let internal: InternalClients;

beforeAll(async () => {
  system = await startSystem({ env: { RATE_LIMIT_PER_HOUR: String(QUOTA), TOKEN_TTL_SECONDS: String(TOKEN_TTL_SECONDS) } });
  internal = internalClients(system.internalUrl);
}, 90_000);

afterAll(async () => {
  internal?.close();
  await stopAllSystems();
});

/** A sandbox workspace and a fresh API key for it. */
async function partner(): Promise<{ workspaceId: string; keyId: string; apiKey: string }> {
  const workspaceId = await createWorkspace(internal.identity, 'sandbox', 'partner-sdk');
  const key = await internal.identity.issueKey({ workspaceId });
  return { workspaceId, keyId: key.keyId, apiKey: key.apiKey };
}

/** A client of `apiKey` that records the status of every answer (`POST /token` as `token:<status>`). */
function recordingClient(apiKey: string, extra: Partial<PartnerClientOptions> = {}) {
  const statuses: string[] = [];
  const client = new PartnerClient({
    baseUrl: `${system.gatewayUrl}/v1`,
    apiKey,
    fetch: async (request) => {
      const res = await fetch(request);
      statuses.push(`${new URL(request.url).pathname.endsWith('/token') ? 'token:' : ''}${res.status}`);
      return res;
    },
    ...extra,
  });
  return { client, statuses };
}

/** The OpenAPI document's complete property example. */
function exampleProperty(): Property {
  const doc = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'docs', 'openapi.json'), 'utf8'));
  return doc.paths['/properties/{provider_id}'].put.requestBody.content['application/json'].examples.complete.value as Property;
}

test('exchanges the key for a token of its workspace', async () => {
  const p = await partner();
  const { client } = recordingClient(p.apiKey);
  const before = Date.now();
  const token = await client.token();
  expect(token).toEqual({ accessToken: expect.any(String), expiresAt: expect.any(Date), workspaceId: p.workspaceId, sandbox: true });
  expect(token.expiresAt.getTime()).toBeGreaterThanOrEqual(before + TOKEN_TTL_SECONDS * 1000);
  expect(token.expiresAt.getTime()).toBeLessThanOrEqual(Date.now() + TOKEN_TTL_SECONDS * 1000);
  expect(client.tokenRateLimit).toEqual(expect.objectContaining({ limit: 60, windowSeconds: 3600 }));
  // A wrong key is a typed refusal.
  const wrong = recordingClient('psk_nope_nope').client;
  const e = await wrong.token().catch((x: unknown) => x);
  expect(e).toBeInstanceOf(TokenExchangeError);
  expect(e).toMatchObject({ status: 401, reason: expect.any(String) });
});

test('pushes a property, places a block, gets a typed 409 over a marketplace hold, lists and releases', async () => {
  const p = await partner();
  const { client } = recordingClient(p.apiKey);

  const upsert = await client.putProperty('sdk-villa-1', exampleProperty());
  expect(upsert).toEqual(expect.objectContaining({ provider_id: 'sdk-villa-1', result: 'created', listing_id: null, publishable: false }));
  expect(upsert.missing).toContain('photos_processing');

  const listingId = (await internal.catalog.createListing({ workspaceId: p.workspaceId })).listing!.listingId;
  expect(await client.putBlock('sdk-res-1', { listing_id: listingId, check_in: '2030-07-01', check_out: '2030-07-04', reason: 'reserved' })).toEqual({
    result: 'created',
    nights: 3,
    listing_id: listingId,
  });

  await internal.calendar.placeHold({ listingId, checkIn: '2030-08-02', checkOut: '2030-08-04', requiresPayment: false });
  const conflict = await client.putBlock('sdk-res-2', { listing_id: listingId, check_in: '2030-08-01', check_out: '2030-08-05', reason: 'owner_stay' }).catch((x: unknown) => x);
  expect(conflict).toBeInstanceOf(ProblemError);
  if (!isProblem(conflict, 'conflict')) throw conflict;
  expect(conflict).toMatchObject({ status: 409, code: 'conflict', conflicts: ['2030-08-02', '2030-08-03'], fields: [] });
  expect(conflict.instance).toMatch(/^urn:psync:request:[0-9a-f-]{36}$/);
  expect(conflict.requestId).toBeDefined();

  const invalid = await client.putProperty('sdk-villa-2', { ...exampleProperty(), check_in_time: '25:00', colour: 'blue' } as Property).catch((x: unknown) => x);
  expect(isProblem(invalid, 'validation_failed')).toBe(true);
  expect((invalid as ProblemError).fields).toEqual(
    expect.arrayContaining([
      { field: 'check_in_time', code: 'pattern' },
      { field: 'colour', code: 'unknown_field' },
    ]),
  );

  const uids: string[] = [];
  for await (const b of client.blocks()) uids.push(b.external_uid);
  expect(uids).toEqual(['sdk-res-1']);
  await client.deleteBlock('sdk-res-1');
  expect((await client.listBlocks()).items).toEqual([]);

  // Every contract call was counted: property, block, conflict, invalid, list, delete, list.
  expect(client.rateLimit).toEqual(expect.objectContaining({ limit: QUOTA, remaining: QUOTA - 7, windowSeconds: 3600 }));
});

test("reads back: the property as last accepted, every property, a listing's nights, and typed 404s", async () => {
  const p = await partner();
  const { client } = recordingClient(p.apiKey);
  await client.putProperty('sdk-villa-1', exampleProperty());
  const stored = await client.getProperty('sdk-villa-1');
  expect(stored).toMatchObject({ provider_id: 'sdk-villa-1', listing_id: null, publishable: false, unknown_amenities: [], property: exampleProperty() });
  expect(stored.photos.map((ph) => ph.url)).toEqual(exampleProperty().photos!.map((ph) => ph.url));
  const ids: string[] = [];
  for await (const item of client.properties({ page_size: 1 })) ids.push(item.provider_id);
  expect(ids).toEqual(['sdk-villa-1']);

  const listingId = (await internal.catalog.createListing({ workspaceId: p.workspaceId })).listing!.listingId;
  await client.putBlock('sdk-res-1', { listing_id: listingId, check_in: '2030-07-02', check_out: '2030-07-03' });
  await internal.calendar.placeHold({ listingId, checkIn: '2030-07-03', checkOut: '2030-07-04', requiresPayment: false });
  expect(await client.listListingNights(listingId, { from: '2030-07-01', to: '2030-07-05' })).toEqual({
    items: [
      { date: '2030-07-01', state: 'free' },
      { date: '2030-07-02', state: 'blocked', external_uid: 'sdk-res-1' },
      { date: '2030-07-03', state: 'held' },
      { date: '2030-07-04', state: 'free' },
    ],
  });

  await expect(client.getWebhookEndpoint()).rejects.toMatchObject({ name: 'ProblemError', code: 'webhook_endpoint_not_found', status: 404 });
  await expect(client.getProperty('sdk-never-pushed')).rejects.toMatchObject({ name: 'ProblemError', code: 'property_not_found', status: 404 });
  expect(client.rateLimit).toEqual(expect.objectContaining({ limit: QUOTA, remaining: QUOTA - 7 }));
});

test('a 429 is honoured: Retry-After waited out and the request retried, boundedly, then thrown typed', async () => {
  const p = await partner();
  // Spend the quota; a client that never waits reports the 429 at once.
  const spender = recordingClient(p.apiKey, { retry: { maxRetryAfterSeconds: 0 } });
  let limited: unknown;
  for (let i = 0; i <= QUOTA + 1 && !limited; i++)
    limited = await spender.client.listBlocks().then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(isProblem(limited, 'rate_limited')).toBe(true);
  expect(spender.statuses.filter((s) => s === '429')).toEqual(['429']);
  expect(limited).toMatchObject({ status: 429, retryAfterSeconds: expect.any(Number), rateLimit: expect.objectContaining({ limit: QUOTA, remaining: 0 }) });
  expect(spender.client.rateLimit).toEqual(expect.objectContaining({ limit: QUOTA, remaining: 0 }));

  // A client that waits up to an hour: it sleeps for each Retry-After (recorded here
  // instead of waited, the window being an hour) and tries again, twice, then throws.
  const sleeps: number[] = [];
  const patient = recordingClient(p.apiKey, {
    retry: { rateLimitRetries: 2, maxRetryAfterSeconds: 3600 },
    clock: { now: () => Date.now(), sleep: async (ms) => void sleeps.push(ms) },
  });
  const e = await patient.client.listBlocks().catch((x: unknown) => x);
  expect(isProblem(e, 'rate_limited')).toBe(true);
  expect(patient.statuses).toEqual(['token:200', '429', '429', '429']);
  const retryAfter = (e as ProblemError).retryAfterSeconds!;
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(sleeps).toHaveLength(2);
  for (const ms of sleeps) expect(Math.abs(ms - retryAfter * 1000)).toBeLessThanOrEqual(2000);
});

test('a token is refreshed before it expires', async () => {
  const p = await partner();
  // The client's clock, moved by the test: the server's token stays valid throughout.
  let skewMs = 0;
  const clock = { now: () => Date.now() + skewMs, sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)) };
  const { client, statuses } = recordingClient(p.apiKey, { clock });
  await client.listBlocks();
  const first = (await client.token()).accessToken;
  // Past the refresh point (a fifth of 3 s before expiry), before the expiry itself.
  skewMs = 2600;
  await client.listBlocks();
  expect((await client.token()).accessToken).not.toBe(first);
  expect(statuses).toEqual(['token:200', '200', 'token:200', '200']);
  expect(client.tokenExchanges).toBe(2);
});

test('an expired token the client still trusts (its clock disagrees) is refreshed once on the 401', async () => {
  const p = await partner();
  const frozen = Date.now();
  const { client, statuses } = recordingClient(p.apiKey, { clock: { now: () => frozen, sleep: (ms) => new Promise((r) => setTimeout(r, ms)) } });
  await client.listBlocks();
  // timing under test: the server's own clock must pass the token's expiry.
  await new Promise((resolve) => setTimeout(resolve, (TOKEN_TTL_SECONDS + 1) * 1000));
  expect(await client.listBlocks()).toEqual({ items: [], has_more: false });
  expect(statuses).toEqual(['token:200', '200', '401', 'token:200', '200']);
});

test('a revoked key: the 401 leads to one exchange, refused, thrown as a TokenExchangeError', async () => {
  const p = await partner();
  const { client, statuses } = recordingClient(p.apiKey);
  await client.listBlocks();
  await internal.identity.revokeKey({ keyId: p.keyId });
  const e = await client.listBlocks().catch((x: unknown) => x);
  expect(e).toBeInstanceOf(TokenExchangeError);
  expect(e).toMatchObject({ status: 401 });
  expect(statuses).toEqual(['token:200', '200', '401', 'token:401']);
});

test('sandbox tools: a test event without an active endpoint and an unknown delivery are typed refusals', async () => {
  const p = await partner();
  const { client } = recordingClient(p.apiKey);
  const listingId = (await internal.catalog.createListing({ workspaceId: p.workspaceId })).listing!.listingId;
  const refused = await client.triggerTestEvent({ event_type: 'booking.confirmed', listing_id: listingId }).catch((x: unknown) => x);
  expect(isProblem(refused, 'webhook_endpoint_not_active')).toBe(true);
  expect(refused).toMatchObject({ status: 409 });
  expect(await client.listDeliveries()).toEqual({ items: [], has_more: false });
  expect(await client.listEvents()).toEqual({ items: [], next_after: null, has_more: false, after_expired: false });
  const caughtUp: unknown[] = [];
  for await (const e of client.events()) caughtUp.push(e);
  expect(caughtUp).toEqual([]);
  await expect(client.startEndpointCheck()).rejects.toMatchObject({ name: 'ProblemError', code: 'webhook_endpoint_not_active', status: 409 });
  await expect(client.getEndpointCheck(randomUUID())).rejects.toMatchObject({ name: 'ProblemError', code: 'endpoint_check_not_found', status: 404 });
  await expect(client.listEvents({ after: 'x' })).rejects.toMatchObject({ name: 'ProblemError', code: 'validation_failed', status: 400 });
  await expect(client.getDelivery(randomUUID())).rejects.toMatchObject({ name: 'ProblemError', code: 'delivery_not_found', status: 404 });
  await expect(client.resendDelivery(randomUUID())).rejects.toMatchObject({ name: 'ProblemError', code: 'delivery_not_found', status: 404 });
});

describe("the README's calls example", () => {
  const example = tsExamples('packages/partner-sdk/README.md')[0]!;
  afterAll(() => example.remove());

  test('type-checks', () => {
    expect(example.typeErrors()).toEqual([]);
  }, 60_000);

  test('runs against the system: a property pushed, a block refused over a hold, the quota shown', async () => {
    const p = await partner();
    const listingId = (await internal.catalog.createListing({ workspaceId: p.workspaceId })).listing!.listingId;
    await internal.calendar.placeHold({ listingId, checkIn: '2030-08-03', checkOut: '2030-08-05', requiresPayment: false });
    process.env.PSYNC_BASE_URL = `${system.gatewayUrl}/v1`;
    process.env.PSYNC_API_KEY = p.apiKey;
    const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { pushVilla } = require(example.file) as { pushVilla: (property: Property, listingId: string) => Promise<void> };
      await pushVilla(exampleProperty(), listingId);
      expect(log.mock.calls.map((c) => c[0])).toEqual([
        expect.stringMatching(/^villa-42 created, missing: .*photos_processing/),
        'nights already taken: 2030-08-03',
        `${QUOTA - 2} of ${QUOTA} requests left this hour`,
      ]);
    } finally {
      log.mockRestore();
      delete process.env.PSYNC_BASE_URL;
      delete process.env.PSYNC_API_KEY;
    }
  });
});
