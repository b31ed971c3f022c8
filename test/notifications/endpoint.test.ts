/**
 * Webhook endpoint registration against the running system (spec "Webhook endpoint",
 * its status table, PUT /webhooks/endpoint): the challenge during
 * every call, the generic refusal of every bad URL, the signing secret shown once and
 * never re-minted, pausing, rotation. A real HTTPS partner receiver on
 * https://localhost:8443 (CA made at test time, trusted via NODE_EXTRA_CA_CERTS).
 */
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { createSql } from '../../services/kit/db';
import { WebhookEventType, EndpointStatus } from '../../gen/psync/notifications/v1/notifications_pb';
import { backends, logEvents, startSystem, stopAllSystems, type RunningSystem } from '../support/system';
import { SystemClients, errorShape, psync, psyncFails, rpcError, startWebhookSystem, webhookEnv } from './support/harness';
import { echoAndAccept, Receiver, verifyDelivery, type Handler } from './support/receiver';
import { createCertificates, type Certificates } from '../support/tls';

const ALL = [WebhookEventType.BOOKING_CONFIRMED, WebhookEventType.BOOKING_CANCELLED, WebhookEventType.USER_ERASED];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let certs: Certificates;
let receiver: Receiver;
let system: RunningSystem;
let c: SystemClients;

beforeAll(async () => {
  certs = await createCertificates();
  receiver = new Receiver(certs);
  await receiver.listen(); // waits while another test file holds port 8443
  system = await startWebhookSystem(certs);
  c = new SystemClients(system.internalUrl);
}, 600_000);

afterAll(async () => {
  c?.close();
  await stopAllSystems();
  await receiver?.close();
  certs?.remove();
});

/** A fresh workspace and a path of its own on the receiver. */
function fresh(): { ws: string; path: string; url: string } {
  const ws = randomUUID();
  const path = `/hooks/${ws}`;
  return { ws, path, url: `${receiver.baseUrl}${path}` };
}

