/**
 * Access tokens: `pst_<payload>.<mac>` (docs/decisions.md "Identity").
 *
 * payload = base64url of the JSON claims `{v, kid, ws, env, iat, exp, jti}` (seconds
 * since the Unix epoch); mac = base64url of HMAC-SHA256 over the payload text, under a
 * MAC key derived (HKDF-SHA256) from the token-signing key, so the configured key
 * material is never used directly and a future token version gets its own key.
 *
 * Verification is in memory: shape (the MAC in its canonical base64url spelling only), then the MAC in constant time — before the
 * payload is parsed at all — then the claims and expiry. Whether the key behind a
 * token is still live is Authorize's SQL re-check, not this module's.
 */
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { isCanonicalUuid, MAX_TOKEN_TTL_SECONDS, systemClock, type Clock } from '../kit/base';

/** Prefix of every access token (also scrubbed from free text by the logger). */
export const ACCESS_TOKEN_PREFIX = 'pst_';

export type EnvironmentName = 'sandbox' | 'production';

/** What a token asserts. */
export interface TokenClaims {
  /** Format version. */
  v: 1;
  /** The API key's id. */
  kid: string;
  /** The key's workspace (UUID). */
  ws: string;
  /** The workspace's environment. */
  env: EnvironmentName;
  /** Issued at, Unix seconds. */
  iat: number;
  /** Expires at, Unix seconds (exclusive: invalid from this second on). */
  exp: number;
  /** Random token id (128 bits), for correlation. */
  jti: string;
}

export type VerifyResult = { ok: true; claims: TokenClaims } | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' };

/** Longer inputs are refused before any work (a real token is about 230 characters). */
const MAX_TOKEN_LENGTH = 1024;
const TOKEN = /^pst_([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/;
const KEY_ID = /^[a-z2-7]{16}$/;
/** Tolerated clock difference between replicas for `iat` in the future. */
const CLOCK_SKEW_SECONDS = 60;

/** Issues and verifies access tokens under one token-signing key. */
export class AccessTokens {
  private readonly macKey: Buffer;
  /** MAC key of TOKEN_SIGNING_KEY_PREVIOUS: accepted by verify(), never used by issue(). */
  private readonly previousMacKey: Buffer | undefined;

  /**
   * `signingKey`: at least 32 bytes (TOKEN_SIGNING_KEY or the generated local key).
   * `previousKey` (TOKEN_SIGNING_KEY_PREVIOUS): during a rotation, tokens signed under it
   * still verify until they expire; new tokens are always signed with `signingKey`.
   * `clock` tells issue() and verify() the time.
   */
  constructor(
    signingKey: Uint8Array,
    previousKey?: Uint8Array,
    private readonly clock: Clock = systemClock,
  ) {
    if (signingKey.length < 32) throw new Error('the token-signing key must be at least 32 bytes');
    if (previousKey && previousKey.length < 32) throw new Error('the previous token-signing key must be at least 32 bytes');
    this.macKey = deriveMacKey(signingKey);
    this.previousMacKey = previousKey ? deriveMacKey(previousKey) : undefined;
  }

  /** A new token for a key; `ttlSeconds` 1..3600, counted from the clock's now rounded down to the second. */
  issue(input: { kid: string; ws: string; env: EnvironmentName; ttlSeconds: number }): { token: string; claims: TokenClaims } {
    if (!Number.isInteger(input.ttlSeconds) || input.ttlSeconds < 1 || input.ttlSeconds > MAX_TOKEN_TTL_SECONDS) {
      throw new Error(`token lifetime must be 1..${MAX_TOKEN_TTL_SECONDS} seconds`);
    }
    const iat = Math.floor(this.clock.now() / 1000);
    const claims: TokenClaims = {
      v: 1,
      kid: input.kid,
      ws: input.ws,
      env: input.env,
      iat,
      exp: iat + input.ttlSeconds,
      jti: randomBytes(16).toString('base64url'),
    };
    const payload = Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url');
    return { token: `${ACCESS_TOKEN_PREFIX}${payload}.${this.mac(payload).toString('base64url')}`, claims };
  }

  /** Checks shape, MAC (constant time), claims and expiry at the clock's now. */
  verify(token: string): VerifyResult {
    if (token.length > MAX_TOKEN_LENGTH) return { ok: false, reason: 'malformed' };
    const m = TOKEN.exec(token);
    if (!m) return { ok: false, reason: 'malformed' };
    const payload = m[1]!;
    const presented = Buffer.from(m[2]!, 'base64url');
    // 43 characters carry 258 bits for the MAC's 256: the last character's two spare
    // bits must be zero, or four spellings of one token would all verify. Only the
    // canonical encoding (the one issue() produces) is accepted.
    if (presented.toString('base64url') !== m[2]) return { ok: false, reason: 'malformed' };
    const current = macMatches(this.macKey, payload, presented);
    const previous = this.previousMacKey !== undefined && macMatches(this.previousMacKey, payload, presented);
    if (!current && !previous) return { ok: false, reason: 'bad_signature' };
    const claims = parseClaims(payload);
    if (!claims) return { ok: false, reason: 'malformed' };
    const now = this.clock.now() / 1000;
    if (now >= claims.exp) return { ok: false, reason: 'expired' };
    if (claims.iat > now + CLOCK_SKEW_SECONDS) return { ok: false, reason: 'malformed' };
    return { ok: true, claims };
  }

  private mac(payload: string): Buffer {
    return createHmac('sha256', this.macKey).update(payload, 'ascii').digest();
  }
}

function deriveMacKey(key: Uint8Array): Buffer {
  return Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'psync access-token mac v1', 32));
}

/** Constant-time comparison of `presented` with the MAC of `payload` under `macKey`. */
function macMatches(macKey: Buffer, payload: string, presented: Buffer): boolean {
  const expected = createHmac('sha256', macKey).update(payload, 'ascii').digest();
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

/** Claims of an authentic payload, checked field by field; undefined if anything is off. */
function parseClaims(payload: string): TokenClaims | undefined {
  let c: unknown;
  try {
    c = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof c !== 'object' || c === null) return undefined;
  const o = c as Record<string, unknown>;
  const int = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  if (o.v !== 1) return undefined;
  if (typeof o.kid !== 'string' || !KEY_ID.test(o.kid)) return undefined;
  if (typeof o.ws !== 'string' || !isCanonicalUuid(o.ws)) return undefined;
  if (o.env !== 'sandbox' && o.env !== 'production') return undefined;
  if (!int(o.iat) || !int(o.exp) || o.exp <= o.iat || o.exp - o.iat > MAX_TOKEN_TTL_SECONDS) return undefined;
  if (typeof o.jti !== 'string' || o.jti.length === 0) return undefined;
  return { v: 1, kid: o.kid, ws: o.ws, env: o.env, iat: o.iat, exp: o.exp, jti: o.jti };
}
