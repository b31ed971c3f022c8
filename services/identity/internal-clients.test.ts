import { createHash } from 'node:crypto';
import { CLIENT_TOKEN_SHAPE } from '../kit/rpc';
import { hashClientToken, mintClientToken } from './internal-clients';

describe('marketplace client tokens', () => {
  test('shape: psmc_<16 base32>_<43 base64url>', () => {
    const t = mintClientToken();
    expect(t.token).toMatch(new RegExp(`^psmc_${t.clientId}_[A-Za-z0-9_-]{43}$`));
    expect(t.clientId).toMatch(/^[a-z2-7]{16}$/);
    expect(t.token).toMatch(CLIENT_TOKEN_SHAPE);
    expect(Buffer.from(t.token.slice(-43), 'base64url')).toHaveLength(32);
  });

  test('the stored hash is SHA-256 of the whole token text, as a server computes it from what it received', () => {
    const t = mintClientToken();
    expect(t.tokenSha256.equals(createHash('sha256').update(Buffer.from(t.token, 'utf8')).digest())).toBe(true);
    expect(hashClientToken(t.token).equals(t.tokenSha256)).toBe(true);
  });

  test('fresh ids and secrets every time', () => {
    const many = Array.from({ length: 200 }, () => mintClientToken());
    expect(new Set(many.map((t) => t.clientId)).size).toBe(200);
    expect(new Set(many.map((t) => t.token)).size).toBe(200);
  });
});
