import { randomBytes, randomUUID } from 'node:crypto';
import { mintSigningSecret, SecretBox, SecretDecryptionError } from './secret-box';

describe('signing secrets', () => {
  test('minted with 256 bits of randomness, whsec_ + 43 base64url characters, never twice the same', () => {
    const a = mintSigningSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(a.slice(6), 'base64url')).toHaveLength(32);
    expect(new Set(Array.from({ length: 100 }, mintSigningSecret)).size).toBe(100);
  });

  test('sealed: the ciphertext does not contain the secret and opens only for its workspace and key', () => {
    const box = new SecretBox(randomBytes(32));
    const ws = randomUUID();
    const secret = mintSigningSecret();
    const sealed = box.seal(secret, ws);
    expect(sealed.toString('latin1')).not.toContain(secret.slice(6));
    expect(box.seal(secret, ws).equals(sealed)).toBe(false); // fresh IV every time
    expect(box.open(sealed, ws)).toBe(secret);
    expect(() => box.open(sealed, randomUUID())).toThrow(SecretDecryptionError);
    expect(() => new SecretBox(randomBytes(32)).open(sealed, ws)).toThrow(/another SECRETS_ENCRYPTION_KEY/);
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 1]! ^= 1;
    expect(() => box.open(tampered, ws)).toThrow(SecretDecryptionError);
    expect(() => new SecretBox(randomBytes(16))).toThrow();
  });
});

describe('SECRETS_ENCRYPTION_KEY_PREVIOUS', () => {
  test('open falls back to the previous key; seal uses the current one; resealIfPrevious moves old ciphertexts', () => {
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const ws = randomUUID();
    const secret = mintSigningSecret();
    const underOld = new SecretBox(oldKey).seal(secret, ws);
    const rotating = new SecretBox(newKey, oldKey);
    expect(rotating.rotating).toBe(true);
    expect(rotating.open(underOld, ws)).toBe(secret);
    expect(() => rotating.open(underOld, randomUUID())).toThrow(SecretDecryptionError);
    const resealed = rotating.resealIfPrevious(underOld, ws)!;
    expect(new SecretBox(newKey).open(resealed, ws)).toBe(secret);
    expect(() => new SecretBox(oldKey).open(rotating.seal(secret, ws), ws)).toThrow(SecretDecryptionError);
    expect(rotating.resealIfPrevious(resealed, ws)).toBeUndefined();
    const unrelated = new SecretBox(randomBytes(32)).seal(secret, ws);
    expect(() => rotating.open(unrelated, ws)).toThrow(/another SECRETS_ENCRYPTION_KEY/);
    expect(() => rotating.resealIfPrevious(unrelated, ws)).toThrow(SecretDecryptionError);
    expect(new SecretBox(newKey).rotating).toBe(false);
  });
});