describe(`webhook endpoint registration (${backends.database})`, () => {
  test('first registration: challenge echoed → active, secret issued once, challenge signed with it', async () => {
    const { ws, path, url } = fresh();
    const res = await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
    expect(res.status).toBe(EndpointStatus.ACTIVE);
    expect(res.url).toBe(url);
    expect(res.events).toEqual(ALL);
    expect(res.signingSecret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);

    const [ch] = receiver.at(path, 'challenge');
    expect(ch).toBeDefined();
    expect(ch!.method).toBe('POST');
    expect(ch!.headers['content-type']).toMatch(/^application\/json/);
    expect(Object.keys(ch!.json)).toEqual(['event_id', 'event_type', 'occurred_at', 'data']);
    expect(ch!.json.event_id).toMatch(UUID);
    expect(ch!.json.event_type).toBe('endpoint.challenge');
    expect(Math.abs(Date.parse(ch!.json.occurred_at) - ch!.at)).toBeLessThan(10_000);
    expect(typeof ch!.json.data.challenge).toBe('string');
    expect(ch!.json.data.challenge.length).toBeGreaterThanOrEqual(32);
    expect(ch!.headers['x-signature']).toMatch(/^[0-9a-f]{64}$/);
    expect(ch!.headers['x-signature-previous']).toBeUndefined();
    expect(verifyDelivery(ch!, res.signingSecret!)).toEqual({ ok: true, matched: 'signature' });

    // Re-registration, same URL: challenged again (a new single-use string), no secret.
    const again = await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
    expect(again.status).toBe(EndpointStatus.ACTIVE);
    expect(again.signingSecret).toBeUndefined();
    const challenges = receiver.at(path, 'challenge');
    expect(challenges).toHaveLength(2);
    expect(challenges[1]!.json.data.challenge).not.toBe(challenges[0]!.json.data.challenge);
    expect(challenges[1]!.json.event_id).not.toBe(challenges[0]!.json.event_id);
    expect(verifyDelivery(challenges[1]!, res.signingSecret!).ok).toBe(true);
  });

  test('re-registration with a new URL and events replaces both and never mints a new secret', async () => {
    const { ws, url } = fresh();
    const first = await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
    const secret = first.signingSecret!;
    const otherPath = `/hooks/${ws}/v2`;
    const res = await c.notifications.putEndpoint({ workspaceId: ws, url: `${receiver.baseUrl}${otherPath}`, events: [WebhookEventType.USER_ERASED] });
    expect(res).toMatchObject({ url: `${receiver.baseUrl}${otherPath}`, events: [WebhookEventType.USER_ERASED], status: EndpointStatus.ACTIVE });
    expect(res.signingSecret).toBeUndefined();
    // The new URL's challenge is signed with the one secret the partner holds.
    expect(verifyDelivery(receiver.at(otherPath, 'challenge')[0]!, secret).ok).toBe(true);
    const got = await c.notifications.getEndpoint({ workspaceId: ws });
    expect(got.endpoint).toMatchObject({ workspaceId: ws, url: `${receiver.baseUrl}${otherPath}`, events: [WebhookEventType.USER_ERASED], status: EndpointStatus.ACTIVE });
  });

  test.each([
    ['a wrong echo', () => ({ status: 200, body: JSON.stringify({ challenge: 'not-it' }) })],
    ['an empty 204', () => ({ status: 204 })],
    ['a body that is not JSON', (r) => ({ status: 200, body: r.json.data.challenge })],
    ['a 500 that echoes', (r) => ({ status: 500, body: JSON.stringify({ challenge: r.json.data.challenge }) })],
    ['a 404', () => ({ status: 404 })],
    ['a redirect to an echoing URL', (r) => ({ status: 307, headers: { location: `${r.path}/echo` } })],
  ] as [string, Handler][])('challenge answered with %s → pending_verification, nothing else sent', async (_what, handler) => {
    const { ws, path, url } = fresh();
    receiver.on(path, handler);
    receiver.on(`${path}/echo`, echoAndAccept);
    const res = await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
    expect(res.status).toBe(EndpointStatus.PENDING_VERIFICATION);
    // The secret is issued by the first call even when its challenge fails.
    expect(res.signingSecret).toMatch(/^whsec_/);
    expect(receiver.at(path)).toHaveLength(1);
    expect(receiver.at(`${path}/echo`)).toHaveLength(0); // redirects are never followed

    // Calling again retries; an echo now activates (status table: any → active).
    receiver.on(path, echoAndAccept);
    const retry = await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
    expect(retry.status).toBe(EndpointStatus.ACTIVE);
    expect(retry.signingSecret).toBeUndefined();
  });

  test('a challenge answered after more than five seconds → pending_verification, and the call does not wait for it', async () => {
    const { ws, path, url } = fresh();
    receiver.on(path, (r) => ({ ...echoAndAccept(r), delayMs: 6500 }));
    const started = Date.now();
    const res = await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
    const took = Date.now() - started;
    expect(res.status).toBe(EndpointStatus.PENDING_VERIFICATION);
    expect(took).toBeGreaterThanOrEqual(4500);
    expect(took).toBeLessThan(6400);

    // Within five seconds is fine.
    receiver.on(path, (r) => ({ ...echoAndAccept(r), delayMs: 3000 }));
    expect((await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL })).status).toBe(EndpointStatus.ACTIVE);
  });

  test('an active endpoint whose new challenge fails goes to pending_verification (status table: any → pending)', async () => {
    const { ws, path, url } = fresh();
    expect((await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL })).status).toBe(EndpointStatus.ACTIVE);
    receiver.on(path, () => ({ status: 503 }));
    const res = await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
    expect(res.status).toBe(EndpointStatus.PENDING_VERIFICATION);
    const got = await c.notifications.getEndpoint({ workspaceId: ws });
    expect(got.endpoint!.status).toBe(EndpointStatus.PENDING_VERIFICATION);
  });

  test('events [] pauses: status unchanged, secret kept, still challenged', async () => {
    const { ws, path, url } = fresh();
    const first = await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
    const paused = await c.notifications.putEndpoint({ workspaceId: ws, url, events: [] });
    expect(paused).toMatchObject({ url, events: [], status: EndpointStatus.ACTIVE });
    expect(paused.signingSecret).toBeUndefined();
    const challenges = receiver.at(path, 'challenge');
    expect(challenges).toHaveLength(2);
    expect(verifyDelivery(challenges[1]!, first.signingSecret!).ok).toBe(true);
    expect((await c.notifications.getEndpoint({ workspaceId: ws })).endpoint).toMatchObject({ events: [], status: EndpointStatus.ACTIVE });
  });

  test('events: duplicates collapse; more than 16 entries or a non-subscribable kind is a validation error naming events', async () => {
    const { ws, url } = fresh();
    const dup = await c.notifications.putEndpoint({
      workspaceId: ws,
      url,
      events: [WebhookEventType.USER_ERASED, WebhookEventType.USER_ERASED, WebhookEventType.BOOKING_CONFIRMED],
    });
    expect(dup.events).toEqual([WebhookEventType.USER_ERASED, WebhookEventType.BOOKING_CONFIRMED]);

    const tooMany = errorShape(await rpcError(c.notifications.putEndpoint({ workspaceId: ws, url, events: new Array(17).fill(WebhookEventType.USER_ERASED) })));
    expect(tooMany).toMatchObject({ code: 'InvalidArgument', reason: 'VALIDATION_FAILED', violations: [{ field: 'events', code: 'max_items' }] });
    const sixteen = await c.notifications.putEndpoint({ workspaceId: ws, url, events: new Array(16).fill(WebhookEventType.BOOKING_CANCELLED) });
    expect(sixteen.events).toEqual([WebhookEventType.BOOKING_CANCELLED]);

    const challenge = errorShape(
      await rpcError(c.notifications.putEndpoint({ workspaceId: ws, url, events: [WebhookEventType.BOOKING_CONFIRMED, WebhookEventType.ENDPOINT_CHALLENGE] })),
    );
    expect(challenge).toMatchObject({ code: 'InvalidArgument', violations: [{ field: 'events[1]', code: 'enum' }] });
  });

  test('every refused URL gets the same generic validation error, and nothing is registered or sent', async () => {
    const { ws } = fresh();
    const before = receiver.received.length;
    const refused = [
      'http://localhost:8443/hooks/plain-http', // not https
      'https://localhost:9443/hooks/port', // wrong port
      'https://localhost:8080/hooks/port', // wrong port
      'https://127.0.0.1:8443/hooks/ip', // IP literal
      'https://[::1]:8443/hooks/ip6', // IPv6 literal
      'https://2130706433:8443/hooks/numeric', // numeric IPv4 host
      'https://no-such-host.invalid:8443/hooks/dns', // does not resolve
      'https://user:pass@localhost:8443/hooks/userinfo', // credentials in the URL
      `https://localhost:8443/${'a'.repeat(2048)}`, // longer than 2048
      'not a url',
      'ftp://localhost:8443/x',
    ];
    const shapes = [];
    for (const url of refused) shapes.push(errorShape(await rpcError(c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL }))));
    for (const s of shapes) {
      expect(s).toEqual({ code: 'InvalidArgument', reason: 'VALIDATION_FAILED', violations: [{ field: 'url', code: 'invalid' }], message: shapes[0]!.message });
    }
    expect(receiver.received.length).toBe(before);
    const none = await rpcError(c.notifications.getEndpoint({ workspaceId: ws }));
    expect(errorShape(none)).toMatchObject({ code: 'NotFound', reason: 'ENDPOINT_NOT_FOUND' });
  });

  test('port 443 (explicit or default) is an acceptable port: registered, pending while nothing answers', async () => {
    const { ws } = fresh();
    for (const url of ['https://localhost/hooks/default-port', 'https://localhost:443/hooks/explicit']) {
      const res = await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
      expect(res.status).toBe(EndpointStatus.PENDING_VERIFICATION);
    }
  });

  test('psync webhook rotate-secret: new secret, previous signs X-Signature-Previous until previous_valid_until (24 h)', async () => {
    const { ws, path, url } = fresh();
    const first = await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
    const before = Date.now();
    const rotated = await psync(system, ['webhook', 'rotate-secret', '--workspace', ws]);
    expect(Object.keys(rotated).sort()).toEqual(['previous_valid_until', 'signing_secret']);
    expect(rotated.signing_secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(rotated.signing_secret).not.toBe(first.signingSecret);
    const until = Date.parse(rotated.previous_valid_until);
    expect(until - before).toBeGreaterThan(86_400_000 - 60_000);
    expect(until - before).toBeLessThan(86_400_000 + 60_000);

    // The next challenge carries both signatures: a partner with either secret accepts it.
    const again = await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
    expect(again.signingSecret).toBeUndefined();
    const ch = receiver.at(path, 'challenge').at(-1)!;
    expect(ch.headers['x-signature-previous']).toMatch(/^[0-9a-f]{64}$/);
    expect(verifyDelivery(ch, rotated.signing_secret)).toEqual({ ok: true, matched: 'signature' });
    expect(verifyDelivery(ch, first.signingSecret!)).toEqual({ ok: true, matched: 'previous' });
    expect((await c.notifications.getEndpoint({ workspaceId: ws })).endpoint!.previousValidUntil).toBeDefined();

    // A zero overlap ends it at once: no X-Signature-Previous any more.
    const third = await psync(system, ['webhook', 'rotate-secret', '--workspace', ws, '--overlap-seconds', '0']);
    await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
    const last = receiver.at(path, 'challenge').at(-1)!;
    expect(last.headers['x-signature-previous']).toBeUndefined();
    expect(verifyDelivery(last, third.signing_secret)).toEqual({ ok: true, matched: 'signature' });
    expect(verifyDelivery(last, rotated.signing_secret).ok).toBe(false);
  });

  test('psync webhook rotate-secret for a workspace without endpoint fails with one line', async () => {
    const res = await psyncFails(system, ['webhook', 'rotate-secret', '--workspace', randomUUID()]);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr).toMatch(/not ?found/i);
  });

  test('the signing secret never reaches the logs', async () => {
    const { ws, url } = fresh();
    const first = await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
    const rotated = await psync(system, ['webhook', 'rotate-secret', '--workspace', ws]);
    const all = [...system.logs(), ...system.stderr()].join('\n'); // log text on purpose: no secret anywhere in it
    expect(all).not.toContain(first.signingSecret!);
    expect(all).not.toContain(rotated.signing_secret);
    expect(all).not.toContain(first.signingSecret!.slice('whsec_'.length));
  });
});

