import { createHash } from 'node:crypto';
import { hashSecret, mintApiKey, parseApiKey, secretMatches } from './api-keys';

describe('API keys', () => {
  test('shape: psk_<16 base32>_<43 base64url>, 64 characters', () => {
    const k = mintApiKey();
    expect(k.apiKey).toMatch(/^psk_[a-z2-7]{16}_[A-Za-z0-9_-]{43}$/);
    expect(k.apiKey).toHaveLength(64);
    expect(k.apiKey).toBe(`psk_${k.keyId}_${k.secret}`);
    expect(k.keyId).toMatch(/^[a-z2-7]{16}$/);
  });

  test('the secret carries 256 random bits', () => {
    const k = mintApiKey();
    expect(Buffer.from(k.secret, 'base64url')).toHaveLength(32);
    const many = new Set(Array.from({ length: 200 }, () => mintApiKey().secret));
    expect(many.size).toBe(200);
  });

  test('only the SHA-256 of the secret text is kept', () => {
    const k = mintApiKey();
    expect(k.secretHash.equals(createHash('sha256').update(k.secret).digest())).toBe(true);
    expect(hashSecret(k.secret).equals(k.secretHash)).toBe(true);
  });

  test('parse round-trips and refuses anything not exactly shaped', () => {
    const k = mintApiKey();
    expect(parseApiKey(k.apiKey)).toEqual({ keyId: k.keyId, secret: k.secret });
    for (const bad of [
      '',
      'psk_',
      k.apiKey.slice(0, -1),
      `${k.apiKey}x`,
      k.apiKey.toUpperCase(),
      `Bearer ${k.apiKey}`,
      ` ${k.apiKey}`.slice(0, 64),
      k.apiKey.replace('psk_', 'pst_'),
      `psk_${k.keyId.replace(/./, '1')}_${k.secret}`, // 1 is not base32
      `psk_${k.keyId}-${k.secret}`,
      `psk_${k.keyId}_${k.secret.slice(0, 42)}=`,
    ]) {
      expect(parseApiKey(bad)).toBeUndefined();
    }
  });

  test('a secret whose base64url contains "_" still parses (the separator is positional)', () => {
    const secret = `${'_'.repeat(10)}${'A'.repeat(33)}`;
    expect(parseApiKey(`psk_abcdefghijklmnop_${secret}`)).toEqual({ keyId: 'abcdefghijklmnop', secret });
  });

  test('secretMatches: right secret yes; wrong secret, unknown key (no hash) or odd hash no', () => {
    const k = mintApiKey();
    expect(secretMatches(k.secret, k.secretHash)).toBe(true);
    expect(secretMatches(mintApiKey().secret, k.secretHash)).toBe(false);
    expect(secretMatches(k.secret, undefined)).toBe(false);
    expect(secretMatches(k.secret, Buffer.alloc(5))).toBe(false);
  });
});
