/**
 * Signing secrets: minted with high entropy, kept encrypted at rest.
 *
 * A secret is `whsec_` + 32 random bytes in base64url (256 bits). It is stored only
 * as AES-256-GCM ciphertext under the secrets-encryption key (SECRETS_ENCRYPTION_KEY,
 * or the key the embedded default generates under DATA_DIR/keys): a copy of the
 * database alone reveals no secret. The workspace id is the additional authenticated
 * data, so a ciphertext copied onto another workspace's row does not decrypt.
 *
 * Stored layout: version byte 1 ‖ key id (4 bytes) ‖ IV (12) ‖ tag (16) ‖ ciphertext.
 * The key id (a hash of the key) turns "the configured key changed" into a clear error
 * instead of an anonymous authentication failure.
 *
 * Rotation: with SECRETS_ENCRYPTION_KEY_PREVIOUS set, a ciphertext the current key
 * cannot open (key id or GCM tag) is tried under the previous key; seal() always uses
 * the current key, and resealSecrets() (run once at notifications start-up) moves every
 * stored secret still under the previous key onto the current one.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID_BYTES = 4;
const HEADER_BYTES = 1 + KEY_ID_BYTES + IV_BYTES + TAG_BYTES;

/** Prefix of every signing secret (also scrubbed from free text by the logger). */
export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: `whsec_` + 32 random bytes, base64url (43 characters). */
export function mintSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64url');
}

/** The stored ciphertext was made under another key (or was tampered with). */
export class SecretDecryptionError extends Error {
  override name = 'SecretDecryptionError';
}

interface BoxKey {
  key: Buffer;
  keyId: Buffer;
}

function deriveKey(keyMaterial: Uint8Array): BoxKey {
  if (keyMaterial.length < 32) throw new Error('secrets-encryption key must be at least 32 bytes');
  const key = Buffer.from(hkdfSync('sha256', keyMaterial, Buffer.alloc(0), 'psync notifications signing secrets v1', 32));
  return { key, keyId: createHash('sha256').update(key).digest().subarray(0, KEY_ID_BYTES) };
}

/** Encrypts signing secrets under one key; decrypts under it or, during a rotation, the previous one. */
export class SecretBox {
  private readonly key: Buffer;
  private readonly keyId: Buffer;
  private readonly previous: BoxKey | undefined;

  /**
   * `keyMaterial`: at least 32 bytes; the AES key is derived from it with HKDF-SHA256.
   * `previousKeyMaterial` (SECRETS_ENCRYPTION_KEY_PREVIOUS): accepted by open(), never used by seal().
   */
  constructor(keyMaterial: Uint8Array, previousKeyMaterial?: Uint8Array) {
    const current = deriveKey(keyMaterial);
    this.key = current.key;
    this.keyId = current.keyId;
    this.previous = previousKeyMaterial ? deriveKey(previousKeyMaterial) : undefined;
  }

  /** Whether a previous key is configured (a rotation is in progress). */
  get rotating(): boolean {
    return this.previous !== undefined;
  }

  /**
   * `stored` re-encrypted under the current key if only the previous key opens it;
   * undefined if it already opens under the current key. Throws SecretDecryptionError
   * if neither key opens it.
   */
  resealIfPrevious(stored: Uint8Array, workspaceId: string): Buffer | undefined {
    try {
      openWith({ key: this.key, keyId: this.keyId }, stored, workspaceId);
      return undefined;
    } catch (err) {
      if (!(err instanceof SecretDecryptionError) || !this.previous) throw err;
    }
    return this.seal(openWith(this.previous, stored, workspaceId), workspaceId);
  }

  /** Ciphertext of `secret`, bound to `workspaceId`. */
  seal(secret: string, workspaceId: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(workspaceId, 'utf8'));
    const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), this.keyId, iv, cipher.getAuthTag(), body]);
  }

  /** The secret sealed in `stored` for `workspaceId`; throws SecretDecryptionError otherwise. */
  open(stored: Uint8Array, workspaceId: string): string {
    try {
      return openWith({ key: this.key, keyId: this.keyId }, stored, workspaceId);
    } catch (err) {
      if (!(err instanceof SecretDecryptionError) || !this.previous) throw err;
      try {
        return openWith(this.previous, stored, workspaceId);
      } catch {
        throw err; // report the current key's failure
      }
    }
  }
}

function openWith(k: BoxKey, stored: Uint8Array, workspaceId: string): string {
  const buf = Buffer.from(stored);
  if (buf.length <= HEADER_BYTES || buf[0] !== VERSION) throw new SecretDecryptionError('unknown signing-secret ciphertext format');
  if (!buf.subarray(1, 1 + KEY_ID_BYTES).equals(k.keyId)) {
    throw new SecretDecryptionError('signing secret was encrypted under another SECRETS_ENCRYPTION_KEY');
  }
  const iv = buf.subarray(1 + KEY_ID_BYTES, 1 + KEY_ID_BYTES + IV_BYTES);
  const tag = buf.subarray(1 + KEY_ID_BYTES + IV_BYTES, HEADER_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', k.key, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(workspaceId, 'utf8'));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(buf.subarray(HEADER_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretDecryptionError('signing secret failed authentication (wrong key or altered row)');
  }
}

/**
 * The previous secret of a rotation overlap, or undefined if it cannot be decrypted
 * (it was sealed under an earlier key): X-Signature-Previous is then left out rather
 * than holding up the delivery — it is optional by definition.
 */
export function openPrevious(box: SecretBox, stored: Uint8Array, workspaceId: string): string | undefined {
  try {
    return box.open(stored, workspaceId);
  } catch (err) {
    if (err instanceof SecretDecryptionError) return undefined;
    throw err;
  }
}
