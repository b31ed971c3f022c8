/**
 * Fuzzing the public API (docs/decisions.md "Hostile input"): at least 2,000 seeded
 * hostile requests across every public endpoint — NUL and lone surrogates in every
 * string, odd numbers, deep nesting, huge strings, wrong types, unknown fields,
 * prototype-pollution keys, odd dates and instants, broken UTF-8, truncated bodies,
 * wrong content types, hostile path and query parameters.
 *
 * Every answer: never a 5xx; a problem document whose `code` is in the spec's table
 * (or the token endpoint's `{message}` refusal); no submitted value echoed in a
 * refusal; and the system is healthy afterwards. FUZZ_SEED reruns a run exactly.
 */
import { fuzzSeed, hostileString, mutate, rawBody, Rng, canary } from '../support/fuzz';
import { backends, jsonLogs, startSystem, stopAllSystems, type RunningSystem } from '../support/system';
import { validBlock, validEndpoint, validProperty } from './fixtures';
import { send, type Received, type SentRequest } from './http-client';
import { Partners, type Partner } from './partners';

/** The spec's codes with their statuses, plus the additive not_found / method_not_allowed and the sandbox tools' codes. */
const CODES: Record<string, number> = {
  validation_failed: 400,
  unauthorized: 401,
  workspace_scope_mismatch: 403,
  property_not_found: 404,
  deletion_request_not_found: 404,
  delivery_not_found: 404,
  webhook_endpoint_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  webhook_endpoint_not_active: 409,
  delivery_not_resendable: 409,
  rate_limited: 429,
  not_enabled: 501,
};

const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 2000);
const { seed, chosen } = fuzzSeed();

afterAll(() => stopAllSystems());

/** What an HTTP client can put in a header value (others are refused before sending). */
function headerSafe(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?');
}

