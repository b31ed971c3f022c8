/**
 * Shared helpers of the identity integration tests: a Connect client over gRPC (h2c)
 * to a running system's internal port, error fingerprints, token forging with a known
 * signing key.
 */
import { readFileSync } from 'node:fs';
import { ConnectError } from '@connectrpc/connect';
import { ValidationDetailSchema } from '../../gen/psync/common/v1/errors_pb';
import { localKeyPath } from '../../services/kit/base';
import { internalClients, type IdentityClient } from '../support/internal-clients';

export type { IdentityClient };

/** A client of IdentityService at `baseUrl`; `close()` ends its HTTP/2 session. */
export function identityClient(baseUrl: string): { client: IdentityClient; close(): void } {
  const clients = internalClients(baseUrl, 15000);
  return { client: clients.identity, close: clients.close };
}

import { reasonOf } from '../support/connect-errors';
export { connectErrorOf, reasonOf, retryAfterOf } from '../support/connect-errors';

export function violationsOf(err: ConnectError): { field: string; code: string }[] {
  return (err.findDetails(ValidationDetailSchema)[0]?.violations ?? []).map((v) => ({ field: v.field, code: v.code }));
}

/** Everything a caller can observe of an error, for "identical" comparisons. */
export function fingerprint(err: ConnectError): string {
  return JSON.stringify({
    code: err.code,
    message: err.rawMessage,
    details: err.details.map((d) => ('desc' in d ? d.desc.typeName : d.type)),
    reason: reasonOf(err),
    metadata: [...err.metadata.keys()].sort(),
  });
}

/** The token-signing key a system uses: configured in its env, else generated under its DATA_DIR. */
export function signingKeyOf(env: Record<string, string>, dataDir: string): Buffer {
  if (env.TOKEN_SIGNING_KEY) return Buffer.from(env.TOKEN_SIGNING_KEY, 'base64');
  return Buffer.from(readFileSync(localKeyPath(dataDir, 'token-signing'), 'utf8').trim(), 'base64');
}

/** The decoded claims of a token (no verification). */
export function claimsOf(token: string): Record<string, unknown> {
  const payload = token.slice('pst_'.length, token.indexOf('.'));
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** Seconds left in the current epoch-aligned hour by this machine's clock. */
export function localSecondsLeftInHour(): number {
  return 3600 - (Math.floor(Date.now() / 1000) % 3600);
}

/**
 * Waits out the last seconds of an epoch hour, so a test's requests all fall in one
 * rate-limit window (a window edge mid-test would reset the counters).
 */
export async function awayFromWindowEdge(marginSeconds = 10): Promise<void> {
  const left = localSecondsLeftInHour();
  // timing under test: the rate window's edge on the database's clock: the requests counted must fall in one window.
  if (left <= marginSeconds) await new Promise((r) => setTimeout(r, (left + 1) * 1000));
}
