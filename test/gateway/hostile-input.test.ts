/**
 * Text and instants no service can store (docs/decisions.md "Text and instants that
 * can be stored"), end to end on the running system — the embedded default, or real
 * PostgreSQL and NATS when DATABASE_URL / NATS_URL are set:
 *
 * - public API: U+0000 (`\u0000` in JSON, `%00` in a path) and a lone surrogate in any
 *   string are `400 validation_failed` `{field, code: invalid}` and nothing is stored;
 *   date-times and dates outside 0001–9999 are `format`; a `completed_at` more than
 *   five minutes ahead is `maximum`. Before the rule these answered 500 or 503.
 * - internal API: the same values sent straight to a service's RPC are
 *   INVALID_ARGUMENT with a ValidationDetail, before any handler runs (the kit's
 *   request guard), unary and streaming alike.
 */
import { randomUUID } from 'node:crypto';
import { Code } from '@connectrpc/connect';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { NotificationsService } from '../../gen/psync/notifications/v1/notifications_pb';
import { connectErrorOf, reasonOf, violationsOf } from '../support/connect-errors';
import { RunningSystem, startSystem, stopAllSystems } from '../support/system';
import { validProperty } from './fixtures';
import { jsonRequest, Received, send, SentRequest } from './http-client';
import { Partner, Partners } from './partners';

let system: RunningSystem;
let partners: Partners;
let gw: (req: SentRequest) => Promise<Received>;
let p: Partner;
let listingId: string;

const catalog = () => partners.clients.client(CatalogService, system.internalUrl);
const calendar = () => partners.clients.client(CalendarService, system.internalUrl);
const notifications = () => partners.clients.client(NotificationsService, system.internalUrl);

beforeAll(async () => {
  system = await startSystem();
  partners = new Partners(system);
  gw = (req) => send(system.gatewayUrl, req);
  p = await partners.partner('sandbox');
  listingId = (await catalog().createListing({ workspaceId: p.workspaceId })).listing!.listingId;
}, 120000);

afterAll(async () => {
  partners?.close();
  await stopAllSystems();
});

/** A 400 validation_failed whose errors[] is exactly `errors`, and a body that never echoes the submitted text. */
function expectRefused(res: Received, errors: { field: string; code: string }[]) {
  expect({ status: res.status, code: res.json?.code, errors: res.json?.errors }).toEqual({ status: 400, code: 'validation_failed', errors });
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.text).not.toMatch(/\\u0000|\\ud800|\\udc00/i);
}

/** True when the catalog holds no property `providerId` for the partner. */
async function propertyAbsent(providerId: string): Promise<boolean> {
  const err = await connectErrorOf(catalog().getProperty({ workspaceId: p.workspaceId, providerId }));
  return err.code === Code.NotFound;
}

const putProperty = (providerId: string, body: unknown) => gw(jsonRequest('PUT', `/v1/properties/${providerId}`, body, p.auth));
const rawPutProperty = (providerId: string, text: string) =>
  gw({ method: 'PUT', path: `/v1/properties/${providerId}`, headers: { ...p.auth, 'Content-Type': 'application/json' }, body: text });

