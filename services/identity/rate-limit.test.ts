import { RATE_WINDOW_SECONDS } from '../kit/base';
import { secondsLeftInWindow } from '../domain';
import { rateLimitState } from './rate-limit';

const HOUR = 1_800_000_000; // a multiple of 3600: the start of an epoch-aligned window
const base = { limit: 600, previous: 0 };

describe('rate-limit arithmetic', () => {
  test('windows are 3600 s aligned to the Unix epoch', () => {
    expect(HOUR % 3600).toBe(0);
    expect(RATE_WINDOW_SECONDS).toBe(3600);
    expect(secondsLeftInWindow(HOUR + 3599.9)).toBe(1);
    expect(secondsLeftInWindow(HOUR + 3600)).toBe(3600);
  });

  test('reset is the seconds left in the window, 1..3600', () => {
    expect(secondsLeftInWindow(HOUR)).toBe(3600);
    expect(secondsLeftInWindow(HOUR + 0.2)).toBe(3600);
    expect(secondsLeftInWindow(HOUR + 1)).toBe(3599);
    expect(secondsLeftInWindow(HOUR + 3599)).toBe(1);
    expect(secondsLeftInWindow(HOUR + 3599.999)).toBe(1);
  });

  test("a fresh key's first counted request leaves 599", () => {
    expect(rateLimitState({ ...base, counting: true, counted: 1, nowEpochSeconds: HOUR + 600 })).toEqual({
      limit: 600,
      windowSeconds: 3600,
      remaining: 599,
      resetSeconds: 3000,
      limited: false,
      retryAfterSeconds: 0,
    });
  });

  test('the 600th request is allowed with 0 left; then limited with retry after the reset', () => {
    expect(rateLimitState({ ...base, counting: true, counted: 600, previous: 599, nowEpochSeconds: HOUR + 10 })).toMatchObject({
      remaining: 0,
      limited: false,
      retryAfterSeconds: 0,
    });
    expect(rateLimitState({ ...base, counting: true, counted: null, previous: 600, nowEpochSeconds: HOUR + 10 })).toEqual({
      limit: 600,
      windowSeconds: 3600,
      remaining: 0,
      resetSeconds: 3590,
      limited: true,
      retryAfterSeconds: 3590,
    });
  });

  test('peeking reports the current state without counting', () => {
    expect(rateLimitState({ ...base, counting: false, counted: null, previous: 0, nowEpochSeconds: HOUR })).toMatchObject({
      remaining: 600,
      limited: false,
    });
    expect(rateLimitState({ ...base, counting: false, counted: null, previous: 42, nowEpochSeconds: HOUR })).toMatchObject({
      remaining: 558,
      limited: false,
    });
    expect(rateLimitState({ ...base, counting: false, counted: null, previous: 600, nowEpochSeconds: HOUR + 3000 })).toMatchObject({
      remaining: 0,
      limited: true,
      retryAfterSeconds: 600,
    });
  });

  test('a limit lowered below an existing count never goes negative', () => {
    expect(rateLimitState({ limit: 5, counting: false, counted: null, previous: 9, nowEpochSeconds: HOUR })).toMatchObject({
      remaining: 0,
      limited: true,
    });
  });
});
