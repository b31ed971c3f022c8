/**
 * IdentityService RPC implementations: validate the request, call the domain modules
 * (api-keys, access-tokens, rate-limit, internal-clients) and queries, shape the
 * response. Thin on purpose; the rules live in those modules.
 *
 * Never logged: an API key, its secret, an access token, a marketplace client's token
 * (the logger redacts the field names too; messages never carry them).
 */
import { Code, type ServiceImpl } from '@connectrpc/connect';
import { timestampFromDate, timestampFromMs } from '@bufbuild/protobuf/wkt';
import type { MessageInitShape } from '@bufbuild/protobuf';
import {
  AuthorizeDecision,
  type AuthorizeResponseSchema,
  IdentityService,
  type InternalClientSchema,
  type RateLimitStatusSchema,
  type WorkspaceSchema,
} from '../../gen/psync/identity/v1/identity_pb';
import type { Environment } from '../../gen/psync/common/v1/environment_pb';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import type { Config } from '../kit/runtime';
import type { Sql } from '../kit/db';
import { logEvent, type Logger } from '../kit/base';
import { AccessTokens, EnvironmentName } from './access-tokens';
import { mintApiKey, parseApiKey, secretMatches } from './api-keys';
import { failure } from '../kit/rpc';
import { environments } from '../kit/base';
import { canonicalUuid, isUuid } from '../kit/base';
import { invalidApiKey, rateLimited } from './errors';
import * as q from './queries';
import { AuthorizeBatcher } from './authorize-batcher';
import { CLIENT_ROLE, mintClientToken, TOKEN_HASH_BYTES } from './internal-clients';
import { RateLimitState, rateLimitState } from './rate-limit';
import { recordTokenIssued } from '../kit/telemetry';
import { LogSampler } from '../kit/base';
import { requestLogRpcs } from './request-log-rpcs';

export interface IdentityDeps {
  sql: Sql;
  /**
   * For the rate-limit counters (Authorize's statement, the token ceiling): commits
   * without waiting for the WAL flush, so one key's concurrent requests hold its
   * counter row's lock for microseconds, not a disk flush. A crash can forget the
   * last moments' counts — erring in the partner's favour; nothing else is written
   * through it. Key revocation and every other write stay synchronous (`sql`).
   */
  counterSql: Sql;
  config: Pick<Config, 'rateLimitPerHour' | 'tokenRateLimitPerHour' | 'tokenTtlSeconds'>;
  log: Logger;
  /** Undefined when no token-signing key is configured: tokens can be neither issued nor verified. */
  tokens: AccessTokens | undefined;
}

/** Attempts at a fresh key or client id when one collides (80 random bits: practically never). */
const KEY_ID_ATTEMPTS = 3;

const toEnvironment = (env: EnvironmentName): Environment => environments.value(env);

function workspaceMessage(row: q.WorkspaceRow): MessageInitShape<typeof WorkspaceSchema> {
  return {
    workspaceId: row.workspace_id,
    name: row.name,
    environment: toEnvironment(row.environment),
    createdAt: timestampFromDate(row.created_at),
  };
}

function internalClientMessage(row: q.InternalClientRow): MessageInitShape<typeof InternalClientSchema> {
  return {
    clientId: row.client_id,
    name: row.name,
    role: row.role,
    createdAt: timestampFromDate(row.created_at),
    revokedAt: row.revoked_at ? timestampFromDate(row.revoked_at) : undefined,
  };
}

function rateLimitMessage(s: RateLimitState): MessageInitShape<typeof RateLimitStatusSchema> {
  return {
    limit: s.limit,
    windowSeconds: s.windowSeconds,
    remaining: s.remaining,
    resetSeconds: s.resetSeconds,
    limited: s.limited,
    retryAfterSeconds: s.retryAfterSeconds,
  };
}

