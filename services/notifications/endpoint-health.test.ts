import { BREAKER_MAX_OPEN_S, breakerOpenSeconds, breakerWaitLimitSeconds, endpointAllowance, parseRetryAfter, RETRY_AFTER_MAX_S, scheduleSpanSeconds } from './endpoint-health';

const DEFAULT_SCHEDULE = [30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 28800];

describe('Retry-After', () => {
  const now = Date.parse('2026-11-24T10:00:00Z');
  test('delay-seconds, capped at an hour', () => {
    expect(parseRetryAfter('30', now)).toBe(30);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('86400', now)).toBe(RETRY_AFTER_MAX_S);
    expect(RETRY_AFTER_MAX_S).toBe(3600);
  });
  test('an HTTP-date: seconds until then, a past date is now, capped', () => {
    expect(parseRetryAfter('Tue, 24 Nov 2026 10:00:45 GMT', now)).toBe(45);
    expect(parseRetryAfter('Tue, 24 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('Wed, 25 Nov 2026 10:00:00 GMT', now)).toBe(RETRY_AFTER_MAX_S);
  });
  test('absent or malformed: ignored', () => {
    for (const bad of [undefined, '', '-5', '1.5', 'soon', '2026-11-24T10:00:45Z', 'in 5 minutes']) expect(parseRetryAfter(bad, now)).toBeUndefined();
  });
});

describe('breaker open interval', () => {
  test('starts at the first delay, doubles per failed probe, capped at 5 minutes', () => {
    expect([0, 1, 2, 3, 4, 5, 50].map((n) => breakerOpenSeconds(n, DEFAULT_SCHEDULE))).toEqual([30, 60, 120, 240, 300, 300, 300]);
    expect(BREAKER_MAX_OPEN_S).toBe(300);
  });
  test("never longer than the schedule's longest delay (short test schedules)", () => {
    expect([0, 1, 5].map((n) => breakerOpenSeconds(n, [1, 1, 1]))).toEqual([1, 1, 1]);
    expect([0, 1, 2, 3].map((n) => breakerOpenSeconds(n, [1, 2, 2]))).toEqual([1, 2, 2, 2]);
  });
  test("a delivery waits behind an open breaker at most the schedule's span and one longest open interval", () => {
    expect(scheduleSpanSeconds(DEFAULT_SCHEDULE)).toBe(85710); // about 23.8 h
    expect(breakerWaitLimitSeconds(DEFAULT_SCHEDULE)).toBe(85710 + 300);
    expect(breakerWaitLimitSeconds([1, 1, 1])).toBe(303);
  });
});

describe('what the claim gives an endpoint', () => {
  const now = new Date('2026-11-24T10:00:00Z');
  const later = new Date(now.getTime() + 5000);
  const earlier = new Date(now.getTime() - 5000);
  const clean = { breaker: 'closed' as const, consecutiveFailures: 0, notBefore: null };
  test('healthy: up to the per-endpoint bound, less what is in flight here', () => {
    expect(endpointAllowance(clean, 0, 8, now)).toEqual({ mode: 'normal', allowance: 8 });
    expect(endpointAllowance(clean, 6, 8, now)).toEqual({ mode: 'normal', allowance: 2 });
    expect(endpointAllowance(clean, 8, 8, now)).toEqual({ mode: 'normal', allowance: 0 });
  });
  test('failing (breaker still closed): one at a time', () => {
    expect(endpointAllowance({ ...clean, consecutiveFailures: 2 }, 0, 8, now)).toEqual({ mode: 'normal', allowance: 1 });
    expect(endpointAllowance({ ...clean, consecutiveFailures: 2 }, 1, 8, now)).toEqual({ mode: 'normal', allowance: 0 });
  });
  test('Retry-After hold: nothing until not_before', () => {
    expect(endpointAllowance({ ...clean, consecutiveFailures: 1, notBefore: later }, 0, 8, now)).toEqual({ mode: 'held', allowance: 0 });
    expect(endpointAllowance({ ...clean, consecutiveFailures: 1, notBefore: earlier }, 0, 8, now)).toEqual({ mode: 'normal', allowance: 1 });
  });
  test('open: nothing until due, then exactly one probe; half-open: nothing unless the probe was lost', () => {
    expect(endpointAllowance({ breaker: 'open', consecutiveFailures: 5, notBefore: later }, 0, 8, now)).toEqual({ mode: 'held', allowance: 0 });
    expect(endpointAllowance({ breaker: 'open', consecutiveFailures: 5, notBefore: earlier }, 0, 8, now)).toEqual({ mode: 'probe', allowance: 1 });
    expect(endpointAllowance({ breaker: 'open', consecutiveFailures: 5, notBefore: earlier }, 1, 8, now)).toEqual({ mode: 'held', allowance: 0 });
    expect(endpointAllowance({ breaker: 'half_open', consecutiveFailures: 5, notBefore: earlier }, 0, 8, now)).toEqual({ mode: 'held', allowance: 0 });
    expect(endpointAllowance({ breaker: 'half_open', consecutiveFailures: 5, notBefore: earlier, probeExpired: true }, 0, 8, now)).toEqual({ mode: 'probe', allowance: 1 });
  });
});
