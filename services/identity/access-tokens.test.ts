import { randomBytes } from 'node:crypto';
import { AccessTokens } from './access-tokens';
import { fakeClock } from '../../test/support/fake-clock';

const WS = '0b7c2f0e-4a4f-4c9e-9a43-3d1f2a6c9e11';
const T0 = Date.UTC(2030, 0, 1, 12, 0, 0, 400);

function decode(token: string): Record<string, unknown> {
  const payload = token.slice(4, token.indexOf('.'));
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
}

describe('access tokens', () => {
  const clock = fakeClock(T0);
  const tokens = new AccessTokens(randomBytes(32), undefined, clock);
  const issue = (ttlSeconds = 900) => tokens.issue({ kid: 'abcdefghijklmnop', ws: WS, env: 'sandbox', ttlSeconds });

  test('shape pst_<payload>.<mac> with the claims {v,kid,ws,env,iat,exp,jti}', () => {
    const { token, claims } = issue();
    expect(token).toMatch(/^pst_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(decode(token)).toEqual(claims);
    expect(Object.keys(claims).sort()).toEqual(['env', 'exp', 'iat', 'jti', 'kid', 'v', 'ws']);
    expect(claims).toMatchObject({ v: 1, kid: 'abcdefghijklmnop', ws: WS, env: 'sandbox', iat: Math.floor(T0 / 1000) });
    expect(claims.exp - claims.iat).toBe(900);
    expect(issue().claims.jti).not.toBe(claims.jti);
  });

  test('valid until exp (exclusive), then expired', async () => {
    const at = fakeClock(T0);
    const timed = new AccessTokens(randomBytes(32), undefined, at);
    const { token, claims } = timed.issue({ kid: 'abcdefghijklmnop', ws: WS, env: 'sandbox', ttlSeconds: 60 });
    expect(timed.verify(token)).toEqual({ ok: true, claims });
    await at.tick(claims.exp * 1000 - 1 - T0);
    expect(timed.verify(token)).toMatchObject({ ok: true });
    await at.tick(1);
    expect(timed.verify(token)).toEqual({ ok: false, reason: 'expired' });
  });

  test('lifetime is 1..3600 s', () => {
    expect(() => issue(0)).toThrow();
    expect(() => issue(3601)).toThrow();
    expect(issue(3600).claims.exp - issue(3600).claims.iat).toBe(3600);
  });

  test('another signing key, a changed payload or a changed mac is a bad signature', () => {
    const { token } = issue();
    expect(new AccessTokens(randomBytes(32), undefined, clock).verify(token)).toEqual({ ok: false, reason: 'bad_signature' });
    const [head, mac] = token.split('.') as [string, string];
    const claims = decode(token);
    const forged = `pst_${Buffer.from(JSON.stringify({ ...claims, env: 'production' })).toString('base64url')}.${mac}`;
    expect(tokens.verify(forged)).toEqual({ ok: false, reason: 'bad_signature' });
    const flipped = `${head}.${mac[0] === 'A' ? 'B' : 'A'}${mac.slice(1)}`;
    expect(tokens.verify(flipped)).toEqual({ ok: false, reason: 'bad_signature' });
  });

  test('only the canonical base64url spelling of the mac verifies (its last character has two spare bits)', () => {
    const { token, claims } = issue();
    const [head, mac] = token.split('.') as [string, string];
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(mac.at(-1)!);
    expect(last & 0b11).toBe(0);
    // The four characters that decode to the same 256 bits: the spare bits 00, 01, 10, 11.
    const spellings = [0, 1, 2, 3].map((spare) => `${head}.${mac.slice(0, -1)}${alphabet[last | spare]}`);
    expect(new Set(spellings.map((t) => Buffer.from(t.split('.')[1]!, 'base64url').toString('hex'))).size).toBe(1);
    expect(spellings.map((t) => tokens.verify(t))).toEqual([
      { ok: true, claims },
      { ok: false, reason: 'malformed' },
      { ok: false, reason: 'malformed' },
      { ok: false, reason: 'malformed' },
    ]);
  });

  test('anything not shaped like a token is malformed', () => {
    const { token } = issue();
    for (const bad of ['', 'pst_', 'Bearer x', token.slice(4), `${token}.x`, `x${token}`, `pst_${'a'.repeat(2000)}.${'b'.repeat(43)}`]) {
      expect(tokens.verify(bad)).toEqual({ ok: false, reason: 'malformed' });
    }
  });

  test('an authentic payload with impossible claims is malformed', () => {
    const key = randomBytes(32);
    const t = new AccessTokens(key, undefined, fakeClock(1_000_000));
    // Sign arbitrary payloads with the same MAC key through a token issued for them.
    const sign = (claims: unknown) => {
      const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
      const mac = (t as unknown as { mac(p: string): Buffer }).mac(payload).toString('base64url');
      return `pst_${payload}.${mac}`;
    };
    const good = { v: 1, kid: 'abcdefghijklmnop', ws: WS, env: 'sandbox', iat: 1000, exp: 1900, jti: 'x' };
    expect(t.verify(sign(good))).toMatchObject({ ok: true });
    for (const claims of [
      { ...good, v: 2 },
      { ...good, env: 'staging' },
      { ...good, ws: 'not-a-uuid' },
      { ...good, kid: 'ABC' },
      { ...good, exp: 1000 + 3601 },
      { ...good, exp: 999 },
      { ...good, iat: '1000' },
      [good],
      'hello',
    ]) {
      expect(t.verify(sign(claims))).toEqual({ ok: false, reason: 'malformed' });
    }
    // issued (far) in the future: refused
    expect(t.verify(sign({ ...good, iat: 5000, exp: 5900 }))).toEqual({ ok: false, reason: 'malformed' });
  });

  test('the signing key must be at least 32 bytes', () => {
    expect(() => new AccessTokens(randomBytes(31))).toThrow();
  });

  test('TOKEN_SIGNING_KEY_PREVIOUS: verify accepts old and new keys, issue uses the new one', async () => {
    const at = fakeClock(1_000_000);
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const before = new AccessTokens(oldKey, undefined, at);
    const rotating = new AccessTokens(newKey, oldKey, at);
    const input = { kid: 'abcdefghijklmnop', ws: WS, env: 'sandbox' as const, ttlSeconds: 900 };
    const oldToken = before.issue(input).token;
    expect(rotating.verify(oldToken)).toMatchObject({ ok: true });
    const newToken = rotating.issue(input).token;
    expect(rotating.verify(newToken)).toMatchObject({ ok: true });
    // minted with the current key only: the old-key-only verifier refuses it, a new-key-only one accepts it
    expect(before.verify(newToken)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(new AccessTokens(newKey, undefined, at).verify(newToken)).toMatchObject({ ok: true });
    // an unrelated key is refused
    const stranger = new AccessTokens(randomBytes(32), undefined, at).issue(input).token;
    expect(rotating.verify(stranger)).toEqual({ ok: false, reason: 'bad_signature' });
    // expiry still applies to old-key tokens
    await at.tick(900_000);
    expect(rotating.verify(oldToken)).toEqual({ ok: false, reason: 'expired' });
    expect(() => new AccessTokens(newKey, randomBytes(31))).toThrow();
  });
});
