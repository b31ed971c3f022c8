/**
 * The request log's SQL (services/identity/request-log.ts), its RPCs' paging
 * (request-log-rpcs.ts) and its pruner (request-log-pruner.ts): records are stored once
 * per request id, listed newest first per workspace with exact cursor paging and
 * filters, found by id in any workspace, and bounded by count per workspace and by age;
 * a batch's bad records are refused alone (request-log-intake.ts).
 *
 * Real PostgreSQL when DATABASE_URL is set, else embedded PGlite.
 */
import { randomUUID } from 'node:crypto';
import { Code, ConnectError } from '@connectrpc/connect';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import {
  GetRequestRequestSchema,
  GetRequestResponseSchema,
  ListRequestsRequestSchema,
  ListRequestsResponseSchema,
  RecordRequestsRequestSchema,
  RecordedRequestSchema,
  type RecordedRequest,
} from '../../gen/psync/identity/v1/identity_pb';
import { identityModule } from '../../services/identity/module';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { decodeCursor, encodeCursor, insertRequests, type RequestRecord } from '../../services/identity/request-log';
import { requestLogRpcs } from '../../services/identity/request-log-rpcs';
import { takeIn } from '../../services/identity/request-log-intake';
import { pruneRequestLogOnce, RequestLogPruner } from '../../services/identity/request-log-pruner';
import { createLogger } from '../../services/kit/base';
import { startTestDatabase, type TestDatabase } from '../support/database';

let db: TestDatabase;
beforeAll(async () => {
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'identity', sources: [KIT_MIGRATIONS, identityModule.migrations] });
}, 60_000);
afterAll(async () => db?.stop());

const NOW_US = BigInt(Date.now()) * 1000n;
const SECOND_US = 1_000_000n;

function record(workspaceId: string, ageSeconds: number, extra: Partial<RequestRecord> = {}): RequestRecord {
  return {
    requestId: randomUUID(),
    workspaceId,
    keyId: 'abcdefghijklmnop',
    receivedAtMicros: NOW_US - BigInt(ageSeconds) * SECOND_US,
    method: 'GET',
    route: '/v1/blocks',
    pathParams: {},
    status: 200,
    code: undefined,
    errors: [],
    durationMs: 3,
    ...extra,
  };
}

const rpcs = () => requestLogRpcs(db.sql, createLogger({ level: 'silent', name: 'request-log-test' }));
const ctx = {} as never;

async function list(workspaceId: string, opts: { status?: number; code?: string; limit?: number; after?: string } = {}) {
  const req = create(ListRequestsRequestSchema, { workspaceId, limit: opts.limit ?? 0, status: opts.status, code: opts.code, after: opts.after });
  return create(ListRequestsResponseSchema, await rpcs().listRequests(req, ctx));
}

async function get(requestId: string): Promise<RecordedRequest> {
  return create(GetRequestResponseSchema, await rpcs().getRequest(create(GetRequestRequestSchema, { requestId }), ctx)).request!;
}

async function countOf(workspaceId: string): Promise<number> {
  const [row] = await db.sql<{ n: number }[]>`select count(*)::int as n from identity.request_log where workspace_id = ${workspaceId}`;
  return row!.n;
}

test('the cursor round-trips exactly (microseconds, request id) and is 32 base64url characters', () => {
  const c = { receivedAtMicros: 1_764_374_400_123_456n, requestId: randomUUID() };
  const text = encodeCursor(c);
  expect(text).toMatch(/^[A-Za-z0-9_-]{32}$/);
  expect(decodeCursor(text)).toEqual(c);
});

