/**
 * The identity service over its internal Connect/gRPC API, in its own process
 * (`main.ts identity`): workspaces, API keys, token exchange and Authorize —
 * spec "Authentication" 1–7 and "Limits", docs/decisions.md "Identity" and
 * "Gateway contract" (rate-limit window, token ceiling).
 *
 * The system runs with RATE_LIMIT_PER_HOUR=5 (the 600 of production, made small),
 * TOKEN_RATE_LIMIT_PER_HOUR=3 and TOKEN_TTL_SECONDS=600. On a real PostgreSQL
 * (DATABASE_URL set) the tests also look into the identity tables; on the embedded
 * default the database lives inside the child, so they check behaviour only.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Code } from '@connectrpc/connect';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import { AuthorizeDecision, RateLimitStatusSchema } from '../../gen/psync/identity/v1/identity_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { AccessTokens } from '../../services/identity/access-tokens';
import { fakeClock } from '../support/fake-clock';
import { createSql, Sql } from '../../services/kit/db';
import { backends, logEvents, RunningSystem, startSystem, stopAllSystems } from '../support/system';
import {
  awayFromWindowEdge,
  claimsOf,
  connectErrorOf,
  fingerprint,
  identityClient,
  IdentityClient,
  localSecondsLeftInHour,
  reasonOf,
  retryAfterOf,
  signingKeyOf,
  violationsOf,
} from './helpers';

/** A first embedded start runs initdb: slow on a busy machine. */
const START_TIMEOUT_MS = 120_000;

const LIMIT = 5;
const TOKEN_LIMIT = 3;
const TTL = 600;

