/**
 * Secret keys a service needs (the token-signing key, the secrets-encryption key):
 * configured by the operator, or — on the embedded one-machine default only —
 * generated once and kept under `DATA_DIR/keys/<name>.key`.
 *
 * Why generate only when embedded: with the embedded database every service lives
 * in one process on one machine, next to its data, so a key file under DATA_DIR is
 * as durable as the data it protects. With a real PostgreSQL, replicas on different
 * machines would each generate a different key (tokens signed by one replica fail
 * on another), so there the key must come from configuration (a Kubernetes Secret)
 * and its absence means "not configured".
 *
 * The file holds the key in base64 (one line), the same format the environment
 * variable takes, so an operator can move an embedded installation's key into
 * configuration unchanged.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Bytes of a generated key (256 bits). */
export const GENERATED_KEY_BYTES = 32;

/** Key file names are plain: they become file names. */
const KEY_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

export interface ResolveSecretKeyOptions {
  /** The key from configuration (already decoded); wins when present. */
  configured?: Buffer;
  /** DATA_DIR: generated keys live in `${dataDir}/keys`. */
  dataDir: string;
  /** Whether the process runs on the embedded database (the only case that generates). */
  embedded: boolean;
  /** Which key, e.g. 'token-signing'; the file is `${name}.key`. */
  name: 'token-signing' | (string & {});
}

/** A resolved key and where it came from, for the start-up log. */
export interface ResolvedSecretKey {
  key: Buffer;
  /** configured: from the environment; generated: this start created its file; loaded: read from an existing file. */
  origin: 'configured' | 'generated' | 'loaded';
  /** The key file (generated or loaded). */
  file?: string;
}

/** Path of the file a generated key named `name` is kept in. */
export function localKeyPath(dataDir: string, name: string): string {
  return join(dataDir, 'keys', `${name}.key`);
}

/**
 * The key to use and where it came from: the configured one; else, when embedded, the
 * one kept under DATA_DIR/keys (generated on first use, mode 0600 in a 0700
 * directory; `generated` only for the start that created the file, `loaded` after);
 * else `undefined` (not configured — the caller degrades the feature that needs it).
 *
 * Safe when several processes share DATA_DIR and start together: the file appears
 * atomically (written aside, then hard-linked into place, which fails if another
 * process won), so every process ends up with the same key.
 */
export function resolveSecretKey(opts: ResolveSecretKeyOptions): ResolvedSecretKey | undefined {
  if (!KEY_NAME.test(opts.name)) throw new Error(`invalid key name ${JSON.stringify(opts.name)}: expected ${KEY_NAME}`);
  if (opts.configured && opts.configured.length > 0) return { key: opts.configured, origin: 'configured' };
  if (!opts.embedded) return undefined;

  const file = localKeyPath(opts.dataDir, opts.name);
  const { value, created } = readOrCreateLocalFile(file, () => randomBytes(GENERATED_KEY_BYTES).toString('base64'), readKeyFile);
  return { key: value, origin: created ? 'generated' : 'loaded', file };
}

/**
 * Reads `file` with `read` (undefined when absent); when absent, writes `generate()`
 * there (mode 0600 in a 0700 directory) and reads it back. Safe when several processes
 * share the directory and start together: the file appears atomically (written aside,
 * then hard-linked into place, which fails if another process won), so every process
 * ends up with the same content. Returns the value and whether this call created it.
 */
export function readOrCreateLocalFile<T>(file: string, generate: () => string, read: (file: string) => T | undefined): { value: T; created: boolean } {
  const dir = dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const existing = read(file);
  if (existing !== undefined) return { value: existing, created: false };

  const tmp = join(dir, `.${basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  writeFileSync(tmp, `${generate()}\n`, { mode: 0o600, flag: 'wx' });
  let created = false;
  try {
    linkSync(tmp, file);
    created = true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // Another process created it first: use theirs.
  } finally {
    unlinkSync(tmp);
  }
  const value = read(file);
  if (value === undefined) throw new Error(`file ${file} vanished while it was being created`);
  return { value, created };
}

/**
 * The text of a local secret file, trimmed; undefined when it does not exist. The
 * owning process (`tighten`) also narrows loose permissions to 0600; a reader such as
 * the CLI, possibly another user, leaves them alone.
 */
export function readLocalSecretText(file: string, tighten = true): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  // Keep it private even if it was copied in with looser permissions.
  if (tighten && (statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  return text.trim();
}

/** Reads a key file; undefined when it does not exist. A damaged file is an error, never silently replaced. */
function readKeyFile(file: string): Buffer | undefined {
  const text = readLocalSecretText(file);
  if (text === undefined) return undefined;
  const key = Buffer.from(text, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || key.length < GENERATED_KEY_BYTES) {
    // Replacing it would silently invalidate everything the old key protects.
    throw new Error(`key file ${file} is damaged (expected base64 of at least ${GENERATED_KEY_BYTES} bytes); restore it or remove it to generate a new key`);
  }
  return key;
}
