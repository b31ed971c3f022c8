/**
 * The operator credential of the internal API (`bin/psync`'s).
 *
 * Configured: OPERATOR_TOKEN (and OPERATOR_TOKEN_PREVIOUS during a rotation), or only
 * its hash as an `operator:` entry of INTERNAL_CALLERS (the Helm chart's way: no pod
 * holds the token itself). Not configured: generated at first start and kept in
 * `DATA_DIR/keys/operator.token` (mode 0600), embedded or real database alike, so that
 * `npm start` then `bin/psync …` in the same directory work with nothing set. The
 * path is logged, never the value.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { readLocalSecretText, readOrCreateLocalFile } from './local-keys';

/** Prefix of generated operator tokens (the logger scrubs it from free text). */
export const OPERATOR_TOKEN_PREFIX = 'psop_';

/** The file a generated operator token is kept in: `<dataDir>/keys/operator.token`. */
export function operatorTokenPath(dataDir: string): string {
  return join(dataDir, 'keys', 'operator.token');
}

/**
 * Reads the operator token file; undefined when absent. A file too short to be a
 * credential is an error. `tighten`: narrow loose permissions to 0600 (the server,
 * which owns the file; not the CLI).
 */
export function readOperatorTokenFile(file: string, tighten = true): string | undefined {
  const text = readLocalSecretText(file, tighten);
  if (text === undefined) return undefined;
  if (!/^[\x21-\x7e]{32,512}$/.test(text)) {
    throw new Error(`operator token file ${file} is damaged (expected 32 to 512 visible ASCII characters); restore it or remove it to generate a new one`);
  }
  return text;
}

/** Reads the generated operator token under `dataDir`, creating it on first use. */
export function ensureOperatorTokenFile(dataDir: string): { file: string; token: string; created: boolean } {
  const file = operatorTokenPath(dataDir);
  const { value, created } = readOrCreateLocalFile(file, () => `${OPERATOR_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`, readOperatorTokenFile);
  return { file, token: value, created };
}