describe('U+0000 in the public API', () => {
  test.each([
    ['name', (b: any) => (b.name = 'Harbour\u0000loft')],
    ['description', (b: any) => (b.description = 'Two rooms\u0000')],
    ['address.line1', (b: any) => (b.address.line1 = '\u00001 Quay Street')],
    ['address.city', (b: any) => (b.address.city = 'Lis\u0000bon')],
    ['address.region', (b: any) => (b.address.region = 'Lisboa\u0000')],
    ['address.postal_code', (b: any) => (b.address.postal_code = '1100\u0000')],
  ])('%s → 400 {field, invalid}; nothing stored', async (field, change) => {
    const providerId = `nul-${field.replace('.', '-')}`;
    const body = validProperty();
    change(body);
    expectRefused(await putProperty(providerId, body), [{ field, code: 'invalid' }]);
    expect(await propertyAbsent(providerId)).toBe(true);
    // The same property without the NUL is new: the refused request left nothing behind.
    expect((await putProperty(providerId, validProperty())).json).toMatchObject({ provider_id: providerId, result: 'created' });
  });

  test('%00 in provider_id (path) → 400 provider_id; nothing stored under it or its prefix', async () => {
    expectRefused(await putProperty('pre%00post', validProperty()), [{ field: 'provider_id', code: 'invalid' }]);
    expect(await propertyAbsent('pre')).toBe(true);
    expect((await putProperty('pre', validProperty())).json).toMatchObject({ result: 'created' });
  });

  test('%00 in external_uid (path) → 400 external_uid on PUT and DELETE; no block stored', async () => {
    const block = { listing_id: listingId, check_in: '2031-03-01', check_out: '2031-03-04' };
    expectRefused(await gw(jsonRequest('PUT', '/v1/blocks/res%00-1', block, p.auth)), [{ field: 'external_uid', code: 'invalid' }]);
    expectRefused(await gw({ method: 'DELETE', path: '/v1/blocks/res%00-1', headers: p.auth }), [{ field: 'external_uid', code: 'invalid' }]);
    const list = await gw({ path: '/v1/blocks', headers: p.auth });
    expect(list.status).toBe(200);
    expect(list.json.items).toEqual([]);
  });

  test('U+0000 in listing_id → 400 listing_id (was 503); in provider_id → 400, not 501', async () => {
    const dates = { check_in: '2031-04-01', check_out: '2031-04-03' };
    expectRefused(await gw(jsonRequest('PUT', '/v1/blocks/nul-listing', { listing_id: `${listingId}\u0000`, ...dates }, p.auth)), [{ field: 'listing_id', code: 'invalid' }]);
    expectRefused(await gw(jsonRequest('PUT', '/v1/blocks/nul-listing', { listing_id: '\u0000', ...dates }, p.auth)), [{ field: 'listing_id', code: 'invalid' }]);
    expectRefused(await gw(jsonRequest('PUT', '/v1/blocks/nul-provider', { provider_id: 'p\u0000', ...dates }, p.auth)), [{ field: 'provider_id', code: 'invalid' }]);
    const list = await gw({ path: '/v1/blocks', headers: p.auth });
    expect(list.json.items).toEqual([]);
  });

  test('U+0000 in a query parameter and in the webhook URL → 400, never 500', async () => {
    expectRefused(await gw({ path: '/v1/blocks?from=2031-01-01%00', headers: p.auth }), [{ field: 'from', code: 'format' }]);
    expectRefused(await gw({ path: '/v1/blocks?x=%00', headers: p.auth }), [{ field: 'x', code: 'unknown_field' }]);
    const hook = await gw(jsonRequest('PUT', '/v1/webhooks/endpoint', { url: 'https://hooks.example.com/\u0000', events: [] }, p.auth));
    expectRefused(hook, [{ field: 'url', code: 'invalid' }]);
  });
});

describe('unpaired surrogates in the public API', () => {
  test('\\ud800 in name → 400 name; nothing stored (never silently U+FFFD)', async () => {
    const text = JSON.stringify(validProperty()).replace('"Harbour loft"', '"Harbour \\ud800 loft"');
    expect(text).toContain('\\ud800');
    expectRefused(await rawPutProperty('lone-high', text), [{ field: 'name', code: 'invalid' }]);
    expect(await propertyAbsent('lone-high')).toBe(true);
    expect((await putProperty('lone-high', validProperty())).json).toMatchObject({ result: 'created' });
  });

  test('a lone low surrogate in a nested field and in an array item (reported once, by the schema, when it breaks a pattern)', async () => {
    const body = validProperty() as any;
    body.address.city = 'x\udc00';
    body.amenities = ['wifi', '\udc00'];
    expectRefused(await putProperty('lone-low', body), [
      { field: 'amenities[1]', code: 'pattern' },
      { field: 'address.city', code: 'invalid' },
    ]);
    expect(await propertyAbsent('lone-low')).toBe(true);
  });

  test('a surrogate pair (an emoji) is ordinary text and is stored as sent', async () => {
    const body = validProperty() as any;
    body.name = 'Pool 🏊 loft';
    expect((await putProperty('emoji', body)).status).toBe(200);
    const got = await catalog().getProperty({ workspaceId: p.workspaceId, providerId: 'emoji' });
    expect(got.property?.name).toBe('Pool 🏊 loft');
  });
});

