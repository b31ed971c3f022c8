/**
 * The TypeScript receiver of docs/partners/webhook-verification.md, taken from the
 * guide as written: it type-checks against the SDK, and run as a server it accepts
 * deliveries signed by the service's own signer (services/notifications/signature.ts)
 * and refuses what the vectors refuse.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signatureHeaders } from '../../../services/notifications/signature';
import { tsExamples } from './support/examples';
import { loadVectors } from './support/snippets';

const SECRET = 'whsec_OfZhNLnN9z9N6kHNgWIxteEmdoiUxRUUirf_S9WJCXk';
const PREVIOUS = 'whsec_ryn2qJ24p4EFkkl7kDk1L7clyQ2YiP1QvoRdbyRxGH4';

const guideExamples = tsExamples('docs/partners/webhook-verification.md');
const example = guideExamples[0]!;
const readmeWebhook = tsExamples('packages/partner-sdk/README.md')[1]!;
let server: Server;
let url: string;

beforeAll(async () => {
  process.env.PSYNC_WEBHOOK_SECRET = SECRET;
  process.env.PSYNC_WEBHOOK_SECRET_PREVIOUS = PREVIOUS;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  server = (require(example.file) as { server: Server }).server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  example.remove();
  readmeWebhook.remove();
  delete process.env.PSYNC_WEBHOOK_SECRET;
  delete process.env.PSYNC_WEBHOOK_SECRET_PREVIOUS;
});

test('the guide has one TypeScript example, and it type-checks against the SDK', () => {
  expect(guideExamples).toHaveLength(1);
  expect(example.typeErrors()).toEqual([]);
}, 60_000);

async function deliver(body: string, headers: Record<string, string>) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const answer: unknown = await res.json();
  return { status: res.status, body: answer };
}

const bodies = Object.fromEntries(loadVectors().cases.map((c) => [c.name, c.request.body]));

test('a challenge signed by the service is echoed', async () => {
  const body = JSON.stringify({
    event_id: '3b7e9c1d-2f4a-4e8b-9c0d-1e2f3a4b5c6d',
    event_type: 'endpoint.challenge',
    occurred_at: new Date().toISOString(),
    data: { challenge: 'c-123' },
  });
  expect(await deliver(body, signatureHeaders({ current: SECRET }, body))).toEqual({ status: 200, body: { challenge: 'c-123' } });
});

test('every kind is accepted, under the current secret or (during a rotation) the previous one, and handled by its type', async () => {
  const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);
  try {
    for (const name of ['valid', 'valid_booking_cancelled', 'valid_user_erased', 'unicode_body']) {
      const body = bodies[name]!;
      expect([name, await deliver(body, signatureHeaders({ current: SECRET }, body))]).toEqual([name, { status: 200, body: {} }]);
      const rotated = signatureHeaders({ current: 'whsec_the-service-already-rotated', previous: PREVIOUS }, body);
      expect([name, await deliver(body, rotated)]).toEqual([name, { status: 200, body: {} }]);
    }
    expect(log.mock.calls.map((c) => c[0])).toEqual(
      [
        'booking BK-7Q2M9X: 2026-10-02 to 2026-10-05, 540.00 EUR',
        'booking BK-7Q2M9X cancelled by the guest',
        'erase 2 booking(s), then acknowledge 0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b',
        'booking BK-ÜNI-42: 2026-12-20 to 2026-12-27, 1999.90 CHF',
      ].flatMap((line) => [line, line]),
    );
  } finally {
    log.mockRestore();
  }
});

test('a tampered, unsigned, foreign or stale delivery is refused with its reason', async () => {
  const body = bodies.valid!;
  const signed = signatureHeaders({ current: SECRET }, body);
  expect(await deliver(body.replace('540.00', '5.00'), signed)).toEqual({ status: 400, body: { refused: 'signature_mismatch' } });
  expect(await deliver(body, {})).toEqual({ status: 400, body: { refused: 'missing_header' } });
  expect(await deliver(body, signatureHeaders({ current: 'whsec_someone-else' }, body))).toEqual({ status: 400, body: { refused: 'signature_mismatch' } });
  const stale = signatureHeaders({ current: SECRET }, body, new Date(Date.now() - 301_000));
  expect(await deliver(body, stale)).toEqual({ status: 400, body: { refused: 'timestamp_too_old' } });
});

describe("the README's webhook example", () => {
  test('type-checks', () => {
    expect(readmeWebhook.typeErrors()).toEqual([]);
  }, 60_000);

  test('answers 200 to a delivery the service signed, 400 to anything else', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { handleDelivery } = require(readmeWebhook.file) as { handleDelivery: (raw: Buffer, headers: Record<string, string>, secrets: string[]) => number };
    const body = bodies.valid!;
    const lower = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
    const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      expect(handleDelivery(Buffer.from(body), lower(signatureHeaders({ current: SECRET }, body)), [SECRET])).toBe(200);
      expect(handleDelivery(Buffer.from(body), lower(signatureHeaders({ current: 'whsec_new', previous: PREVIOUS }, body)), [SECRET, PREVIOUS])).toBe(200);
      expect(handleDelivery(Buffer.from(body), lower(signatureHeaders({ current: 'whsec_other' }, body)), [SECRET, PREVIOUS])).toBe(400);
      expect(log.mock.calls.map((c) => c[0])).toEqual(['Ada Lovelace paid 540.00 EUR', 'Ada Lovelace paid 540.00 EUR']);
    } finally {
      log.mockRestore();
    }
  });
});
