/**
 * The baseline of bench/gateway-auth.ts: a bare Koa handler for `GET /v1/blocks` doing,
 * in one process, the same work against the same database as the full path does
 * across gateway → identity → calendar — and nothing else:
 *
 *   1. the access token's HMAC and claims (services/identity/access-tokens.ts, the
 *      identity service's own class),
 *   2. Authorize's SQL statement (services/identity/queries.ts `authorizeBatch`: key
 *      re-check, addressed workspace, atomic rate-limit count), concurrent requests
 *      batched into one statement by the same AuthorizeBatcher identity uses,
 *   3. the calendar's ListBlocks (services/calendar/blocks.ts `listBlocks`: the same
 *      query, page 1 of 50), presented as the gateway does.
 *
 * No query validation, no problem documents, no rate-limit headers, no access log, no
 * internal RPC. Two postgres.js pools of DATABASE_POOL_SIZE, like the identity and
 * calendar services of the full system, so both sides have the same connections.
 *
 *   DATABASE_URL=… TOKEN_SIGNING_KEY=… [PORT=0] [RATE_LIMIT_PER_HOUR] [DATABASE_POOL_SIZE]
 *   node --import tsx bench/support/bare-auth-server.ts
 *
 * Prints one JSON line `{"listening": "http://127.0.0.1:<port>"}` when ready; exits on SIGTERM.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { create } from '@bufbuild/protobuf';
import Koa from 'koa';
import { ListBlocksRequestSchema, ListBlocksResponseSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import { presentBlockList } from '../../gateway/presenters/blocks';
import { listBlocks } from '../../services/calendar/blocks';
import type { CalendarDeps } from '../../services/calendar/calendar-deps';
import { AccessTokens } from '../../services/identity/access-tokens';
import { AuthorizeBatcher } from '../../services/identity/authorize-batcher';
import { createSql } from '../../services/kit/database';

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

function required(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
}

async function main(): Promise<void> {
  const url = required('DATABASE_URL');
  const tokens = new AccessTokens(Buffer.from(required('TOKEN_SIGNING_KEY'), 'base64'));
  const limit = Number(process.env.RATE_LIMIT_PER_HOUR ?? '1000000');
  const pool = Number(process.env.DATABASE_POOL_SIZE ?? '10');
  // As identity's counter instance (database.ts asyncCommitSqlFor): synchronous_commit = off.
  const identitySql = createSql(url, { max: pool, applicationName: 'bench-bare-identity', asyncCommit: true });
  const authorizations = new AuthorizeBatcher(identitySql, limit);
  const calendarSql = createSql(url, { max: pool, applicationName: 'bench-bare-calendar' });
  // listBlocks reads only `sql` of its dependencies.
  const calendar = { sql: calendarSql } as unknown as CalendarDeps;

  const app = new Koa();
  app.use(async (ctx) => {
    if (ctx.method !== 'GET' || ctx.path !== '/v1/blocks') {
      ctx.status = 404;
      return;
    }
    const m = BEARER.exec(ctx.get('Authorization'));
    const verified = m ? tokens.verify(m[1]!) : undefined;
    if (!verified?.ok) {
      ctx.status = 401;
      return;
    }
    const c = verified.claims;
    const row = await authorizations.authorize({ keyId: c.kid, tokenWorkspaceId: c.ws, addressedWorkspaceId: c.ws, count: true });
    if (!row.key_live) {
      ctx.status = 401;
      return;
    }
    if (row.counted === null) {
      ctx.status = 429;
      return;
    }
    if (row.environment !== c.env || c.env !== 'sandbox') {
      ctx.status = 403;
      return;
    }
    const res = await listBlocks(calendar, create(ListBlocksRequestSchema, { workspaceId: c.ws, page: 1, pageSize: 50 }));
    ctx.status = 200;
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = JSON.stringify(presentBlockList(create(ListBlocksResponseSchema, res)));
  });

  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(Number(process.env.PORT ?? '0'), '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ listening: `http://127.0.0.1:${port}` })}\n`);

  process.once('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void Promise.all([identitySql.end({ timeout: 5 }), calendarSql.end({ timeout: 5 })]).finally(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`bare-auth-server: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
