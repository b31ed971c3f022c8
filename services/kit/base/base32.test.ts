import { base32 } from './base32';

describe('base32', () => {
  test('is RFC 4648 lower-case without padding', () => {
    expect(base32(Buffer.from('foobar'))).toBe('mzxw6ytboi');
    expect(base32(Buffer.from('f'))).toBe('my');
    expect(base32(Buffer.alloc(10))).toBe('a'.repeat(16));
  });

  test('spells 15 bytes (a listing id) as exactly 24 characters', () => {
    expect(base32(Buffer.alloc(15, 0xff))).toBe('7'.repeat(24));
  });
});
