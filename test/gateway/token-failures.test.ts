/**
 * Failed token exchanges are throttled (gateway/token-failures.ts, docs/decisions.md
 * "Failed token exchanges"): per client address before identity is asked, per presented
 * key id without ever locking out the right key; refusals are `429 {message}` with
 * `Retry-After` and the RateLimit-* headers; identity's refusal log lines are sampled.
 */
import { logEvents, startSystem, stopAllSystems, type RunningSystem } from '../support/system';
import { send } from './http-client';
import { Partners } from './partners';
import { holdsFor } from '../support/eventually';

const exchange = (system: RunningSystem, apiKey: string | undefined, extra: Record<string, string> = {}) =>
  send(system.gatewayUrl, { method: 'POST', path: '/v1/token', headers: { ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}), ...extra } });

/** A well-formed key nobody issued (random key id and secret). */
function strangerKey(keyId = Array.from({ length: 16 }, () => 'abcdefghijklmnopqrstuvwxyz234567'[Math.floor(Math.random() * 32)]).join('')): string {
  return `psk_${keyId}_${'A'.repeat(43)}`;
}

function expectThrottled(res: Awaited<ReturnType<typeof send>>): void {
  expect(res.status).toBe(429);
  expect(res.json).toEqual({ message: 'too many failed token requests; retry later' });
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(600);
  expect(res.headers['ratelimit-remaining']).toBe('0');
  expect(res.headers['ratelimit-limit']).toBeDefined();
}

afterAll(() => stopAllSystems());

describe('per client address', () => {
  let system: RunningSystem;
  let partners: Partners;
  beforeAll(async () => {
    system = await startSystem({ env: { TOKEN_FAILURES_PER_ADDRESS: '5', TOKEN_FAILURES_PER_KEY: '1000' } });
    partners = new Partners(system);
  });
  afterAll(() => partners.close());

  test('five failures answer 401; then every exchange from that address is 429 without asking identity', async () => {
    const good = await partners.partner();
    const attempts = [strangerKey(), undefined, 'not-a-key', strangerKey(), strangerKey()];
    for (const k of attempts) expect((await exchange(system, k)).status).toBe(401);
    const refusedBefore = logEvents(system.logs(), 'token.exchange.refused').length;
    expectThrottled(await exchange(system, strangerKey()));
    // The address is held off whatever it presents, the right key too (it shares the address).
    expectThrottled(await exchange(system, good.apiKey));
    // Identity was not asked: no new refusal anywhere.
    await holdsFor('identity not asked: no new refusal', () => logEvents(system.logs(), 'token.exchange.refused').length === refusedBefore, 200);
  });

  test('contract requests with a token are not affected', async () => {
    const res = await send(system.gatewayUrl, { method: 'GET', path: '/v1/blocks', headers: { Authorization: 'Bearer not-a-token' } });
    expect(res.status).toBe(401);
  });
});

describe('per presented key id', () => {
  let system: RunningSystem;
  let partners: Partners;
  beforeAll(async () => {
    system = await startSystem({ env: { TOKEN_FAILURES_PER_ADDRESS: '1000', TOKEN_FAILURES_PER_KEY: '3' } });
    partners = new Partners(system);
  });
  afterAll(() => partners.close());

  test('three wrong secrets for a key id answer 401, the next 429; the right key still gets its token', async () => {
    const p = await partners.partner();
    const wrong = `psk_${p.keyId}_${'B'.repeat(43)}`;
    for (let i = 0; i < 3; i++) expect((await exchange(system, wrong)).status).toBe(401);
    expectThrottled(await exchange(system, wrong));
    expectThrottled(await exchange(system, wrong));
    const right = await exchange(system, p.apiKey);
    expect(right.status).toBe(200);
    // Another key id is not affected.
    expect((await exchange(system, strangerKey())).status).toBe(401);
  });

  test("identity's refusal lines are sampled: a burst of failures leaves a few lines with the count of the rest", async () => {
    const burst = 40;
    await Promise.all(Array.from({ length: burst }, () => exchange(system, strangerKey())));
    const refusedLines = () => logEvents(system.logs(), 'token.exchange.refused').filter((l) => l.reason === 'unknown_key');
    await holdsFor('fewer than five refusal lines for the burst', () => refusedLines().length < 5, 300);
    const lines = refusedLines();
    const logged = lines.length + lines.reduce((n, l) => n + Number(l.refusals_not_logged ?? 0), 0);
    expect(logged).toBeLessThanOrEqual(burst + 1);
  });
});

describe('behind a proxy (TRUST_PROXY_HOPS=1)', () => {
  let system: RunningSystem;
  beforeAll(async () => {
    system = await startSystem({ env: { TOKEN_FAILURES_PER_ADDRESS: '2', TRUST_PROXY_HOPS: '1' } });
  });

  test('the client address is the one the proxy appended to X-Forwarded-For; clients are counted apart', async () => {
    const from = (ip: string) => ({ 'X-Forwarded-For': `203.0.113.9, ${ip}` });
    for (let i = 0; i < 2; i++) expect((await exchange(system, strangerKey(), from('198.51.100.1'))).status).toBe(401);
    expectThrottled(await exchange(system, strangerKey(), from('198.51.100.1')));
    // Another client behind the same proxy is still answered normally.
    expect((await exchange(system, strangerKey(), from('198.51.100.2'))).status).toBe(401);
  });
});