test('RecordRequests stores each request once; GetRequest finds it in any workspace with its metadata; unknown is NOT_FOUND', async () => {
  const ws = randomUUID();
  const requestId = randomUUID();
  const msg = create(RecordRequestsRequestSchema, {
    requests: [
      {
        requestId,
        workspaceId: ws,
        keyId: 'abcdefghijklmnop',
        receivedAt: { seconds: 1_764_374_400n, nanos: 123_000_000 },
        method: 'PUT',
        route: '/v1/blocks/{external_uid}',
        pathParams: { external_uid: 'b-1' },
        status: 400,
        code: 'validation_failed',
        errors: [
          { field: 'check_in', code: 'format' },
          { field: 'nights', code: 'maximum' },
        ],
        durationMs: 12,
      },
    ],
  });
  expect((await rpcs().recordRequests(msg, ctx)).recorded).toBe(1);
  expect((await rpcs().recordRequests(msg, ctx)).recorded).toBe(0);

  const got = await get(requestId.toUpperCase());
  const plain = (r: RecordedRequest) => ({ ...r, $typeName: undefined, receivedAt: undefined, errors: r.errors.map((e) => ({ field: e.field, code: e.code })) });
  expect(plain(got)).toEqual(plain(msg.requests[0]!));
  expect([got.receivedAt?.seconds, got.receivedAt?.nanos]).toEqual([1_764_374_400n, 123_000_000]);

  const err = await get(randomUUID()).then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  expect(err?.code).toBe(Code.NotFound);
});

test('ListRequests: newest first, only the workspace, filters by status and code, pages by cursor without loss or repeat', async () => {
  const ws = randomUUID();
  const other = randomUUID();
  // 7 records, two of them at the very same microsecond (the cursor breaks the tie by id).
  const records = [
    record(ws, 60),
    record(ws, 50, { status: 400, code: 'validation_failed', errors: [{ field: 'from', code: 'format' }] }),
    record(ws, 40, { status: 404, code: 'delivery_not_found' }),
    record(ws, 30),
    record(ws, 30),
    record(ws, 20, { status: 400, code: 'validation_failed' }),
    record(ws, 10),
  ];
  await insertRequests(db.sql, [...records, record(other, 5)]);
  const newestFirst = [...records]
    .sort((a, b) => (a.receivedAtMicros === b.receivedAtMicros ? (a.requestId < b.requestId ? 1 : -1) : a.receivedAtMicros < b.receivedAtMicros ? 1 : -1))
    .map((r) => r.requestId);

  const all = await list(ws);
  expect(all.requests.map((r) => r.requestId)).toEqual(newestFirst);
  expect(all.nextCursor).toBeUndefined();

  const seen: string[] = [];
  let after: string | undefined;
  let pages = 0;
  do {
    const page = await list(ws, { limit: 2, after });
    seen.push(...page.requests.map((r) => r.requestId));
    after = page.nextCursor;
    pages++;
  } while (after);
  expect(seen).toEqual(newestFirst);
  expect(pages).toBe(4);

  expect((await list(ws, { status: 400 })).requests.map((r) => r.requestId)).toEqual([records[5]!.requestId, records[1]!.requestId]);
  expect((await list(ws, { code: 'delivery_not_found' })).requests.map((r) => r.requestId)).toEqual([records[2]!.requestId]);
  expect((await list(ws, { status: 400, code: 'delivery_not_found' })).requests).toEqual([]);
  expect((await list(randomUUID())).requests).toEqual([]);

  // Any cursor of the right shape is a filter, never an error: its time is held to year 1970 .. 9999.
  expect((await list(ws, { after: '_'.repeat(32) })).requests).toEqual([]);
  expect((await list(ws, { after: 'A'.repeat(32) })).requests).toEqual([]);
  expect((await list(ws, { after: `A4REDMxzX${'_'.repeat(23)}` })).requests.map((r) => r.requestId)).toEqual(newestFirst);
  expect((await list(ws, { after: `f${'_'.repeat(31)}` })).requests.map((r) => r.requestId)).toEqual(newestFirst);
});

