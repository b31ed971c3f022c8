/**
 * Receiver checks through the public gateway (POST /v1/sandbox/endpoint-checks, GET
 * /v1/sandbox/endpoint-checks/{id}; services/notifications/endpoint-checks.ts), against
 * real HTTPS receivers on this machine:
 *
 * - a receiver that keeps every rule (verifies the raw body with either secret, refuses
 *   a stale timestamp, deduplicates on event_id) passes every check, the rotation check
 *   included while an overlap is open;
 * - a receiver that answers 200 to everything fails, with the refusal checks named;
 * - one run a minute per workspace (429 with Retry-After), an inactive endpoint 409,
 *   another workspace's run 404 like an unknown one, production 501 after validation.
 */
import { randomUUID } from 'node:crypto';
import { send, type Received as HttpAnswer } from '../gateway/http-client';
import { Partners, type Partner } from '../gateway/partners';
import { eventually } from './support/harness';
import { echoAndAccept, verifyDelivery, type Handler } from './support/receiver';
import { webhookSuite } from './support/suite';

const suite = webhookSuite('receiver checks');
let partners: Partners;

beforeAll(async () => {
  partners = new Partners(suite.system);
}, 60_000);
afterAll(() => partners?.close());

const api = (p: { auth: Record<string, string> }, method: string, path: string, body?: unknown): Promise<HttpAnswer> =>
  send(
    suite.system.gatewayUrl,
    body === undefined ? { method, path, headers: p.auth } : { method, path, headers: { ...p.auth, 'Content-Type': 'application/json' }, body: JSON.stringify(body) },
  );

/** A receiver keeping the contract's rules, with the secrets it knows. */
function carefulReceiver(secrets: string[]): Handler {
  const seen = new Set<string>();
  return (req) => {
    if (req.json?.event_type === 'endpoint.challenge') return echoAndAccept(req);
    if (!secrets.some((s) => verifyDelivery(req, s).ok)) return { status: 401, body: '' };
    seen.add(req.json.event_id);
    return { status: 200, body: '' };
  };
}

/** A sandbox partner whose active endpoint answers with `handler`; its signing secret. */
async function registered(handler: (secret: string[]) => Handler): Promise<{ partner: Partner; secrets: string[] }> {
  const partner = await partners.partner('sandbox');
  const path = `/receiver-checks/${partner.workspaceId}`;
  const secrets: string[] = [];
  suite.receiver.on(path, (req) => handler(secrets)(req));
  const reg = await api(partner, 'PUT', '/v1/webhooks/endpoint', { url: `${suite.receiver.baseUrl}${path}`, events: ['booking.confirmed'] });
  expect([reg.status, reg.json.status]).toEqual([200, 'active']);
  secrets.push(reg.json.signing_secret);
  return { partner, secrets };
}

/** Starts a run and waits for its end. */
async function run(partner: Partner): Promise<any> {
  const started = await api(partner, 'POST', '/v1/sandbox/endpoint-checks');
  expect([started.status, started.json.status]).toEqual([202, 'running']);
  expect(started.headers.location).toBe(`/v1/sandbox/endpoint-checks/${started.json.id}`);
  expect(started.json.checks.every((c: any) => c.observed === null && c.passed === null)).toBe(true);
  return eventually(
    async () => {
      const res = await api(partner, 'GET', `/v1/sandbox/endpoint-checks/${started.json.id}`);
      return res.status === 200 && res.json.status !== 'running' && res.json;
    },
    60_000,
    'the run to end',
  );
}

const outcome = (r: any) => Object.fromEntries(r.checks.map((c: any) => [c.name, c.passed]));

test('a receiver that keeps every rule passes; the rotation check joins while an overlap is open', async () => {
  const { partner } = await registered((s) => carefulReceiver(s));
  const result = await run(partner);
  expect([result.status, outcome(result)]).toEqual([
    'passed',
    { valid_delivery_accepted: true, duplicate_accepted: true, wrong_signature_refused: true, stale_timestamp_refused: true, altered_body_refused: true },
  ]);
  expect(result.checks[0].observed).toMatch(/^HTTP 200 in \d+ ms$/);
  expect(result.checks[2]).toMatchObject({ expectation: expect.stringContaining('refused'), observed: expect.stringMatching(/^HTTP 401 /) });
  expect(result.finished_at).not.toBeNull();

  const rotating = await registered((s) => carefulReceiver(s));
  const rotated = await suite.clients.notifications.rotateSecret({ workspaceId: rotating.partner.workspaceId });
  rotating.secrets.push(rotated.signingSecret);
  const overlap = await run(rotating.partner);
  expect([overlap.status, overlap.checks.map((c: any) => c.name).at(-1), outcome(overlap).previous_secret_accepted]).toEqual(['passed', 'previous_secret_accepted', true]);
});

test('a receiver that answers 200 to everything fails, with the refusal checks named', async () => {
  const { partner } = await registered(() => echoAndAccept);
  const result = await run(partner);
  expect(result.status).toBe('failed');
  expect(result.checks.filter((c: any) => !c.passed).map((c: any) => c.name)).toEqual(['wrong_signature_refused', 'stale_timestamp_refused', 'altered_body_refused']);
});

test('one run a minute; an inactive endpoint is 409; another workspace or an unknown id is 404; production is 501', async () => {
  const { partner } = await registered((s) => carefulReceiver(s));
  const first = await api(partner, 'POST', '/v1/sandbox/endpoint-checks');
  expect(first.status).toBe(202);
  const second = await api(partner, 'POST', '/v1/sandbox/endpoint-checks');
  expect([second.status, second.json.code]).toEqual([429, 'rate_limited']);
  expect(Number(second.headers['retry-after'])).toBeGreaterThan(0);

  const other = await partners.partner('sandbox');
  const foreign = await api(other, 'GET', `/v1/sandbox/endpoint-checks/${first.json.id}`);
  const unknown = await api(other, 'GET', `/v1/sandbox/endpoint-checks/${randomUUID()}`);
  expect([foreign.status, foreign.json.code, unknown.json.code]).toEqual([404, 'endpoint_check_not_found', 'endpoint_check_not_found']);
  expect((await api(other, 'GET', '/v1/sandbox/endpoint-checks/not-a-uuid')).json.errors).toEqual([{ field: 'id', code: 'format' }]);
  const inactive = await api(other, 'POST', '/v1/sandbox/endpoint-checks');
  expect([inactive.status, inactive.json.code]).toEqual([409, 'webhook_endpoint_not_active']);

  const production = await partners.partner('production');
  expect((await api(production, 'POST', '/v1/sandbox/endpoint-checks')).status).toBe(501);
  expect((await api(production, 'GET', `/v1/sandbox/endpoint-checks/${randomUUID()}`)).status).toBe(501);
  await eventually(async () => (await api(partner, 'GET', `/v1/sandbox/endpoint-checks/${first.json.id}`)).json.status !== 'running', 60_000, 'the first run to end');
});
