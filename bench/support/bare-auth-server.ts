/**
 * The baseline the gateway path is compared with (bench/gateway-auth.ts, bench/latency.ts):
 * one node:http handler on postgres.js, in one process, doing the least work a correct
 * answer to the authenticated `GET /v1/blocks` and `PUT /v1/blocks/{external_uid}`
 * needs, against the same database and schemas as the full system — and nothing else:
 *
 *   1. the access token's HMAC and claims (services/identity/access-tokens.ts, the
 *      identity service's own class);
 *   2. Authorize's SQL statement (services/identity/queries.ts `authorizeBatch`: key
 *      re-check, addressed workspace, atomic rate-limit count), concurrent requests
 *      batched into one statement by the same AuthorizeBatcher identity uses (a lone
 *      request runs its statement at once);
 *   3. GET: the calendar's ListBlocks statement (services/calendar/blocks-list.ts, page 1
 *      of 50), presented as the gateway does;
 *      PUT: the body's fields checked by hand, the listing's ownership read once per
 *      listing and then remembered (the calendar caches it too), and the one
 *      `calendar.put_block` statement the calendar runs.
 *
 * No framework, schema validation, problem documents, rate-limit headers, access log,
 * metrics, tracing or internal RPC. Two postgres.js pools of DATABASE_POOL_SIZE, like
 * the identity and calendar services of the full system, so both sides have the same
 * connections.
 *
 *   DATABASE_URL=… TOKEN_SIGNING_KEY=… [PORT=0] [RATE_LIMIT_PER_HOUR] [DATABASE_POOL_SIZE]
 *   node --import tsx bench/support/bare-auth-server.ts
 *
 * Prints one JSON line `{"listening": "http://127.0.0.1:<port>"}` when ready; exits on SIGTERM.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { create } from '@bufbuild/protobuf';
import { ListBlocksRequestSchema, ListBlocksResponseSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import { presentBlockList } from '../../gateway/presenters/blocks';
import { listBlocks } from '../../services/calendar/blocks';
import type { CalendarDeps } from '../../services/calendar/calendar-deps';
import { checkRange } from '../../services/domain';
import { AccessTokens } from '../../services/identity/access-tokens';
import { AuthorizeBatcher } from '../../services/identity/authorize-batcher';
import { createSql } from '../../services/kit/db';

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const BLOCK_PATH = /^\/v1\/blocks\/([^/?]{1,255})$/;
const REASONS = new Set(['reserved', 'maintenance', 'owner_stay', 'other']);
const MAX_BODY = 64 * 1024;

function required(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
}

function send(res: ServerResponse, status: number, body?: string): void {
  if (body === undefined) {
    res.writeHead(status, { 'content-length': '0' }).end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', () => resolve(size > MAX_BODY ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

interface PutBody {
  listingId: string;
  checkIn: string;
  checkOut: string;
  reason: string;
}

/** The PUT body's fields, or undefined when anything is off (the baseline answers 400 without details). */
function parsePut(text: string | undefined): PutBody | undefined {
  if (text === undefined) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) if (k !== 'listing_id' && k !== 'check_in' && k !== 'check_out' && k !== 'reason') return undefined;
  const { listing_id: listingId, check_in: checkIn, check_out: checkOut } = b;
  const reason = b.reason ?? 'reserved';
  if (typeof listingId !== 'string' || typeof checkIn !== 'string' || typeof checkOut !== 'string' || typeof reason !== 'string') return undefined;
  if (listingId.length === 0 || listingId.length > 128 || !REASONS.has(reason)) return undefined;
  return { listingId, checkIn, checkOut, reason };
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
  /** `workspace\0listing` pairs known to match (a listing never changes workspace). */
  const owned = new Set<string>();

  /** The caller's workspace, or the status to answer. */
  async function authorize(req: IncomingMessage): Promise<{ ws: string } | { status: number }> {
    const m = BEARER.exec(req.headers.authorization ?? '');
    const verified = m ? tokens.verify(m[1]!) : undefined;
    if (!verified?.ok) return { status: 401 };
    const c = verified.claims;
    const row = await authorizations.authorize({ keyId: c.kid, tokenWorkspaceId: c.ws, addressedWorkspaceId: c.ws, count: true });
    if (!row.key_live) return { status: 401 };
    if (row.counted === null) return { status: 429 };
    if (row.environment !== c.env || c.env !== 'sandbox') return { status: 403 };
    return { ws: c.ws };
  }

  async function getBlocks(ws: string, res: ServerResponse): Promise<void> {
    const list = await listBlocks(calendar, create(ListBlocksRequestSchema, { workspaceId: ws, page: 1, pageSize: 50 }));
    send(res, 200, JSON.stringify(presentBlockList(create(ListBlocksResponseSchema, list))));
  }

  async function putBlock(ws: string, uid: string, text: string | undefined, res: ServerResponse): Promise<void> {
    const body = parsePut(text);
    const span = body && checkRange(body.checkIn, body.checkOut).span;
    if (!body || !span) return send(res, 400);
    const key = `${ws}\u0000${body.listingId}`;
    if (!owned.has(key)) {
      const [row] = await calendarSql`select 1 from catalog.listings where listing_id = ${body.listingId} and workspace_id = ${ws}`;
      if (!row) return send(res, 404);
      owned.add(key);
    }
    const [row] = await calendarSql<{ outcome: string; conflicts: string[]; nights: number; listing_id: string }[]>`
      select outcome, conflicts, nights, listing_id
      from calendar.put_block(${ws}, ${uid}, ${body.listingId}, ${span.checkIn}::date, ${span.checkOut}::date, ${body.reason}, ${new Date()}, '{}'::jsonb)`;
    if (!row || row.outcome === 'conflict') return send(res, 409);
    send(res, 200, JSON.stringify({ result: row.outcome === 'created' ? 'created' : 'updated', nights: row.nights, listing_id: row.listing_id }));
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = req.url ?? '';
    const isList = req.method === 'GET' && (path === '/v1/blocks' || path.startsWith('/v1/blocks?'));
    const put = req.method === 'PUT' ? BLOCK_PATH.exec(path) : null;
    if (!isList && !put) {
      req.resume();
      return send(res, 404);
    }
    // The body is read while Authorize runs, as the gateway does.
    const text = put ? readBody(req) : undefined;
    const who = await authorize(req);
    if ('status' in who) {
      req.resume();
      return send(res, who.status);
    }
    if (isList) return getBlocks(who.ws, res);
    return putBlock(who.ws, decodeURIComponent(put![1]!), await text, res);
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      process.stderr.write(`bare-auth-server: ${err instanceof Error ? err.message : String(err)}\n`);
      if (!res.headersSent) send(res, 500);
      else res.destroy();
    });
  });
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