test('the pruner keeps at most N rows per workspace (the newest) and none older than D days', async () => {
  const big = randomUUID();
  const small = randomUUID();
  const old = randomUUID();
  const bigRecords = Array.from({ length: 30 }, (_, i) => record(big, 100 + i));
  await insertRequests(db.sql, [...bigRecords, ...Array.from({ length: 5 }, (_, i) => record(small, i)), record(old, 3 * 86_400), record(old, 60)]);

  const bounds = { maxPerWorkspace: 10, retentionDays: 2 };
  // Small batches: several statements, each bounded.
  let deleted = 0;
  for (let n = -1; n !== 0;) {
    n = await pruneRequestLogOnce(db.sql, bounds, 7);
    expect(n).toBeLessThanOrEqual(7);
    deleted += n;
  }
  expect(await countOf(big)).toBe(10);
  expect(await countOf(small)).toBe(5);
  expect(await countOf(old)).toBe(1);
  expect(deleted).toBeGreaterThanOrEqual(21);
  // The newest ten of `big` are the ones kept.
  expect((await list(big)).requests.map((r) => r.requestId)).toEqual(bigRecords.slice(0, 10).map((r) => r.requestId));
});

test('RequestLogPruner runs in housekeeping: start() prunes, stop() waits for the run', async () => {
  const ws = randomUUID();
  await insertRequests(
    db.sql,
    Array.from({ length: 4 }, (_, i) => record(ws, i)),
  );
  const log = createLogger({ level: 'silent', name: 'pruner-test' });
  const pruner = new RequestLogPruner(db.sql, log, { maxPerWorkspace: 2, retentionDays: 14 }, 60_000);
  pruner.start();
  for (let i = 0; i < 100 && (await countOf(ws)) > 2; i++) await new Promise((r) => setTimeout(r, 20));
  await pruner.stop();
  expect(await countOf(ws)).toBe(2);
});

describe('RecordRequests refuses a bad record alone (request-log-intake.ts)', () => {
  type Init = MessageInitShape<typeof RecordedRequestSchema>;
  const message = (workspaceId: string, over: Partial<Record<keyof Init, unknown>> = {}) =>
    create(RecordedRequestSchema, {
      requestId: randomUUID(),
      workspaceId,
      keyId: 'abcdefghijklmnop',
      receivedAt: { seconds: 1_764_374_400n, nanos: 0 },
      method: 'GET',
      route: '/v1/blocks',
      status: 200,
      ...over,
    } as Init);

  test('records breaking the .proto rules or holding unstorable text are refused and counted; the rest of the batch is stored', async () => {
    const ws = randomUUID();
    const other = randomUUID();
    const batch = [
      message(ws),
      message(other, { status: 400, code: 'validation_failed', errors: [{ field: '\u0000', code: 'unknown_field' }] }),
      message(ws),
      message(other, { status: 400, code: 'validation_failed', errors: [{ field: 'a'.repeat(513), code: 'invalid' }] }),
      message(other, { pathParams: { external_uid: 'x\u0000' } }),
      message(ws),
    ];
    const answer = await rpcs().recordRequests(create(RecordRequestsRequestSchema, { requests: batch }), ctx);
    expect(answer).toEqual({ recorded: 3, refused: 3 });
    expect(await countOf(ws)).toBe(3);
    expect(await countOf(other)).toBe(0);
  });

  test('a record the database refuses after the checks is refused alone: the batch falls back to one statement per record', async () => {
    const ws = randomUUID();
    const batch = [message(ws), message(ws, { route: '/v1/refused-by-the-database' }), message(ws)];
    // The database's own check on `method` (1 to 16 characters) refuses the row made of the second record.
    const toRow = (r: RecordedRequest) => ({ ...record(ws, 0), requestId: r.requestId, method: r.route === '/v1/refused-by-the-database' ? '' : r.method });
    const intake = await takeIn(db.sql, batch, toRow);
    expect(intake).toEqual({ recorded: 2, refused: [{ index: 1, reason: { sqlState: '23514' } }] });
    expect(await countOf(ws)).toBe(2);
  });

  test('a lost connection is not a record’s fault: the call fails', async () => {
    const failing = (() => Promise.reject(Object.assign(new Error('gone'), { code: 'ECONNRESET' }))) as unknown as typeof db.sql;
    await expect(takeIn(failing, [message(randomUUID())], (r) => ({ ...record(randomUUID(), 0), requestId: r.requestId }))).rejects.toThrow('gone');
  });
});
