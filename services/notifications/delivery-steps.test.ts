import { randomBytes, randomUUID } from 'node:crypto';
import { createLogger } from '../kit/base';
import type { ClaimedRow } from './delivery-claim';
import type { OutcomeWrite } from './delivery-outcomes';
import {
  handleFailedDispatch,
  handleSuccessfulDispatch,
  makeHttpCall,
  prepareDispatch,
  recordEndpointHealth,
  type HealthRecorder,
  type OutcomeWriter,
  type Prepared,
} from './delivery-steps';
import { notificationsMetrics } from './metrics';
import { mintSigningSecret, SecretBox } from './secret-box';
import { sign } from './signature';
import type { PostResult, WebhookPoster } from './webhook-poster';

const SCHEDULE = [30, 60, 120];
const WS = '00000000-0000-4000-8000-0000000000a1';

function capture() {
  const lines: Record<string, any>[] = [];
  const log = createLogger({ level: 'debug', name: 'test' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { log, lines };
}

function claimed(over: Partial<ClaimedRow> = {}): ClaimedRow {
  return {
    id: '1',
    workspace_id: WS,
    event_id: randomUUID(),
    event_type: 'booking.confirmed',
    body: '{"type":"booking.confirmed"}',
    attempts: 0,
    url: 'https://partner.example/hooks',
    status: 'active',
    events: ['booking.confirmed', 'booking.cancelled'],
    secret_ciphertext: null,
    previous_secret_ciphertext: null,
    previous_valid: null,
    traceparent: null,
    mode: 'normal',
    slow_lane: false,
    health_dirty: false,
    room_used: false,
    behind: false,
    ...over,
  };
}

/** An OutcomeWriter recording what it was asked; `held: false` answers as if the lease ran out. */
function writer(held = true) {
  const writes: OutcomeWrite[] = [];
  const abandoned: unknown[] = [];
  const counted: [string, number][] = [];
  const next = new Date('2030-01-01T00:00:00Z');
  const out: OutcomeWriter = {
    writeOutcome: async (w) => (writes.push(w), held ? { next_attempt_at: w.delivered ? null : next } : null),
    abandon: async (a) => (abandoned.push(a), held ? { workspace_id: WS } : undefined),
    countAbandoned: async (ws, n) => void counted.push([ws, n]),
  };
  return { out, writes, abandoned, counted, next };
}

const timing = { startedAt: new Date('2030-01-01T00:00:00Z'), durationMs: 12 };

afterEach(() => jest.restoreAllMocks());

describe('prepareDispatch', () => {
  const box = new SecretBox(randomBytes(32));
  const secret = mintSigningSecret();

  test('an endpoint not active, not subscribed to the kind or without a URL: skipped, the attempt counts', () => {
    for (const over of [{ status: 'paused' }, { status: 'suspended' }, { events: ['booking.cancelled'] }, { events: null }, { url: null }, { status: null }]) {
      expect(prepareDispatch(claimed(over), box)).toEqual({ kind: 'skip', outcome: { delivered: false, status: null, error: 'endpoint_not_active', skipped: true } });
    }
  });

  test('sends the body to the URL, signed with the current secret (and the previous one while its overlap is open)', () => {
    const previous = mintSigningSecret();
    const row = claimed({ secret_ciphertext: box.seal(secret, WS), previous_secret_ciphertext: box.seal(previous, WS), previous_valid: true });
    const p = prepareDispatch(row, box) as Extract<Prepared, { kind: 'send' }>;
    expect(p).toMatchObject({ kind: 'send', url: row.url, body: row.body });
    const ts = Number(p.headers['X-Signature-Timestamp']);
    expect(p.headers['X-Signature']).toBe(sign(secret, ts, row.body));
    expect(p.headers['X-Signature-Previous']).toBe(sign(previous, ts, row.body));
    expect(p.headers).toMatchObject({ 'Content-Type': 'application/json', 'User-Agent': 'PartnerSync-Webhooks/1' });
    const closed = prepareDispatch({ ...row, previous_valid: false }, box) as Extract<Prepared, { kind: 'send' }>;
    expect(closed.headers['X-Signature-Previous']).toBeUndefined();
  });

  test('a secret that cannot be opened, or no key at all: postponed, no attempt spent', () => {
    const row = claimed({ secret_ciphertext: new SecretBox(randomBytes(32)).seal(secret, WS) });
    expect(prepareDispatch(row, box)).toMatchObject({ kind: 'postpone' });
    expect(prepareDispatch(claimed({ secret_ciphertext: box.seal(secret, WS) }), undefined)).toMatchObject({ kind: 'postpone' });
  });
});

describe('makeHttpCall', () => {
  const req = { kind: 'send' as const, url: 'https://partner.example/hooks', body: '{}', headers: { 'X-Signature': 'x' } };
  const poster = (res: PostResult, onPost?: () => void): WebhookPoster => ({
    vet: async () => true,
    close: () => 0,
    post: async () => (onPost?.(), res),
  });

  test('an answer is classified, timed and observed', async () => {
    const observe = jest.spyOn(notificationsMetrics, 'observe');
    const r = await makeHttpCall(poster({ status: 503, body: Buffer.alloc(0), retryAfter: '7' }), req, WS, new AbortController().signal, () => false);
    expect(r).toMatchObject({ kind: 'answered', outcome: { delivered: false, status: 503, error: 'http_status', retryAfterS: 7 } });
    if (r.kind !== 'answered') throw new Error('unreachable');
    expect(r.timing.durationMs).toBeGreaterThanOrEqual(0);
    expect(observe).toHaveBeenCalledWith('attempt_seconds', expect.any(Number), { outcome: 'http_status' });
    const ok = await makeHttpCall(poster({ status: 204, body: Buffer.alloc(0) }), req, WS, new AbortController().signal, () => false);
    expect(ok).toMatchObject({ kind: 'answered', outcome: { delivered: true, status: 204 } });
    expect(observe).toHaveBeenLastCalledWith('attempt_seconds', expect.any(Number), { outcome: 'delivered' });
  });

  test('aborted by shutdown: no outcome, nothing observed; an abort outside shutdown is an ordinary failure', async () => {
    const observe = jest.spyOn(notificationsMetrics, 'observe');
    const ac = new AbortController();
    const aborting = poster({ error: 'aborted' }, () => ac.abort());
    expect(await makeHttpCall(aborting, req, WS, ac.signal, () => true)).toEqual({ kind: 'aborted' });
    expect(observe).not.toHaveBeenCalled();
    const ac2 = new AbortController();
    const r = await makeHttpCall(
      poster({ error: 'aborted' }, () => ac2.abort()),
      req,
      WS,
      ac2.signal,
      () => false,
    );
    expect(r).toMatchObject({ kind: 'answered', outcome: { delivered: false, error: 'aborted' } });
  });
});

describe('recordEndpointHealth', () => {
  function health(over: Partial<HealthRecorder> = {}) {
    const calls: string[] = [];
    const h: HealthRecorder = {
      success: async () => (calls.push('success'), 'open'),
      failure: async () => (calls.push('failure'), { breaker: 'open', consecutiveFailures: 5, opened: true, notBefore: null }),
      suspendGone: async () => void calls.push('suspendGone'),
      ...over,
    };
    return { h, calls };
  }

  test('a 2xx resets the endpoint only when there is something to reset (or it was the probe)', async () => {
    const { log, lines } = capture();
    const inc = jest.spyOn(notificationsMetrics, 'inc');
    const clean = health();
    await recordEndpointHealth(clean.h, log, claimed(), 't', { delivered: true, status: 200 });
    expect(clean.calls).toEqual([]);
    const dirty = health();
    await recordEndpointHealth(dirty.h, log, claimed({ mode: 'probe' }), 't', { delivered: true, status: 200 });
    expect(dirty.calls).toEqual(['success']);
    expect(inc).toHaveBeenCalledWith('breaker_closed');
    expect(lines.at(-1)?.event).toBe('webhook.endpoint.circuit_closed');
  });

  test('a failure counts towards the breaker; Retry-After and an opening are counted and logged; 410 suspends', async () => {
    const { log, lines } = capture();
    const inc = jest.spyOn(notificationsMetrics, 'inc');
    let probeToken: string | undefined = 'unset';
    const { h, calls } = health({
      failure: async (f) => {
        probeToken = f.probeToken;
        calls.push('failure');
        return { breaker: 'open', consecutiveFailures: 5, opened: true, notBefore: null };
      },
    });
    await recordEndpointHealth(h, log, claimed({ mode: 'probe' }), 'tok', { delivered: false, status: 410, error: 'http_status', retryAfterS: 5 });
    expect(probeToken).toBe('tok');
    expect(calls).toEqual(['failure', 'suspendGone']);
    expect(inc.mock.calls.map((c) => c[0])).toEqual(['retry_after_honoured', 'breaker_opened']);
    expect(lines.map((l) => l.level)).toEqual(['info', 'warn']);
  });

  test('never throws: a failing statement is logged and the outcome goes on', async () => {
    const { log, lines } = capture();
    const { h } = health({ failure: () => Promise.reject(new Error('db down')) });
    await expect(recordEndpointHealth(h, log, claimed(), 't', { delivered: false, status: 500, error: 'http_status' })).resolves.toBeUndefined();
    expect(lines.at(-1)?.event).toBe('webhook.endpoint.health_failed');
  });
});

describe('handleSuccessfulDispatch', () => {
  test('writes the delivery under the lease, counts it', async () => {
    const { log, lines } = capture();
    const inc = jest.spyOn(notificationsMetrics, 'inc');
    const w = writer();
    const r = await handleSuccessfulDispatch(w.out, log, claimed({ attempts: 2 }), 'tok', { delivered: true, status: 200 }, timing);
    expect(r).toEqual({ kind: 'delivered' });
    expect(w.writes).toEqual([{ id: '1', token: 'tok', attempts: 3, delivered: true, status: 200, error: null, delayS: 0, attempt: timing }]);
    expect(inc).toHaveBeenCalledWith('delivered', { event_type: 'booking.confirmed' });
    expect(lines.at(-1)).toMatchObject({ event: 'webhook.delivery.delivered', attempts: 3, status: 200 });
  });

  test('a lease lost meanwhile: nothing counted, a warning', async () => {
    const { log, lines } = capture();
    const inc = jest.spyOn(notificationsMetrics, 'inc');
    expect(await handleSuccessfulDispatch(writer(false).out, log, claimed(), 'tok', { delivered: true, status: 200 }, timing)).toEqual({ kind: 'lease_lost' });
    expect(inc).not.toHaveBeenCalled();
    expect(lines.at(-1)?.event).toBe('webhook.delivery.lease_expired');
  });
});

describe('handleFailedDispatch', () => {
  const failure = { delivered: false as const, status: 500, error: 'http_status' };

  test('attempt k of the schedule schedules the next one dk seconds on, no earlier than a Retry-After', async () => {
    const { log } = capture();
    const inc = jest.spyOn(notificationsMetrics, 'inc');
    const w = writer();
    expect(await handleFailedDispatch(w.out, log, SCHEDULE, claimed({ attempts: 1 }), 'tok', failure, timing)).toEqual({ kind: 'retry_scheduled', nextAttemptAt: w.next });
    await handleFailedDispatch(w.out, log, SCHEDULE, claimed({ attempts: 0 }), 'tok', { ...failure, status: 429, retryAfterS: 90 }, timing);
    expect(w.writes.map((x) => [x.attempts, x.delayS, x.delivered])).toEqual([
      [2, 60, false],
      [1, 90, false],
    ]);
    expect(inc).toHaveBeenCalledWith('failed_attempts', { event_type: 'booking.confirmed', error: 'http_status' });
  });

  test('the attempt after the last delay abandons the delivery and counts towards suspension', async () => {
    const { log, lines } = capture();
    const inc = jest.spyOn(notificationsMetrics, 'inc');
    const w = writer();
    expect(await handleFailedDispatch(w.out, log, SCHEDULE, claimed({ attempts: 3 }), 'tok', failure, timing)).toEqual({ kind: 'abandoned' });
    expect(w.writes).toEqual([]);
    expect(w.abandoned).toEqual([{ id: '1', token: 'tok', attempts: 4, status: 500, error: 'http_status', attempt: timing }]);
    expect(w.counted).toEqual([[WS, 1]]);
    expect(inc).toHaveBeenCalledWith('abandoned', { event_type: 'booking.confirmed' });
    expect(lines.at(-1)).toMatchObject({ level: 'warn', event: 'webhook.delivery.abandoned' });
  });

  test('a skipped attempt (endpoint not active) is not a failed attempt and does not count towards suspension', async () => {
    const { log } = capture();
    const inc = jest.spyOn(notificationsMetrics, 'inc');
    const w = writer();
    const skipped = { delivered: false as const, status: null, error: 'endpoint_not_active', skipped: true };
    expect(await handleFailedDispatch(w.out, log, SCHEDULE, claimed({ attempts: 3 }), 'tok', skipped, timing)).toEqual({ kind: 'abandoned' });
    expect(w.counted).toEqual([]);
    expect(inc.mock.calls.map((c) => c[0])).toEqual(['abandoned']);
  });

  test('a lease lost meanwhile: nothing more written', async () => {
    const { log } = capture();
    const w = writer(false);
    expect(await handleFailedDispatch(w.out, log, SCHEDULE, claimed({ attempts: 3 }), 'tok', failure, timing)).toEqual({ kind: 'lease_lost' });
    expect(w.counted).toEqual([]);
  });
});
