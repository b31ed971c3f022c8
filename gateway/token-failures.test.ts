import { FailureCounter, presentedKeyId } from './token-failures';

describe('FailureCounter', () => {
  test('refuses after `limit` failures until the window ends', () => {
    const c = new FailureCounter(3, 60_000);
    const t0 = 1_000_000;
    for (let i = 0; i < 3; i++) {
      expect(c.retryAfterSeconds('a', t0)).toBe(0);
      c.fail('a', t0);
    }
    expect(c.retryAfterSeconds('a', t0 + 1000)).toBe(59);
    expect(c.retryAfterSeconds('b', t0 + 1000)).toBe(0);
    expect(c.retryAfterSeconds('a', t0 + 60_000)).toBe(0);
    c.fail('a', t0 + 60_000);
    expect(c.retryAfterSeconds('a', t0 + 60_001)).toBe(0);
  });

  test('holds at most maxEntries keys, dropping the oldest', () => {
    const c = new FailureCounter(1, 60_000, 100);
    for (let i = 0; i < 1000; i++) c.fail(`k${i}`, 0);
    expect(c.size).toBe(100);
    expect(c.retryAfterSeconds('k999', 1)).toBe(60);
    expect(c.retryAfterSeconds('k0', 1)).toBe(0);
  });
});

test('presentedKeyId reads the public part of a key-shaped credential only', () => {
  expect(presentedKeyId(`psk_abcdefghijklmnop_${'x'.repeat(43)}`)).toBe('abcdefghijklmnop');
  expect(presentedKeyId('pst_whatever')).toBeUndefined();
  expect(presentedKeyId(undefined)).toBeUndefined();
});