/** The RPC implementations. */
export function identityService(deps: IdentityDeps): ServiceImpl<typeof IdentityService> {
  const { sql, counterSql, config, log, tokens } = deps;
  // Concurrent Authorize calls share one statement (authorize-batcher.ts).
  const authorizations = new AuthorizeBatcher(counterSql, config.rateLimitPerHour);
  // Refused exchanges are an outsider's to trigger: one line per reason every 10 s, with a count.
  const refusals = new LogSampler();

  const impl: ServiceImpl<typeof IdentityService> = {
    async createWorkspace(req) {
      // name (1 to 200 characters, not blank) and environment were checked against identity.proto's rules.
      const environment: EnvironmentName = environments.name(req.environment);
      const row = await q.insertWorkspace(sql, { name: req.name, environment });
      log.info({ workspace_id: row.workspace_id, environment }, 'workspace created');
      return { workspace: workspaceMessage(row) };
    },

    async getWorkspace(req) {
      const row = await q.selectWorkspace(sql, canonicalUuid(req.workspaceId));
      if (!row) throw failure(Code.NotFound, ErrorReason.WORKSPACE_NOT_FOUND, 'workspace not found');
      return { workspace: workspaceMessage(row) };
    },

    async issueKey(req) {
      const workspaceId = canonicalUuid(req.workspaceId);
      for (let attempt = 1; ; attempt++) {
        const key = mintApiKey();
        let row: q.IssuedKeyRow | undefined;
        try {
          row = await q.insertKey(sql, { keyId: key.keyId, workspaceId, secretHash: key.secretHash });
        } catch (err) {
          // 23505: the random key id already exists; mint another.
          if ((err as { code?: string }).code === '23505' && attempt < KEY_ID_ATTEMPTS) continue;
          throw err;
        }
        if (!row) throw failure(Code.NotFound, ErrorReason.WORKSPACE_NOT_FOUND, 'workspace not found');
        log.info({ event: logEvent('identity.api_key.issued'), key_id: row.key_id, workspace_id: row.workspace_id }, 'API key issued');
        return {
          keyId: row.key_id,
          apiKey: key.apiKey,
          workspaceId: row.workspace_id,
          environment: toEnvironment(row.environment),
          createdAt: timestampFromDate(row.created_at),
        };
      }
    },

    async revokeKey(req) {
      // key_id's shape (not a pasted API key) was checked against identity.proto's rules.
      const row = await q.revokeKey(sql, req.keyId);
      if (!row) throw failure(Code.NotFound, ErrorReason.KEY_NOT_FOUND, 'API key not found');
      log.info({ key_id: row.key_id, workspace_id: row.workspace_id }, 'API key revoked');
      return { keyId: row.key_id, revoked: true, workspaceId: row.workspace_id, revokedAt: timestampFromDate(row.revoked_at) };
    },

    async exchangeToken(req) {
      if (!tokens) {
        throw failure(Code.Unavailable, ErrorReason.TOKEN_ISSUER_NOT_CONFIGURED, 'the token endpoint is not configured');
      }
      const parsed = parseApiKey(req.apiKey);
      if (!parsed) {
        secretMatches('', undefined); // the same hashing work as any other refusal
        refusals.sample('malformed', (notLogged) =>
          log.info({ event: logEvent('token.exchange.refused'), reason: 'malformed', refusals_not_logged: notLogged }, 'token exchange refused'),
        );
        throw invalidApiKey();
      }
      const key = await q.selectKeyForExchange(sql, parsed.keyId);
      const matches = secretMatches(parsed.secret, key?.secret_hash);
      if (!key || !matches || key.revoked) {
        const reason = !key ? 'unknown_key' : !matches ? 'wrong_secret' : 'revoked';
        refusals.sample(reason, (notLogged) =>
          log.info({ event: logEvent('token.exchange.refused'), key_id: parsed.keyId, reason, refusals_not_logged: notLogged }, 'token exchange refused'),
        );
        throw invalidApiKey();
      }
      // Only authenticated exchanges count toward the endpoint's ceiling.
      const count = await q.countRequest(counterSql, { keyId: key.key_id, bucket: 'token', limit: config.tokenRateLimitPerHour });
      const ceiling = rateLimitState({
        limit: config.tokenRateLimitPerHour,
        counting: true,
        counted: count.counted,
        previous: count.previous,
        nowEpochSeconds: count.now_epoch,
      });
      if (ceiling.limited) {
        log.info({ key_id: key.key_id, retry_after_seconds: ceiling.retryAfterSeconds }, 'token exchange refused: ceiling reached');
        throw rateLimited(`too many token requests for this API key (at most ${ceiling.limit} per hour); retry in ${ceiling.retryAfterSeconds} s`, rateLimitMessage(ceiling));
      }
      const issued = tokens.issue({ kid: key.key_id, ws: key.workspace_id, env: key.environment, ttlSeconds: config.tokenTtlSeconds });
      recordTokenIssued();
      return {
        accessToken: issued.token,
        tokenType: 'Bearer',
        expiresIn: issued.claims.exp - issued.claims.iat,
        workspaceId: key.workspace_id,
        sandbox: key.environment === 'sandbox',
        environment: toEnvironment(key.environment),
        keyId: key.key_id,
        expiresAt: timestampFromMs(issued.claims.exp * 1000),
        rateLimit: rateLimitMessage(ceiling),
      };
    },

    async authorize(req): Promise<MessageInitShape<typeof AuthorizeResponseSchema>> {
      if (!tokens) {
        throw failure(Code.Unavailable, ErrorReason.SERVICE_UNAVAILABLE, 'access tokens cannot be verified: no token-signing key is configured');
      }
      const verified = tokens.verify(req.accessToken);
      // A bad token is an outcome, not an error; nothing is counted (no key is known).
      if (!verified.ok) return { decision: AuthorizeDecision.UNAUTHENTICATED };
      const claims = verified.claims;
      const addressed = req.workspaceId === undefined ? claims.ws : req.workspaceId.toLowerCase();
      const row = await authorizations.authorize({
        keyId: claims.kid,
        tokenWorkspaceId: claims.ws,
        // Not a UUID: cannot resolve, which is a scope mismatch (still counted).
        addressedWorkspaceId: isUuid(addressed) ? addressed : null,
        count: req.countRequest,
      });
      // Revoked (or unknown) key: 401, not counted — the statement counts only live keys.
      if (!row.key_live) return { decision: AuthorizeDecision.UNAUTHENTICATED };
      const state = rateLimitState({
        limit: config.rateLimitPerHour,
        counting: req.countRequest,
        counted: row.counted,
        previous: row.previous,
        nowEpochSeconds: row.now_epoch,
      });
      const inScope = addressed === claims.ws && row.environment === claims.env;
      return {
        decision: inScope ? AuthorizeDecision.ALLOWED : AuthorizeDecision.WORKSPACE_SCOPE_MISMATCH,
        keyId: claims.kid,
        workspaceId: claims.ws,
        environment: toEnvironment(claims.env),
        rateLimit: rateLimitMessage(state),
        tokenExpiresAt: timestampFromMs(claims.exp * 1000),
      };
    },

    async issueClient(req) {
      for (let attempt = 1; ; attempt++) {
        const minted = mintClientToken();
        let row: q.InternalClientRow;
        try {
          row = await q.insertInternalClient(sql, { clientId: minted.clientId, name: req.name, role: CLIENT_ROLE, tokenSha256: minted.tokenSha256 });
        } catch (err) {
          // 23505: the random client id (or, never in practice, the hash) already exists; mint another.
          if ((err as { code?: string }).code === '23505' && attempt < KEY_ID_ATTEMPTS) continue;
          throw err;
        }
        log.info({ event: logEvent('identity.internal_client.issued'), client_id: row.client_id, role: row.role }, 'internal API client issued');
        return { client: internalClientMessage(row), token: minted.token };
      }
    },

    async revokeClient(req) {
      // client_id's shape (not a pasted token) was checked against identity.proto's rules.
      const row = await q.revokeInternalClient(sql, req.clientId);
      if (!row) throw failure(Code.NotFound, ErrorReason.CLIENT_NOT_FOUND, 'internal API client not found');
      log.info({ client_id: row.client_id }, 'internal API client revoked');
      return { client: internalClientMessage(row) };
    },

    async listClients(req) {
      const rows = await q.selectInternalClients(sql, req.includeRevoked);
      return { clients: rows.map(internalClientMessage) };
    },

    async authenticateClient(req) {
      // Not a SHA-256 digest: it matches nothing. An answer, never an error.
      if (req.tokenSha256.length !== TOKEN_HASH_BYTES) return { authenticated: false };
      const row = await q.selectLiveClientByTokenHash(sql, req.tokenSha256);
      if (!row) return { authenticated: false };
      return { authenticated: true, clientId: row.client_id, role: row.role };
    },

    ...requestLogRpcs(sql, log.child({ component: 'request-log' })),
  };

  // Failures nobody mapped on purpose are mapped by the kit's error interceptor (kit/errors.ts).
  return impl;
}
