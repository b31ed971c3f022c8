import { BREAKER_MAX_OPEN_S, breakerOpenSeconds, breakerWaitLimitSeconds, parseRetryAfter, RETRY_AFTER_MAX_S, scheduleSpanSeconds } from './endpoint-health';

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
