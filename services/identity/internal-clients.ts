/**
 * Marketplace clients of the internal API: `psmc_<client_id>_<secret>`, sent as
 * `authorization: Bearer <token>` to the service being called.
 *
 * - `client_id`: 16 characters of lower-case base32 (80 random bits); public, safe to
 *   log, what `psync client revoke --client` takes.
 * - `secret`: 43 base64url characters, 32 random bytes (256 bits).
 * - Stored: only SHA-256 of the WHOLE token's UTF-8 bytes. That is the hash every
 *   service computes from the credential it received, and all it forwards to
 *   AuthenticateClient, so the token itself never travels further than the service it
 *   was sent to. A secret of this entropy needs no slow hash; the lookup is one unique
 *   index probe.
 */
import { randomBytes } from 'node:crypto';
import { CLIENT_TOKEN_PREFIX, tokenSha256 } from '../kit/rpc';
import { base32 } from '../kit/base';

export { CLIENT_TOKEN_PREFIX };

/** The only role a client credential carries in v1. */
export const CLIENT_ROLE = 'marketplace';

/** Bytes behind a client id: 10 bytes = 80 bits = exactly 16 base32 characters. */
const CLIENT_ID_BYTES = 10;
/** Bytes behind a secret: 32 bytes = 256 bits = 43 base64url characters. */
const SECRET_BYTES = 32;
/** Length of a SHA-256 digest: anything else presented to AuthenticateClient matches nothing. */
export const TOKEN_HASH_BYTES = 32;

/** A freshly minted credential. `token` is shown once and never stored or logged. */
export interface MintedClientToken {
  clientId: string;
  /** The whole credential: `psmc_<client_id>_<secret>`. */
  token: string;
  /** SHA-256 of `token`: the only thing stored. */
  tokenSha256: Buffer;
}

/** Mints a new client credential from the system CSPRNG. */
export function mintClientToken(): MintedClientToken {
  const clientId = base32(randomBytes(CLIENT_ID_BYTES));
  const secret = randomBytes(SECRET_BYTES).toString('base64url');
  const token = `${CLIENT_TOKEN_PREFIX}${clientId}_${secret}`;
  return { clientId, token, tokenSha256: hashClientToken(token) };
}

/** SHA-256 of a token's UTF-8 bytes: the same function every service applies to what it received. */
export function hashClientToken(token: string): Buffer {
  return tokenSha256(token);
}