describe('instants and dates outside 0001–9999', () => {
  const ack = (completedAt: string) => gw(jsonRequest('POST', `/v1/deletion-requests/${randomUUID()}/acknowledge`, { completed_at: completedAt }, p.auth));

  test.each(['0000-01-01T00:00:00Z', '0001-01-01T00:30:00+01:00', '9999-12-31T23:59:59-23:59'])('completed_at %s → 400 format (was 500)', async (text) => {
    expectRefused(await ack(text), [{ field: 'completed_at', code: 'format' }]);
  });

  test('completed_at more than five minutes ahead → 400 maximum; within the skew it passes validation', async () => {
    expectRefused(await ack(new Date(Date.now() + 3_600_000).toISOString()), [{ field: 'completed_at', code: 'maximum' }]);
    // Validation passed: the unknown event id is what answers.
    const skewed = await ack(new Date(Date.now() + 60_000).toISOString());
    expect({ status: skewed.status, code: skewed.json?.code }).toEqual({ status: 404, code: 'deletion_request_not_found' });
  });

  test('block dates and the block list query of year 0000 → 400 format', async () => {
    expectRefused(await gw(jsonRequest('PUT', '/v1/blocks/year-zero', { listing_id: listingId, check_in: '0000-12-30', check_out: '0001-01-02' }, p.auth)), [
      { field: 'check_in', code: 'format' },
    ]);
    expectRefused(await gw({ path: '/v1/blocks?from=0000-01-01', headers: p.auth }), [{ field: 'from', code: 'format' }]);
  });
});

describe('the internal API refuses the same values itself (INVALID_ARGUMENT + ValidationDetail)', () => {
  test('U+0000 in a nested string of UpsertProperty; nothing stored', async () => {
    const err = await connectErrorOf(
      catalog().upsertProperty({ workspaceId: p.workspaceId, providerId: 'internal-nul', property: { name: 'Harbour\u0000loft', propertyType: 'apartment' } }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
    expect(reasonOf(err)).toBe(ErrorReason.VALIDATION_FAILED);
    expect(violationsOf(err)).toEqual([{ field: 'property.name', code: 'invalid' }]);
    expect(await propertyAbsent('internal-nul')).toBe(true);
  });

  test('U+0000 in a oneof member (PutBlock listing_id) and in a path-like id (external_uid)', async () => {
    const base = { workspaceId: p.workspaceId, checkIn: '2031-05-01', checkOut: '2031-05-02' };
    const inListing = await connectErrorOf(calendar().putBlock({ ...base, externalUid: 'internal-1', target: { case: 'listingId', value: `${listingId}\u0000` } }));
    expect({ code: inListing.code, violations: violationsOf(inListing) }).toEqual({ code: Code.InvalidArgument, violations: [{ field: 'listing_id', code: 'invalid' }] });
    const inUid = await connectErrorOf(calendar().putBlock({ ...base, externalUid: 'internal\u00002', target: { case: 'listingId', value: listingId } }));
    expect({ code: inUid.code, violations: violationsOf(inUid) }).toEqual({ code: Code.InvalidArgument, violations: [{ field: 'external_uid', code: 'invalid' }] });
  });

  test('a streaming call (WatchEvents) with U+0000 in its request', async () => {
    const err = await connectErrorOf(
      (async () => {
        for await (const _ of calendar().watchEvents({ workspaceId: `${p.workspaceId}\u0000` })) void _;
      })(),
    );
    expect({ code: err.code, violations: violationsOf(err) }).toEqual({ code: Code.InvalidArgument, violations: [{ field: 'workspace_id', code: 'invalid' }] });
  });

  test.each([
    ['0000-01-01T00:00:00Z', 'minimum', -62_167_219_200_000],
    ['0001-01-01T00:30:00+01:00', 'minimum', -62_135_598_600_000],
    ['9999-12-31T23:59:59-23:59', 'maximum', 253_402_387_139_000],
  ])('AcknowledgeDeletion completed_at %s as a Timestamp → %s', async (_, code, ms) => {
    const err = await connectErrorOf(notifications().acknowledgeDeletion({ workspaceId: p.workspaceId, eventId: randomUUID(), completedAt: timestampFromMs(ms) }));
    expect({ code: err.code, violations: violationsOf(err) }).toEqual({ code: Code.InvalidArgument, violations: [{ field: 'completed_at', code }] });
  });

  test('AcknowledgeDeletion completed_at an hour ahead → maximum; a minute ahead reaches the look-up', async () => {
    const ahead = await connectErrorOf(
      notifications().acknowledgeDeletion({ workspaceId: p.workspaceId, eventId: randomUUID(), completedAt: timestampFromMs(Date.now() + 3_600_000) }),
    );
    expect({ code: ahead.code, violations: violationsOf(ahead) }).toEqual({ code: Code.InvalidArgument, violations: [{ field: 'completed_at', code: 'maximum' }] });
    const skewed = await connectErrorOf(
      notifications().acknowledgeDeletion({ workspaceId: p.workspaceId, eventId: randomUUID(), completedAt: timestampFromMs(Date.now() + 60_000) }),
    );
    expect(skewed.code).toBe(Code.NotFound);
  });
});
