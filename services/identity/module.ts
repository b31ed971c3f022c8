/**
 * The identity service as hosted by a process (see services/kit/runtime/service-module.ts):
 * workspaces, API keys, access tokens, the per-key rate-limit counters and the
 * marketplace clients of the internal API (internal-clients.ts), and the request log
 * of contract requests (request-log.ts), pruned here (request-log-pruner.ts).
 *
 * The token-signing key is TOKEN_SIGNING_KEY, or on the embedded default a key
 * generated once under DATA_DIR/keys (local-keys.ts). With a real DATABASE_URL and
 * no TOKEN_SIGNING_KEY the process still starts, but ExchangeToken answers
 * UNAVAILABLE / TOKEN_ISSUER_NOT_CONFIGURED and Authorize UNAVAILABLE /
 * SERVICE_UNAVAILABLE (docs/decisions.md "Identity").
 */
import { treePath } from '../kit/db';
import type { ServiceContext, ServiceModule } from '../kit/runtime';
import { logEvent, resolveSecretKey, type ResolvedSecretKey } from '../kit/base';
import { PeriodicJob } from '../kit/work';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { AccessTokens } from './access-tokens';
import { deleteOldCounters } from './queries';
import { identityService } from './service';
import { RequestLogPruner } from './request-log-pruner';

/** How often ended rate-limit windows are deleted. */
const COUNTER_CLEANUP_INTERVAL_MS = 10 * 60 * 1000;

/** The token issuer of each hosted context and its key, resolved once (routes() runs before start()). */
const issuers = new WeakMap<ServiceContext, { tokens: AccessTokens; key: ResolvedSecretKey } | undefined>();

function issuerFor(ctx: ServiceContext): { tokens: AccessTokens; key: ResolvedSecretKey } | undefined {
  if (!issuers.has(ctx)) {
    const key = resolveSecretKey({
      configured: ctx.config.tokenSigningKey,
      dataDir: ctx.config.dataDir,
      embedded: ctx.embedded,
      name: 'token-signing',
    });
    issuers.set(ctx, key ? { tokens: new AccessTokens(key.key, ctx.config.tokenSigningKeyPrevious, ctx.clock), key } : undefined);
  }
  return issuers.get(ctx);
}

export const identityModule: ServiceModule = {
  name: 'identity',
  protoServices: [IdentityService.typeName],
  migrations: { prefix: 'identity', dir: treePath('services/identity/migrations') },

  routes(router, ctx) {
    router.service(IdentityService, identityService({ sql: ctx.sql, counterSql: ctx.asyncCommitSql, config: ctx.config, log: ctx.log, tokens: issuerFor(ctx)?.tokens }));
  },

  async start(ctx) {
    const issuer = issuerFor(ctx);
    if (issuer?.key.origin === 'configured') {
      ctx.log.info(
        { event: logEvent('identity.signing_key.ready'), source: 'TOKEN_SIGNING_KEY', previous_key: ctx.config.tokenSigningKeyPrevious !== undefined },
        'token-signing key: TOKEN_SIGNING_KEY',
      );
    } else if (issuer) {
      const how = issuer.key.origin === 'generated' ? 'generated (first start)' : 'loaded';
      ctx.log.info(
        { event: logEvent('identity.signing_key.ready'), source: issuer.key.origin, file: issuer.key.file },
        `token-signing key: ${how} from DATA_DIR/keys (embedded default; set TOKEN_SIGNING_KEY to choose one)`,
      );
    } else {
      ctx.log.warn(
        { event: logEvent('identity.signing_key.missing') },
        'TOKEN_SIGNING_KEY is not set: the token endpoint is not configured and contract requests cannot be authorised',
      );
    }

    const counters = new PeriodicJob(
      async () => {
        const deleted = await deleteOldCounters(ctx.sql);
        if (deleted > 0) ctx.log.info({ deleted }, 'rate-limit counters of ended windows deleted');
      },
      COUNTER_CLEANUP_INTERVAL_MS,
      (err) => ctx.log.warn({ err }, 'rate-limit counter cleanup failed; retried later'),
      'identity-counter-cleanup',
      ctx.clock,
    );
    counters.start(0);
    ctx.shutdown.add('identity counter cleanup', () => counters.stop());

    const requestLog = new RequestLogPruner(ctx.sql, ctx.log.child({ component: 'identity-request-log' }), undefined, undefined, ctx.clock);
    requestLog.start();
    ctx.shutdown.add('identity request log pruning', () => requestLog.stop());
  },
};
