/**
 * What a process needs from its configuration to take part in the internal API's
 * trust boundary: the credentials its server accepts (INTERNAL_CALLERS, the operator
 * token) and the TLS material of its listener and clients (INTERNAL_TLS_*).
 */
import { readFileSync } from 'node:fs';
import type { Config } from './config';
import { ConfigError } from '../base';
import type { AcceptedCaller } from '../rpc';
import { tokenSha256 } from '../rpc';
import type { InternalTls } from '../rpc';
import type { InternalServerTls } from '../rpc';
import { logEvent, type Logger } from '../base';
import { ensureOperatorTokenFile } from '../base';

/**
 * The credentials the internal server accepts: INTERNAL_CALLERS, plus the operator's —
 * OPERATOR_TOKEN (and OPERATOR_TOKEN_PREVIOUS) when set; else, when INTERNAL_CALLERS
 * names no operator either, the token generated under DATA_DIR/keys/operator.token
 * (created on first start; the path is logged, never the value).
 */
export function acceptedCallers(config: Config, log: Logger): AcceptedCaller[] {
  const out = [...config.internalCallers];
  const operator = (token: string) => out.push({ role: 'operator', sha256: tokenSha256(token).toString('hex') });
  if (config.operatorToken) {
    operator(config.operatorToken);
    if (config.operatorTokenPrevious) operator(config.operatorTokenPrevious);
    log.info(
      { event: logEvent('credentials.operator.ready'), source: 'OPERATOR_TOKEN', previous_accepted: Boolean(config.operatorTokenPrevious) },
      'operator credential: configured',
    );
  } else if (out.some((c) => c.role === 'operator')) {
    log.info({ event: logEvent('credentials.operator.ready'), source: 'INTERNAL_CALLERS' }, 'operator credential: configured (hash only)');
  } else {
    const { file, token, created } = ensureOperatorTokenFile(config.dataDir);
    operator(token);
    log.info(
      { event: logEvent('credentials.operator.ready'), source: created ? 'generated' : 'loaded', file },
      `operator credential: ${created ? 'generated' : 'loaded'} (bin/psync reads this file; set OPERATOR_TOKEN to choose one)`,
    );
  }
  return out;
}

/** Reads one PEM file named by a setting; a missing or unreadable file is a configuration error naming it. */
function pem(path: string, variable: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new ConfigError(`${variable}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/**
 * TLS of the internal API from INTERNAL_TLS_*: the listener's (when a certificate is
 * configured) and the clients' (trusted CA, and the same certificate as the client's
 * own for mutual TLS).
 */
export function internalTls(config: Pick<Config, 'internalTlsCa' | 'internalTlsCert' | 'internalTlsKey' | 'internalTlsRequireClientCert'>): {
  server?: InternalServerTls;
  client: InternalTls;
} {
  const ca = config.internalTlsCa ? pem(config.internalTlsCa, 'INTERNAL_TLS_CA') : undefined;
  if (!config.internalTlsCert || !config.internalTlsKey) return { client: { ca } };
  const cert = pem(config.internalTlsCert, 'INTERNAL_TLS_CERT');
  const key = pem(config.internalTlsKey, 'INTERNAL_TLS_KEY');
  return {
    server: { cert, key, ca, requireClientCert: config.internalTlsRequireClientCert },
    client: { ca, cert, key },
  };
}