describe('without EGRESS_ALLOW_CIDRS, a name resolving only to loopback is refused like every other bad URL', () => {
  let strict: RunningSystem;
  let sc: SystemClients;

  beforeAll(async () => {
    strict = await startWebhookSystem(certs, { env: { EGRESS_ALLOW_CIDRS: '' } });
    sc = new SystemClients(strict.internalUrl);
  }, 120_000);

  afterAll(async () => {
    sc?.close();
    await strict?.stop();
  });

  test('non-public address → the same generic error; nothing sent', async () => {
    const { ws, path, url } = fresh();
    const nonPublic = errorShape(await rpcError(sc.notifications.putEndpoint({ workspaceId: ws, url, events: ALL })));
    const wrongPort = errorShape(await rpcError(sc.notifications.putEndpoint({ workspaceId: ws, url: 'https://localhost:9443/x', events: ALL })));
    expect(nonPublic).toEqual(wrongPort);
    expect(nonPublic).toMatchObject({ code: 'InvalidArgument', violations: [{ field: 'url', code: 'invalid' }] });
    expect(receiver.at(path)).toHaveLength(0);
  });
});

describe('signing secrets at rest', () => {
  test('stored only encrypted; the embedded default keeps its generated key under DATA_DIR/keys', async () => {
    const { ws, url } = fresh();
    const res = await c.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
    const secret = res.signingSecret!;
    if (!system.env.DATABASE_URL) {
      const file = join(system.dataDir, 'keys', 'secrets-encryption.key');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      return;
    }
    const sql = createSql(system.env.DATABASE_URL, { max: 1 });
    try {
      const rows = await sql<{ dump: string }[]>`select row_to_json(e)::text as dump from notifications.endpoints e where workspace_id = ${ws}`;
      expect(rows).toHaveLength(1);
      const dump = rows[0]!.dump;
      expect(dump).not.toContain(secret);
      expect(dump).not.toContain(secret.slice('whsec_'.length));
      expect(dump).not.toContain(Buffer.from(secret).toString('hex'));
    } finally {
      await sql.end({ timeout: 5 });
    }
  });

  (process.env.DATABASE_URL ? test : test.skip)('a real PostgreSQL without SECRETS_ENCRYPTION_KEY: registration answers service_unavailable, nothing sent', async () => {
    const env = { ...webhookEnv(certs), SECRETS_ENCRYPTION_KEY: '' }; // empty = unset
    const bare = await startSystem({ env });
    const bc = new SystemClients(bare.internalUrl);
    try {
      const { ws, path, url } = fresh();
      const err = errorShape(await rpcError(bc.notifications.putEndpoint({ workspaceId: ws, url, events: ALL })));
      expect(err).toMatchObject({ code: 'Unavailable', reason: 'SERVICE_UNAVAILABLE' });
      expect(receiver.at(path)).toHaveLength(0);
      expect(logEvents(bare.logs(), 'notifications.encryption_key.missing')).toHaveLength(1);
    } finally {
      bc.close();
      await bare.stop();
    }
  });
});