describe(`identity service (database: ${backends.database})`, () => {
  let system: RunningSystem;
  let conn: { client: IdentityClient; close(): void };
  let c: IdentityClient;
  /** Direct access to the system's database; real PostgreSQL only. */
  let db: Sql | undefined;
  /** Every key and token handed out, to prove none reached a log line. */
  const secrets: string[] = [];

  beforeAll(async () => {
    system = await startSystem({
      timeoutMs: START_TIMEOUT_MS,
      role: 'identity',
      env: {
        RATE_LIMIT_PER_HOUR: String(LIMIT),
        TOKEN_RATE_LIMIT_PER_HOUR: String(TOKEN_LIMIT),
        TOKEN_TTL_SECONDS: String(TTL),
        // A real PostgreSQL needs a configured key (no local generation there); embedded generates one.
        ...(process.env.DATABASE_URL ? { TOKEN_SIGNING_KEY: randomBytes(32).toString('base64') } : {}),
      },
    });
    conn = identityClient(system.internalUrl);
    c = conn.client;
    if (system.env.DATABASE_URL) db = createSql(system.env.DATABASE_URL, { max: 2 });
  }, 3 * START_TIMEOUT_MS);

  beforeEach(() => awayFromWindowEdge(), 30_000);

  afterAll(async () => {
    conn?.close();
    await db?.end({ timeout: 5 });
    await stopAllSystems();
  });

  async function workspace(environment = Environment.SANDBOX) {
    const res = await c.createWorkspace({ name: `ws ${randomBytes(4).toString('hex')}`, environment });
    return res.workspace!;
  }

  async function key(environment = Environment.SANDBOX) {
    const ws = await workspace(environment);
    const k = await c.issueKey({ workspaceId: ws.workspaceId });
    secrets.push(k.apiKey, k.apiKey.slice(21));
    return { ws, ...k };
  }

  async function token(environment = Environment.SANDBOX) {
    const k = await key(environment);
    const t = await c.exchangeToken({ apiKey: k.apiKey });
    secrets.push(t.accessToken);
    return { ...k, token: t.accessToken, exchange: t };
  }

  describe('workspaces', () => {
    test('create and read back; the environment is fixed at creation', async () => {
      const created = await c.createWorkspace({ name: 'Acme Stays', environment: Environment.PRODUCTION });
      const ws = created.workspace!;
      expect(ws.workspaceId).toMatch(/^[0-9a-f-]{36}$/);
      expect(ws).toMatchObject({ name: 'Acme Stays', environment: Environment.PRODUCTION });
      expect(Math.abs(timestampMs(ws.createdAt!) - Date.now())).toBeLessThan(60_000);
      const read = await c.getWorkspace({ workspaceId: ws.workspaceId });
      expect(read.workspace).toEqual(ws);
    });

    test('name 1..200 characters and an environment are required', async () => {
      await expect(c.createWorkspace({ name: 'é'.repeat(200), environment: Environment.SANDBOX })).resolves.toBeDefined();
      for (const [req, field, code] of [
        [{ name: '', environment: Environment.SANDBOX }, 'name', 'required'],
        [{ name: '   ', environment: Environment.SANDBOX }, 'name', 'required'],
        [{ name: 'x'.repeat(201), environment: Environment.SANDBOX }, 'name', 'max_length'],
        [{ name: 'x', environment: Environment.UNSPECIFIED }, 'environment', 'required'],
        [{ name: 'x', environment: 7 as Environment }, 'environment', 'enum'],
      ] as const) {
        const err = await connectErrorOf(c.createWorkspace(req));
        expect(err.code).toBe(Code.InvalidArgument);
        expect(reasonOf(err)).toBe(ErrorReason.VALIDATION_FAILED);
        expect(violationsOf(err)).toEqual([{ field, code }]);
      }
    });

    test('an unknown workspace is NOT_FOUND; a malformed id INVALID_ARGUMENT', async () => {
      const err = await connectErrorOf(c.getWorkspace({ workspaceId: randomUUID() }));
      expect(err.code).toBe(Code.NotFound);
      expect(reasonOf(err)).toBe(ErrorReason.WORKSPACE_NOT_FOUND);
      const bad = await connectErrorOf(c.getWorkspace({ workspaceId: 'nope' }));
      expect(bad.code).toBe(Code.InvalidArgument);
      expect(violationsOf(bad)).toEqual([{ field: 'workspace_id', code: 'format' }]);
    });

    (process.env.DATABASE_URL ? test : test.skip)('the database refuses to change an environment (real PostgreSQL)', async () => {
      const ws = await workspace(Environment.SANDBOX);
      await expect(db!`update identity.workspaces set environment = 'production' where workspace_id = ${ws.workspaceId}`).rejects.toMatchObject({
        code: '55000',
      });
    });
  });

  describe('API keys', () => {
    test('issued for one workspace: psk_<key_id>_<secret>, a 256-bit secret, shown once', async () => {
      const ws = await workspace(Environment.PRODUCTION);
      const k = await c.issueKey({ workspaceId: ws.workspaceId });
      secrets.push(k.apiKey);
      expect(k.apiKey).toMatch(/^psk_[a-z2-7]{16}_[A-Za-z0-9_-]{43}$/);
      expect(k.apiKey.startsWith(`psk_${k.keyId}_`)).toBe(true);
      expect(Buffer.from(k.apiKey.slice(21), 'base64url').length * 8).toBeGreaterThanOrEqual(256);
      expect(k).toMatchObject({ workspaceId: ws.workspaceId, environment: Environment.PRODUCTION });
      const second = await c.issueKey({ workspaceId: ws.workspaceId });
      secrets.push(second.apiKey);
      expect(second.keyId).not.toBe(k.keyId);
      expect(second.apiKey.slice(21)).not.toBe(k.apiKey.slice(21));
    });

    // Embedded: the database is inside the child; startup.test.ts scans its files instead.
    (process.env.DATABASE_URL ? test : test.skip)('only a hash is stored: the row holds the key id and SHA-256 of the secret, never the secret (real PostgreSQL)', async () => {
      const k = await key();
      const secret = k.apiKey.slice(21);
      const [row] = await db!<{ key_id: string; secret_hash: Buffer; whole: string }[]>`
        select key_id, secret_hash, row_to_json(k)::text as whole from identity.api_keys k where key_id = ${k.keyId}`;
      expect(row!.secret_hash.equals(createHash('sha256').update(secret).digest())).toBe(true);
      expect(row!.whole).not.toContain(secret);
      expect(row!.whole).not.toContain(Buffer.from(secret, 'base64url').toString('hex'));
    });

    test('IssueKey for an unknown workspace is NOT_FOUND', async () => {
      const err = await connectErrorOf(c.issueKey({ workspaceId: randomUUID() }));
      expect(err.code).toBe(Code.NotFound);
      expect(reasonOf(err)).toBe(ErrorReason.WORKSPACE_NOT_FOUND);
    });

    test('RevokeKey is idempotent (same revoked_at); an unknown key is NOT_FOUND', async () => {
      const k = await key();
      const first = await c.revokeKey({ keyId: k.keyId });
      expect(first).toMatchObject({ keyId: k.keyId, revoked: true, workspaceId: k.workspaceId });
      const again = await c.revokeKey({ keyId: k.keyId });
      expect(again.revoked).toBe(true);
      expect(again.revokedAt).toEqual(first.revokedAt);
      const err = await connectErrorOf(c.revokeKey({ keyId: 'aaaaaaaaaaaaaaaa' }));
      expect(err.code).toBe(Code.NotFound);
      expect(reasonOf(err)).toBe(ErrorReason.KEY_NOT_FOUND);
    });

    test('RevokeKey given the whole API key refuses without echoing it', async () => {
      const k = await key();
      const err = await connectErrorOf(c.revokeKey({ keyId: k.apiKey }));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.message).not.toContain(k.apiKey.slice(21));
      // and the key still works
      await expect(c.exchangeToken({ apiKey: k.apiKey })).resolves.toBeDefined();
    });
  });

  describe('token exchange', () => {
    test('200 body fields: access_token, Bearer, expires_in = TOKEN_TTL_SECONDS, workspace_id, sandbox', async () => {
      const before = Math.floor(Date.now() / 1000);
      const t = await token(Environment.SANDBOX);
      expect(t.exchange).toMatchObject({
        tokenType: 'Bearer',
        expiresIn: TTL,
        workspaceId: t.workspaceId,
        sandbox: true,
        environment: Environment.SANDBOX,
        keyId: t.keyId,
      });
      expect(t.token).toMatch(/^pst_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
      const claims = claimsOf(t.token);
      expect(claims).toMatchObject({ v: 1, kid: t.keyId, ws: t.workspaceId, env: 'sandbox' });
      expect((claims.exp as number) - (claims.iat as number)).toBe(TTL);
      expect(claims.iat as number).toBeGreaterThanOrEqual(before);
      expect(timestampMs(t.exchange.expiresAt!)).toBe((claims.exp as number) * 1000);
      const prod = await token(Environment.PRODUCTION);
      expect(prod.exchange).toMatchObject({ sandbox: false, environment: Environment.PRODUCTION });
    });

    test('unknown key, revoked key, wrong secret and malformed keys: one identical UNAUTHENTICATED', async () => {
      const k = await key();
      const revoked = await key();
      await c.revokeKey({ keyId: revoked.keyId });
      const wrongSecret = `psk_${k.keyId}_${randomBytes(32).toString('base64url')}`;
      const unknownId = `psk_${'a'.repeat(16)}_${k.apiKey.slice(21)}`;
      const candidates = [wrongSecret, unknownId, revoked.apiKey, '', 'psk_', 'garbage', `${k.apiKey}x`, k.apiKey.slice(0, -1), `Bearer ${k.apiKey}`];
      const prints = new Set<string>();
      for (const apiKey of candidates) {
        const err = await connectErrorOf(c.exchangeToken({ apiKey }));
        expect(err.code).toBe(Code.Unauthenticated);
        expect(reasonOf(err)).toBe(ErrorReason.UNAUTHORIZED);
        prints.add(fingerprint(err));
      }
      expect([...prints]).toHaveLength(1);
      // the good key is unaffected by the failed attempts
      await expect(c.exchangeToken({ apiKey: k.apiKey })).resolves.toMatchObject({ keyId: k.keyId });
    });

    test(`the token endpoint's own ceiling: ${TOKEN_LIMIT} exchanges per key per hour, refusals not counted, then RESOURCE_EXHAUSTED with a retry`, async () => {
      const k = await key();
      // Failed attempts (wrong secret) do not consume the ceiling.
      for (let i = 0; i < 5; i++) {
        await connectErrorOf(c.exchangeToken({ apiKey: `psk_${k.keyId}_${randomBytes(32).toString('base64url')}` }));
      }
      let last = '';
      for (let i = 0; i < TOKEN_LIMIT; i++) {
        const t = await c.exchangeToken({ apiKey: k.apiKey });
        secrets.push(t.accessToken);
        last = t.accessToken;
      }
      const err = await connectErrorOf(c.exchangeToken({ apiKey: k.apiKey }));
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(reasonOf(err)).toBe(ErrorReason.RATE_LIMITED);
      const retry = retryAfterOf(err)!;
      expect(retry).toBeGreaterThanOrEqual(1);
      expect(retry).toBeLessThanOrEqual(3600);
      expect(Math.abs(retry - localSecondsLeftInHour())).toBeLessThanOrEqual(5);
      // the ceiling's state rides along for the token endpoint's RateLimit-* headers
      expect(err.findDetails(RateLimitStatusSchema)[0]).toMatchObject({
        limit: TOKEN_LIMIT,
        windowSeconds: 3600,
        remaining: 0,
        limited: true,
        retryAfterSeconds: retry,
        resetSeconds: retry,
      });
      // another key of the same workspace has its own ceiling
      const other = await c.issueKey({ workspaceId: k.workspaceId });
      secrets.push(other.apiKey);
      const otherToken = await c.exchangeToken({ apiKey: other.apiKey });
      secrets.push(otherToken.accessToken);
      // contract requests are a separate counter: the exchanges did not consume it
      const res = await c.authorize({ accessToken: last, countRequest: true });
      expect(res.decision).toBe(AuthorizeDecision.ALLOWED);
      expect(res.rateLimit!.remaining).toBe(LIMIT - 1);
    });
  });

  describe('Authorize', () => {
    test(`counts every request of the key: remaining = limit − count (4 after the first of ${LIMIT}), then limited and not counted`, async () => {
      const t = await token();
      const seen: number[] = [];
      for (let i = 0; i < LIMIT; i++) {
        const res = await c.authorize({ accessToken: t.token, countRequest: true });
        expect(res.decision).toBe(AuthorizeDecision.ALLOWED);
        expect(res).toMatchObject({ keyId: t.keyId, workspaceId: t.workspaceId, environment: Environment.SANDBOX });
        expect(res.rateLimit).toMatchObject({ limit: LIMIT, windowSeconds: 3600, limited: false, retryAfterSeconds: 0 });
        seen.push(res.rateLimit!.remaining);
      }
      expect(seen).toEqual([4, 3, 2, 1, 0]);
      for (let i = 0; i < 3; i++) {
        const res = await c.authorize({ accessToken: t.token, countRequest: true });
        expect(res.rateLimit).toMatchObject({ limit: LIMIT, remaining: 0, limited: true });
        expect(res.rateLimit!.retryAfterSeconds).toBe(res.rateLimit!.resetSeconds);
      }
      if (db) {
        const [row] = await db<{ count: number }[]>`
          select count from identity.rate_counters where key_id = ${t.keyId} and bucket = 'contract'`;
        expect(row!.count).toBe(LIMIT);
      }
    });

    test('reset_seconds is the time left in the epoch-aligned hour', async () => {
      const t = await token();
      const res = await c.authorize({ accessToken: t.token, countRequest: true });
      const reset = res.rateLimit!.resetSeconds;
      expect(reset).toBeGreaterThanOrEqual(1);
      expect(reset).toBeLessThanOrEqual(3600);
      expect(Math.abs(reset - localSecondsLeftInHour())).toBeLessThanOrEqual(5);
    });

    test('count_request=false peeks without counting', async () => {
      const t = await token();
      const peek = await c.authorize({ accessToken: t.token, countRequest: false });
      expect(peek.decision).toBe(AuthorizeDecision.ALLOWED);
      expect(peek.rateLimit).toMatchObject({ remaining: LIMIT, limited: false });
      await c.authorize({ accessToken: t.token, countRequest: true });
      for (let i = 0; i < 3; i++) {
        const again = await c.authorize({ accessToken: t.token, countRequest: false });
        expect(again.rateLimit!.remaining).toBe(LIMIT - 1);
      }
      const counted = await c.authorize({ accessToken: t.token, countRequest: true });
      expect(counted.rateLimit!.remaining).toBe(LIMIT - 2);
    });

    test('the counter is per key, shared by all tokens of that key', async () => {
      const t = await token();
      const second = await c.exchangeToken({ apiKey: t.apiKey });
      secrets.push(second.accessToken);
      await c.authorize({ accessToken: t.token, countRequest: true });
      const res = await c.authorize({ accessToken: second.accessToken, countRequest: true });
      expect(res.rateLimit!.remaining).toBe(LIMIT - 2);
      const otherKey = await c.issueKey({ workspaceId: t.workspaceId });
      secrets.push(otherKey.apiKey);
      const other = await c.exchangeToken({ apiKey: otherKey.apiKey });
      secrets.push(other.accessToken);
      expect((await c.authorize({ accessToken: other.accessToken, countRequest: true })).rateLimit!.remaining).toBe(LIMIT - 1);
    });

    test('a missing, malformed, tampered, foreign-signed or expired token is UNAUTHENTICATED, with no rate limit and nothing counted', async () => {
      const t = await token();
      const [head, mac] = t.token.split('.') as [string, string];
      const claims = claimsOf(t.token);
      const signingKey = signingKeyOf(system.env, system.dataDir);
      const expired = new AccessTokens(signingKey, undefined, fakeClock(Date.now() - 61_000)).issue({ kid: t.keyId, ws: t.workspaceId, env: 'sandbox', ttlSeconds: 60 }).token;
      const foreign = new AccessTokens(randomBytes(32)).issue({ kid: t.keyId, ws: t.workspaceId, env: 'sandbox', ttlSeconds: 60 }).token;
      const tampered = `pst_${Buffer.from(JSON.stringify({ ...claims, exp: (claims.exp as number) + 60 })).toString('base64url')}.${mac}`;
      for (const accessToken of ['', 'garbage', t.apiKey, `${head}.`, `${head}.${mac.split('').reverse().join('')}`, tampered, foreign, expired, `Bearer ${t.token}`]) {
        const res = await c.authorize({ accessToken, countRequest: true });
        expect(res.decision).toBe(AuthorizeDecision.UNAUTHENTICATED);
        expect(res.rateLimit).toBeUndefined();
        expect(res.keyId).toBe('');
        expect(res.workspaceId).toBe('');
      }
      const peek = await c.authorize({ accessToken: t.token, countRequest: false });
      expect(peek.rateLimit!.remaining).toBe(LIMIT);
    });

    test('revoking a key fails its outstanding tokens on their next request (not counted)', async () => {
      const t = await token();
      expect((await c.authorize({ accessToken: t.token, countRequest: true })).decision).toBe(AuthorizeDecision.ALLOWED);
      await c.revokeKey({ keyId: t.keyId });
      const res = await c.authorize({ accessToken: t.token, countRequest: true });
      expect(res.decision).toBe(AuthorizeDecision.UNAUTHENTICATED);
      expect(res.rateLimit).toBeUndefined();
      if (db) {
        const [row] = await db<{ count: number }[]>`
          select count from identity.rate_counters where key_id = ${t.keyId} and bucket = 'contract'`;
        expect(row!.count).toBe(1);
      }
      // and no new token for it
      const err = await connectErrorOf(c.exchangeToken({ apiKey: t.apiKey }));
      expect(err.code).toBe(Code.Unauthenticated);
    });

    test('another workspace, an unknown one or a malformed id is WORKSPACE_SCOPE_MISMATCH — counted', async () => {
      const t = await token(Environment.SANDBOX);
      const sandboxOther = await workspace(Environment.SANDBOX);
      const production = await workspace(Environment.PRODUCTION);
      let expected = LIMIT;
      for (const workspaceId of [sandboxOther.workspaceId, production.workspaceId, randomUUID(), 'not-a-uuid']) {
        const res = await c.authorize({ accessToken: t.token, countRequest: true, workspaceId });
        expected -= 1;
        expect(res.decision).toBe(AuthorizeDecision.WORKSPACE_SCOPE_MISMATCH);
        expect(res).toMatchObject({ keyId: t.keyId, workspaceId: t.workspaceId });
        expect(res.rateLimit).toMatchObject({ remaining: expected, limited: false });
      }
      // its own workspace, named explicitly (upper-case UUID too), is in scope
      const own = await c.authorize({ accessToken: t.token, countRequest: false, workspaceId: t.workspaceId.toUpperCase() });
      expect(own.decision).toBe(AuthorizeDecision.ALLOWED);
    });

    test("a token whose environment disagrees with its workspace's is WORKSPACE_SCOPE_MISMATCH (either direction)", async () => {
      const signingKey = signingKeyOf(system.env, system.dataDir);
      const ours = new AccessTokens(signingKey);
      for (const [actual, claimed] of [
        [Environment.SANDBOX, 'production'],
        [Environment.PRODUCTION, 'sandbox'],
      ] as const) {
        const k = await key(actual);
        const forged = ours.issue({ kid: k.keyId, ws: k.workspaceId, env: claimed, ttlSeconds: 60 }).token;
        const res = await c.authorize({ accessToken: forged, countRequest: true });
        expect(res.decision).toBe(AuthorizeDecision.WORKSPACE_SCOPE_MISMATCH);
        expect(res.rateLimit!.remaining).toBe(LIMIT - 1);
      }
    });

    test('a limited request reports limited whatever the scope outcome, and is not counted', async () => {
      const t = await token();
      for (let i = 0; i < LIMIT; i++) await c.authorize({ accessToken: t.token, countRequest: true });
      const mismatch = await c.authorize({ accessToken: t.token, countRequest: true, workspaceId: randomUUID() });
      expect(mismatch.decision).toBe(AuthorizeDecision.WORKSPACE_SCOPE_MISMATCH);
      expect(mismatch.rateLimit).toMatchObject({ remaining: 0, limited: true });
      const peek = await c.authorize({ accessToken: t.token, countRequest: false });
      expect(peek.rateLimit).toMatchObject({ remaining: 0, limited: true });
      if (db) {
        const [row] = await db<{ count: number }[]>`
          select count from identity.rate_counters where key_id = ${t.keyId} and bucket = 'contract'`;
        expect(row!.count).toBe(LIMIT);
      }
    });
  });

  test('no API key, secret or access token ever reached a log line', () => {
    expect(secrets.length).toBeGreaterThan(20);
    expect(logEvents(system.logs(), 'identity.api_key.issued').length).toBeGreaterThan(0); // the log is really there
    const output = [...system.logs(), ...system.stderr()].join('\n'); // log text on purpose: no secret anywhere in it
    for (const s of secrets) expect(output).not.toContain(s);
    expect(output).not.toMatch(/psk_[a-z2-7]{16}_/);
    expect(output).not.toMatch(/pst_[A-Za-z0-9_-]{20}/);
  });
});
