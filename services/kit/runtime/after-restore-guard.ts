/**
 * What `main.ts after-restore` (run-after-restore.ts) checks before it touches anything:
 * that the operator runs it, and that no process of the release is serving. Run against
 * a live system it would rewind a consumer under a running notifications (which
 * recreates it at its old position, undoing the rewind) and move the calendar's event
 * seqs under live writers; on the embedded database it would open files a running
 * process holds.
 *
 * - The credential: the operator's, presented as `bin/psync` presents it (PSYNC_TOKEN,
 *   else `DATA_DIR/keys/operator.token`), must be one the system accepts:
 *   OPERATOR_TOKEN or OPERATOR_TOKEN_PREVIOUS, an `operator:` hash in INTERNAL_CALLERS,
 *   else the token file the system generated. Nothing configured: refused.
 * - Serving: (1) every internal URL the configuration names (IDENTITY_URL … or this
 *   machine's INTERNAL_PORT) answers `grpc.health.v1.Health/Check` (any status: a
 *   process starting or draining is still there); (2) on NATS, a durable consumer of
 *   the release has a pull waiting (`num_waiting`), which only a running subscriber
 *   keeps, wherever it runs. The first sees a process behind a configured address, the
 *   second one that reaches the same NATS from anywhere.
 */
import { timingSafeEqual } from 'node:crypto';
import { Health } from '../../../gen/grpc/health/v1/health_pb';
import type { EventBus } from '../events';
import type { Config } from './config';
import { tokenSha256 } from '../rpc';
import { InternalClients } from '../rpc';
import { internalTls } from './internal-credentials';
import { operatorTokenPath, readOperatorTokenFile } from '../base';
import type { ServiceModule } from './service-module';
import { OneShotRefusal } from './startup-failure';

/** How long one health probe waits: a stopped system refuses at once, a dropped packet costs this. */
const PROBE_TIMEOUT_MS = 2_000;

/**
 * The SHA-256 of each operator credential the system accepts, with the precedence of
 * acceptedCallers (internal-credentials.ts), except that a missing token file is not
 * generated: a system that never started has no credential to check against.
 */
function acceptedOperatorHashes(config: Config): Buffer[] {
  if (config.operatorToken) return [config.operatorToken, config.operatorTokenPrevious].flatMap((t) => (t ? [tokenSha256(t)] : []));
  const fromCallers = config.internalCallers.filter((c) => c.role === 'operator').map((c) => Buffer.from(c.sha256, 'hex'));
  if (fromCallers.length > 0) return fromCallers;
  const generated = readOperatorTokenFile(operatorTokenPath(config.dataDir), false);
  return generated ? [tokenSha256(generated)] : [];
}

/** Throws OneShotRefusal unless `presented` (PSYNC_TOKEN or the token file) is an accepted operator credential. */
export function checkOperatorCredential(config: Config, presented: () => string): void {
  const accepted = acceptedOperatorHashes(config);
  if (accepted.length === 0) {
    throw new OneShotRefusal(
      'no operator credential is configured (OPERATOR_TOKEN, an operator entry in INTERNAL_CALLERS, or DATA_DIR/keys/operator.token); set OPERATOR_TOKEN and PSYNC_TOKEN',
    );
  }
  let token: string;
  try {
    token = presented();
  } catch (err) {
    throw new OneShotRefusal(`it needs the operator credential: ${(err as Error).message}`);
  }
  const hash = tokenSha256(token);
  if (!accepted.some((a) => timingSafeEqual(a, hash))) throw new OneShotRefusal('PSYNC_TOKEN (or the token file) is not the operator credential this system accepts');
}

/** The internal URLs a process of this release would answer at: the configured services', else this machine's internal port. */
function internalUrls(config: Config): string[] {
  const scheme = config.internalTlsCert ? 'https' : 'http';
  const host = config.internalHost && !['0.0.0.0', '::', '[::]'].includes(config.internalHost) ? config.internalHost : '127.0.0.1';
  const local = `${scheme}://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${config.internalPort}`;
  return [...new Set([config.identityUrl, config.catalogUrl, config.calendarUrl, config.notificationsUrl].map((u) => u || local))];
}

/** What of the release is serving now, one phrase each; empty when nothing is. */
export async function servingProcesses(config: Config, services: ServiceModule[], bus: EventBus): Promise<string[]> {
  const found: string[] = [];
  const clients = new InternalClients([], PROBE_TIMEOUT_MS, { tls: internalTls(config).client });
  try {
    await Promise.all(
      internalUrls(config).map(async (url) => {
        try {
          await clients.client(Health, url).check({ service: '' });
          found.push(`a process answers health checks at ${url}`);
        } catch {
          // Refused, timed out, or not a psync process: nothing of ours there.
        }
      }),
    );
  } finally {
    clients.close();
  }
  for (const durable of services.flatMap((m) => m.busConsumers ?? [])) {
    if (await bus.consumerInUse?.(durable)) found.push(`a process is pulling from NATS consumer ${durable}`);
  }
  return found;
}
