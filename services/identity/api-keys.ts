/**
 * API keys: `psk_<key_id>_<secret>` (docs/decisions.md "Identity").
 *
 * - `key_id`: 16 characters of lower-case base32 (80 random bits), the lookup prefix;
 *   public, safe to log, what `psync key revoke --key` takes.
 * - `secret`: 43 base64url characters, 32 random bytes (256 bits). Stored only as
 *   SHA-256 of the 43 characters exactly as issued: a secret of this entropy needs no
 *   slow hash, and hashing the text (not its decoded bytes) leaves exactly one
 *   accepted spelling of each key.
 *
 * Verification always does the same work: an unknown key id is compared against a
 * dummy hash, so unknown, revoked and wrong-secret refusals take one path (spec
 * "Authentication" 7).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { base32 } from '../kit/base';

/** Prefix of every API key (also scrubbed from free text by the logger). */
export const API_KEY_PREFIX = 'psk_';

/** Bytes behind a key id: 10 bytes = 80 bits = exactly 16 base32 characters. */
const KEY_ID_BYTES = 10;
/** Bytes behind a secret: 32 bytes = 256 bits = 43 base64url characters. */
const SECRET_BYTES = 32;

const API_KEY = /^psk_([a-z2-7]{16})_([A-Za-z0-9_-]{43})$/;

/** A freshly minted key. `apiKey` and `secret` are shown once and never stored or logged. */
export interface MintedApiKey {
  keyId: string;
  secret: string;
  /** The whole key the partner keeps: `psk_<key_id>_<secret>`. */
  apiKey: string;
  /** SHA-256 of the secret: the only thing stored. */
  secretHash: Buffer;
}

/** Mints a new key from the system CSPRNG. */
export function mintApiKey(): MintedApiKey {
  const keyId = base32(randomBytes(KEY_ID_BYTES));
  const secret = randomBytes(SECRET_BYTES).toString('base64url');
  return { keyId, secret, apiKey: `${API_KEY_PREFIX}${keyId}_${secret}`, secretHash: hashSecret(secret) };
}

/** Splits a presented key; undefined when it does not have the exact shape of one. */
export function parseApiKey(presented: string): { keyId: string; secret: string } | undefined {
  if (presented.length !== 64) return undefined;
  const m = API_KEY.exec(presented);
  return m ? { keyId: m[1]!, secret: m[2]! } : undefined;
}

/** SHA-256 of the secret's text. */
export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** Compared against when the key id is unknown, so that refusal costs the same. */
const DUMMY_HASH = hashSecret(randomBytes(SECRET_BYTES).toString('base64url'));

/**
 * Whether `secret` matches `storedHash`, in constant time. With no stored hash (an
 * unknown key id) it still hashes and compares — against a dummy — and returns false.
 */
export function secretMatches(secret: string, storedHash: Uint8Array | undefined): boolean {
  const presented = hashSecret(secret);
  const expected = storedHash && storedHash.length === presented.length ? storedHash : DUMMY_HASH;
  const equal = timingSafeEqual(presented, expected);
  return equal && expected !== DUMMY_HASH;
}
