/**
 * The operator credential psync sends as `authorization: Bearer`: PSYNC_TOKEN when set
 * (and not empty), otherwise the token file a system that was given no OPERATOR_TOKEN
 * generates at its first start, `$DATA_DIR/keys/operator.token` (DATA_DIR defaults to
 * `./.data`, resolved against the current directory, as the server resolves it). So
 * `npm start` and then `bin/psync …` in the same directory work with nothing set.
 *
 * The token is never printed: errors name PSYNC_TOKEN or the file, never the value.
 */
import { resolve } from 'node:path';
import { operatorTokenPath, readOperatorTokenFile } from '../../services/kit/base';

/** Where the credential came from, for error lines. */
export type CredentialSource = { kind: 'env' } | { kind: 'file'; file: string };

export interface OperatorCredential {
  token: string;
  source: CredentialSource;
}

/** No usable credential: one line naming PSYNC_TOKEN and the file looked for; exit 1. */
export class CredentialError extends Error {
  override name = 'CredentialError';
}

/** Default DATA_DIR, as in services/kit/runtime/config.ts. */
const DEFAULT_DATA_DIR = './.data';

/** What a Bearer credential may hold: visible ASCII, as the server accepts it. */
const USABLE = /^[\x21-\x7e]{1,512}$/;

/** The file psync reads when PSYNC_TOKEN is not set. */
export function operatorTokenFileOf(env: NodeJS.ProcessEnv): string {
  return resolve(operatorTokenPath(env.DATA_DIR || DEFAULT_DATA_DIR));
}

/** Finds the operator credential, or throws a CredentialError saying how to provide one. */
export function resolveOperatorCredential(env: NodeJS.ProcessEnv = process.env): OperatorCredential {
  // Trimmed as the server trims OPERATOR_TOKEN: `export PSYNC_TOKEN="$(cat file)"` and the like.
  const fromEnv = env.PSYNC_TOKEN?.trim();
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!USABLE.test(fromEnv)) throw new CredentialError('PSYNC_TOKEN is not a usable credential: expected 1 to 512 visible ASCII characters, no spaces or line breaks');
    return { token: fromEnv, source: { kind: 'env' } };
  }
  const file = operatorTokenFileOf(env);
  let token: string | undefined;
  try {
    token = readOperatorTokenFile(file, false);
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === 'EACCES' ? `cannot read ${file} (permission denied)` : (err as Error).message;
    throw new CredentialError(`no usable operator credential: PSYNC_TOKEN is not set and ${reason}`);
  }
  if (token === undefined) {
    throw new CredentialError(`no operator credential: set PSYNC_TOKEN to the system's operator token, or run psync with the running system's DATA_DIR (looked for ${file})`);
  }
  return { token, source: { kind: 'file', file } };
}

/** "PSYNC_TOKEN" or "the token in <file>": where the refused credential came from. */
export function describeSource(source: CredentialSource): string {
  return source.kind === 'env' ? 'PSYNC_TOKEN' : `the token in ${source.file}`;
}