/** Every byte of the UTF-8 form percent-encoded (a lone surrogate becomes U+FFFD's bytes, as a browser sends it). */
function percentEncoded(text: string): string {
  return [...Buffer.from(text, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
}

describe(`public API fuzz (seed ${seed}${chosen ? ', random: rerun with FUZZ_SEED' : ''}; database: ${backends.database}, bus: ${backends.bus})`, () => {
  let system: RunningSystem;
  let partners: Partners;
  let sandbox: Partner;
  let listingId: string;

  beforeAll(async () => {
    if (chosen) process.stdout.write(`public API fuzz: FUZZ_SEED=${seed}\n`);
    system = await startSystem({
      env: { RATE_LIMIT_PER_HOUR: '1000000', TOKEN_RATE_LIMIT_PER_HOUR: '1000000', TOKEN_FAILURES_PER_ADDRESS: '1000000', TOKEN_FAILURES_PER_KEY: '1000000' },
    });
    partners = new Partners(system);
    sandbox = await partners.partner('sandbox');
    const put = await send(system.gatewayUrl, {
      method: 'PUT',
      path: '/v1/properties/fuzz-home',
      headers: { ...sandbox.auth, 'Content-Type': 'application/json' },
      body: JSON.stringify(validProperty()),
    });
    expect(put.status).toBe(200);
    listingId = put.json.listing_id;
  });
  afterAll(() => partners?.close());

  /** One hostile request, number `n`. */
  function hostileRequest(rng: Rng, n: number): SentRequest {
    const mark = canary(n);
    const seg = () =>
      rng.chance(0.5) ? percentEncoded(hostileString(rng, mark).slice(0, 300)) : rng.pick(['%00', '%ff', '%', '%2F', '%ED%A0%80', 'a'.repeat(2000), '..', `${mark}%00`]);
    const auth: Record<string, string> = rng.chance(0.93)
      ? sandbox.auth
      : rng.pick<Record<string, string>>([{}, { Authorization: 'Bearer' }, { Authorization: `Bearer ${mark}` }, { Authorization: `Basic ${mark}` }]);
    const json = (body: Record<string, unknown>): Pick<SentRequest, 'headers' | 'body'> => {
      const valid = JSON.stringify(body);
      const choice = rng.int(10);
      const contentType = choice === 9 ? rng.pick(['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', '']) : 'application/json';
      const payload = choice >= 7 ? rawBody(rng, valid, mark) : JSON.stringify(mutate(rng, body, mark));
      return { headers: { ...auth, ...(contentType ? { 'Content-Type': contentType } : {}) }, body: payload };
    };
    const block = { ...validBlock(), listing_id: listingId };
    switch (rng.int(12)) {
      case 0:
        return { method: 'PUT', path: `/v1/properties/${rng.chance(0.6) ? seg() : 'fuzz-home'}`, ...json(validProperty()) };
      case 1:
        return { method: 'PUT', path: '/v1/properties/fuzz-home', ...json(validProperty()) };
      case 2:
        return { method: 'PUT', path: `/v1/blocks/${rng.chance(0.5) ? seg() : `fuzz-${n}`}`, ...json(block) };
      case 3:
        return { method: 'DELETE', path: `/v1/blocks/${seg()}`, headers: auth };
      case 4: {
        const params = ['from', 'to', 'page', 'page_size', 'listing_id', rng.pick(['unknown', '__proto__', 'constructor'])];
        const q = Array.from({ length: 1 + rng.int(4) }, () => `${rng.pick(params)}=${seg()}`).join('&');
        return { method: 'GET', path: `/v1/blocks?${q}`, headers: auth };
      }
      case 5:
        return { method: 'PUT', path: '/v1/webhooks/endpoint', ...json(validEndpoint()) };
      case 6:
        return {
          method: 'POST',
          path: `/v1/deletion-requests/${rng.chance(0.7) ? seg() : '00000000-0000-4000-8000-000000000000'}/acknowledge`,
          ...json({ completed_at: rng.pick(['2026-01-01T00:00:00Z', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59-23:59', '0001-01-01T00:30:00+01:00']) }),
        };
      case 9:
        return {
          method: 'POST',
          path: '/v1/sandbox/events',
          ...json({ event_type: rng.pick(['booking.confirmed', 'booking.cancelled', 'user.erased']), listing_id: listingId, check_in: '2031-01-01', check_out: '2031-01-03' }),
        };
      case 10: {
        const params = ['state', 'event_type', 'page', 'page_size', rng.pick(['unknown', '__proto__', 'constructor'])];
        const q = Array.from({ length: 1 + rng.int(4) }, () => `${rng.pick(params)}=${seg()}`).join('&');
        return { method: 'GET', path: `/v1/webhooks/deliveries?${q}`, headers: auth };
      }
      case 11:
        return {
          method: rng.pick(['GET', 'POST']),
          path: `/v1/webhooks/deliveries/${rng.chance(0.7) ? seg() : '00000000-0000-4000-8000-000000000000'}${rng.chance(0.5) ? '/resend' : ''}`,
          headers: auth,
        };
      case 7:
        return {
          method: 'POST',
          path: '/v1/token',
          headers: rng.chance(0.5) ? { Authorization: `Bearer ${headerSafe(hostileString(rng, mark).slice(0, 200))}` } : {},
          body: rawBody(rng, '{}', mark),
        };
      default:
        return {
          method: rng.pick(['PATCH', 'POST', 'GET', 'OPTIONS', 'TRACE']),
          path: rng.pick(['/v1/properties/x', `/v1/${seg()}`, '/v1/blocks/x/y', '/v2/blocks', '/v1//blocks']),
          headers: auth,
        };
    }
  }

  /** What was wrong with an answer, or undefined. */
  function problemWith(req: SentRequest, res: Received, n: number): string | undefined {
    if (res.status >= 500) return `${res.status} ${res.text.slice(0, 200)}`;
    if (res.status < 400) return undefined;
    const at = res.text.indexOf(canary(n));
    if (at >= 0) return `echoed the submitted value: …${res.text.slice(Math.max(0, at - 120), at + 40)}`;
    if (req.path === '/v1/token' && (res.status === 401 || res.status === 429) && res.json && typeof res.json.message === 'string' && Object.keys(res.json).length === 1) {
      return undefined;
    }
    if (!String(res.headers['content-type']).startsWith('application/problem+json')) return `not a problem document: ${res.headers['content-type']}`;
    const code = res.json?.code as string | undefined;
    if (!code || CODES[code] === undefined) return `code ${code} not in the spec's table`;
    if (CODES[code] !== res.status) return `code ${code} with status ${res.status}`;
    if (res.json.status !== res.status) return `problem status ${res.json.status} ≠ ${res.status}`;
    if (code === 'validation_failed' && !Array.isArray(res.json.errors)) return 'validation_failed without errors[]';
    if (code !== 'unauthorized' && req.headers && 'Authorization' in req.headers && !res.headers['ratelimit-limit']) return 'no RateLimit-* headers';
    return undefined;
  }

  test(`${REQUESTS} hostile requests: no 5xx, every refusal a problem document with a published code, nothing echoed`, async () => {
    const rng = new Rng(seed);
    const failures: string[] = [];
    const statuses: Record<number, number> = {};
    const concurrency = 8;
    let next = 0;
    const worker = async () => {
      for (let n = next++; n < REQUESTS; n = next++) {
        const req = hostileRequest(rng, n);
        let res: Received;
        try {
          res = await send(system.gatewayUrl, req);
        } catch (err) {
          failures.push(`#${n} ${req.method} ${req.path.slice(0, 80)}: connection failed (${(err as Error).message})`);
          continue;
        }
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        const problem = problemWith(req, res, n);
        if (problem) failures.push(`#${n} ${req.method} ${req.path.slice(0, 80)}: ${problem}`);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    // The system's own account of any fault, to fix it from the test output alone.
    const faults = failures.length
      ? jsonLogs(system.logs())
          .filter((l) => Number(l.level) >= 50)
          .slice(0, 5)
          .map((l) => JSON.stringify(l).slice(0, 600))
      : [];
    expect({ seed, failures: failures.slice(0, 20), failed: failures.length, faults }).toEqual({ seed, failures: [], failed: 0, faults: [] });
    // The run exercised refusals and successes alike.
    expect(Object.keys(statuses).length).toBeGreaterThan(3);
  }, 300_000);

  test('the system is healthy afterwards: ready, and a valid request still works', async () => {
    expect((await send(system.gatewayUrl, { path: '/readyz' })).status).toBe(200);
    const res = await send(system.gatewayUrl, {
      method: 'PUT',
      path: '/v1/properties/after-fuzz',
      headers: { ...sandbox.auth, 'Content-Type': 'application/json' },
      body: JSON.stringify(validProperty()),
    });
    expect(res.status).toBe(200);
    // Prototype pollution would show on every object of the process; this one is ours.
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
