/**
 * docs/partners/sandbox.md, run as a partner runs it, with the partner guide's rules
 * (test/docs/partner-guide.test.ts, support/http-transcript.ts): every
 * `<!-- example: NAME -->` sh block run by bash, verbatim, in order, against a running
 * system with the guide's variables (`BASE`, `TOKEN`, `LISTING_ID`, and an endpoint
 * registered at `WEBHOOK_URL` for every kind), its `curl -si` output compared with the
 * `<!-- response: NAME -->` block; the `<!-- delivery: NAME -->` block compared with
 * the delivery the receiver got for the first test event, whose signature is verified.
 * Before the delivery log is read, the test events are delivered (as a partner would
 * wait a moment).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/process';
import { Partners } from '../gateway/partners';
import { send } from '../gateway/http-client';
import { webhookSuite } from '../notifications/support/suite';
import { verifyDelivery } from '../notifications/support/receiver';
import { eventually } from '../notifications/support/harness';
import { messageDifferences, parseCurlOutput, parseDocumented, type HttpMessage } from './support/http-transcript';
import { fencedBlocks } from './support/markdown';
import { shellEnvironment } from './support/terminal';
import { runCommand } from '../support/system';

const GUIDE = 'docs/partners/sandbox.md';
const blocks = fencedBlocks(readFileSync(join(ROOT, GUIDE), 'utf8'));
const examples = blocks.filter((b) => b.kind === 'example');
const responseOf = (name: string) => blocks.find((b) => b.kind === 'response' && b.name === name);

const suite = webhookSuite('sandbox guide');
const receiverPath = '/webhooks/psync';
let partners: Partners;
let secret: string;
let vars: Record<string, string>;
let auth: Record<string, string>;

beforeAll(async () => {
  partners = new Partners(suite.system);
  const partner = await partners.partner('sandbox');
  const listingId = (await suite.clients.catalog.createListing({ workspaceId: partner.workspaceId })).listing!.listingId;
  const webhookUrl = `${suite.receiver.baseUrl}${receiverPath}`;
  const reg = await send(suite.system.gatewayUrl, {
    method: 'PUT',
    path: '/v1/webhooks/endpoint',
    headers: { ...partner.auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ url: webhookUrl, events: ['booking.confirmed', 'booking.cancelled', 'user.erased'] }),
  });
  expect(reg.json.status).toBe('active');
  secret = reg.json.signing_secret;
  auth = partner.auth;
  vars = { BASE: `${suite.system.gatewayUrl}/v1`, TOKEN: partner.token, LISTING_ID: listingId, WEBHOOK_URL: webhookUrl };
}, 120_000);

afterAll(() => partners?.close());

/** Runs an example's block as the guide's runner does: bash, verbatim, with the variables. */
async function run(code: string): Promise<string> {
  const r = await runCommand('bash', ['-c', code], shellEnvironment(ROOT, vars), 30_000);
  if (r.code !== 0) throw new Error(`the block failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

describe(`${GUIDE}, every example against a running system`, () => {
  test('every example has its response, and every response its example', () => {
    expect(examples.length).toBeGreaterThanOrEqual(6);
    for (const e of examples) expect([e.name, e.lang, responseOf(e.name)?.kind]).toEqual([e.name, 'sh', 'response']);
    for (const r of blocks.filter((b) => b.kind === 'response')) expect([r.name, examples.some((e) => e.name === r.name)]).toEqual([r.name, true]);
  });

  for (const example of examples) {
    test(`${example.name} (${GUIDE}:${example.line})`, async () => {
      if (example.name === 'delivery-log') {
        // What the page's earlier examples queued has been delivered by now.
        await eventually(
          async () => {
            const res = await send(suite.system.gatewayUrl, { path: '/v1/webhooks/deliveries?state=pending', headers: auth });
            return res.json.items.length === 0;
          },
          20_000,
          'every test event delivered',
        );
      }
      const documented: HttpMessage = parseDocumented(responseOf(example.name)!.code);
      expect(messageDifferences(documented, parseCurlOutput(await run(example.code)), vars)).toEqual([]);
    }, 60_000);
  }

  test('the delivery shown is what the first test event delivered, signed', async () => {
    const documented = parseDocumented(blocks.find((b) => b.kind === 'delivery' && b.name === 'test-event')!.code);
    const got = await suite.receiver.waitFor(() => suite.receiver.at(receiverPath, 'delivery')[0], 15_000, 'the first test delivery');
    expect(verifyDelivery(got, secret)).toEqual({ ok: true, matched: 'signature' });
    const actual: HttpMessage = { method: got.method, path: got.path, headers: Object.entries(got.headers), body: got.raw };
    expect(messageDifferences(documented, actual, vars)).toEqual([]);
  });
});
