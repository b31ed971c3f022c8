/**
 * The per-key quota holds exactly under concurrency (with the default quota, exactly 600
 * succeed when two gateway processes share one key under concurrent load; here it is 10):
 * a burst of 30 concurrent Authorize calls for one key gets exactly 10 counted and 20
 * limited, and the remaining values 9…0 each appear exactly once.
 *
 * On a real PostgreSQL (DATABASE_URL set) the burst is split between TWO identity
 * processes sharing one database and one TOKEN_SIGNING_KEY — the counter is in the
 * database, not in a process. On the embedded default (one process by construction)
 * one process takes the whole burst.
 */
import { randomBytes } from 'node:crypto';
import { AuthorizeDecision } from '../../gen/psync/identity/v1/identity_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { createSql } from '../../services/kit/db';
import { backends, createScratchDatabase, RunningSystem, ScratchDatabase, startSystem, stopAllSystems } from '../support/system';
import { awayFromWindowEdge, identityClient, IdentityClient } from './helpers';

/** A first embedded start runs initdb: slow on a busy machine. */
const START_TIMEOUT_MS = 120_000;

const LIMIT = 10;
const BURST = 30;

const shared = Boolean(process.env.DATABASE_URL);

describe(`rate limit under concurrency (database: ${backends.database}; ${shared ? 'two identity processes, one database' : 'one process (embedded)'})`, () => {
  const systems: RunningSystem[] = [];
  const conns: { client: IdentityClient; close(): void }[] = [];
  let scratch: ScratchDatabase | undefined;

  beforeAll(async () => {
    const env: Record<string, string> = { RATE_LIMIT_PER_HOUR: String(LIMIT) };
    if (shared) {
      scratch = await createScratchDatabase();
      env.DATABASE_URL = scratch.url;
      env.TOKEN_SIGNING_KEY = randomBytes(32).toString('base64');
    }
    const count = shared ? 2 : 1;
    // Started together: migrations serialise under the advisory lock.
    systems.push(...(await Promise.all(Array.from({ length: count }, () => startSystem({ timeoutMs: START_TIMEOUT_MS, role: 'identity', env })))));
    for (const s of systems) conns.push(identityClient(s.internalUrl));
  }, 3 * START_TIMEOUT_MS);

  beforeEach(() => awayFromWindowEdge(), 30_000);

  afterAll(async () => {
    for (const c of conns) c.close();
    await stopAllSystems();
    await scratch?.drop();
  });

  test(`a burst of ${BURST} concurrent Authorize calls: exactly ${LIMIT} counted, the rest limited`, async () => {
    const admin = conns[0]!.client;
    const ws = (await admin.createWorkspace({ name: 'burst', environment: Environment.SANDBOX })).workspace!;
    const key = await admin.issueKey({ workspaceId: ws.workspaceId });
    const { accessToken } = await admin.exchangeToken({ apiKey: key.apiKey });

    const results = await Promise.all(Array.from({ length: BURST }, (_, i) => conns[i % conns.length]!.client.authorize({ accessToken, countRequest: true })));
    for (const r of results) expect(r.decision).toBe(AuthorizeDecision.ALLOWED);
    const counted = results.filter((r) => !r.rateLimit!.limited);
    const limited = results.filter((r) => r.rateLimit!.limited);
    expect(counted).toHaveLength(LIMIT);
    expect(limited).toHaveLength(BURST - LIMIT);
    expect(counted.map((r) => r.rateLimit!.remaining).sort((a, b) => a - b)).toEqual(Array.from({ length: LIMIT }, (_, i) => i));
    for (const r of limited) {
      expect(r.rateLimit).toMatchObject({ remaining: 0, limit: LIMIT });
      expect(r.rateLimit!.retryAfterSeconds).toBe(r.rateLimit!.resetSeconds);
    }
    if (shared) {
      // both processes served part of the burst
      expect(new Set(results.map((_, i) => i % conns.length)).size).toBe(2);
      const sql = createSql(scratch!.url, { max: 1 });
      try {
        const [row] = await sql<{ count: number }[]>`
          select count from identity.rate_counters where key_id = ${key.keyId} and bucket = 'contract'`;
        expect(row!.count).toBe(LIMIT);
      } finally {
        await sql.end({ timeout: 5 });
      }
    }
    // Every process now sees the quota used up.
    for (const c of conns) {
      const peek = await c.client.authorize({ accessToken, countRequest: false });
      expect(peek.rateLimit).toMatchObject({ remaining: 0, limited: true });
    }
  });

  test('a token issued by one process is accepted by the other (shared signing key)', async () => {
    const [a, b] = [conns[0]!.client, conns[conns.length - 1]!.client];
    const ws = (await a.createWorkspace({ name: 'cross', environment: Environment.PRODUCTION })).workspace!;
    const key = await b.issueKey({ workspaceId: ws.workspaceId });
    const { accessToken } = await a.exchangeToken({ apiKey: key.apiKey });
    const res = await b.authorize({ accessToken, countRequest: true });
    expect(res.decision).toBe(AuthorizeDecision.ALLOWED);
    expect(res.rateLimit!.remaining).toBe(LIMIT - 1);
    await a.revokeKey({ keyId: key.keyId });
    expect((await b.authorize({ accessToken, countRequest: true })).decision).toBe(AuthorizeDecision.UNAUTHENTICATED);
  });

  test('the default token lifetime is 900 s', async () => {
    const c = conns[0]!.client;
    const ws = (await c.createWorkspace({ name: 'ttl', environment: Environment.SANDBOX })).workspace!;
    const key = await c.issueKey({ workspaceId: ws.workspaceId });
    expect((await c.exchangeToken({ apiKey: key.apiKey })).expiresIn).toBe(900);
  });
});
