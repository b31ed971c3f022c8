/**
 * IdentityService's marketplace clients over the internal API, in the identity
 * service's own process: IssueClient, RevokeClient, ListClients, AuthenticateClient
 * (identity.proto; docs/operator-cli.md "client issue").
 *
 * A client's token `psmc_<client_id>_<secret>` is returned once; identity keeps only
 * SHA-256 of the whole token, which is what every service computes from the
 * credential it received and hands to AuthenticateClient. On a real PostgreSQL the
 * test reads the row; on the embedded default it scans the database files after the
 * system stopped.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Code } from '@connectrpc/connect';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { createSql, type Sql } from '../../services/kit/db';
import { backends, logEvents, type RunningSystem, startSystem, stopAllSystems } from '../support/system';
import { connectErrorOf, identityClient, type IdentityClient, reasonOf, violationsOf } from './helpers';

/** A first embedded start runs initdb: slow on a busy machine. */
const START_TIMEOUT_MS = 120_000;

const TOKEN = /^psmc_([a-z2-7]{16})_([A-Za-z0-9_-]{43})$/;

const sha256 = (token: string): Buffer => createHash('sha256').update(Buffer.from(token, 'utf8')).digest();

describe(`IdentityService marketplace clients (database: ${backends.database})`, () => {
  let system: RunningSystem;
  let conn: { client: IdentityClient; close(): void };
  let c: IdentityClient;
  let db: Sql | undefined;
  /** Kept after stop so the embedded database's files can be scanned. */
  const dataDir = mkdtempSync(join(tmpdir(), 'psync-clients-'));
  /** Every token handed out, to prove none is stored or logged. */
  const tokens: string[] = [];
  const marker = `clients-marker-${randomBytes(6).toString('hex')}`;

  beforeAll(async () => {
    system = await startSystem({ timeoutMs: START_TIMEOUT_MS, role: 'identity', dataDir });
    conn = identityClient(system.internalUrl);
    c = conn.client;
    if (system.env.DATABASE_URL) db = createSql(system.env.DATABASE_URL, { max: 2 });
  }, 3 * START_TIMEOUT_MS);

  afterAll(async () => {
    conn?.close();
    await db?.end({ timeout: 5 });
    await stopAllSystems();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function issue(name = `client ${randomBytes(4).toString('hex')}`) {
    const res = await c.issueClient({ name });
    tokens.push(res.token);
    return res;
  }

  test('IssueClient: a marketplace client and its psmc_ token, whose SHA-256 AuthenticateClient accepts', async () => {
    const before = Date.now();
    const res = await issue('search-indexer');
    const m = TOKEN.exec(res.token);
    expect(m).not.toBeNull();
    expect(res.client).toMatchObject({ clientId: m![1], name: 'search-indexer', role: 'marketplace' });
    expect(res.client!.revokedAt).toBeUndefined();
    expect(Math.abs(timestampMs(res.client!.createdAt!) - before)).toBeLessThan(60_000);
    expect(Buffer.from(m![2]!, 'base64url')).toHaveLength(32);

    const auth = await c.authenticateClient({ tokenSha256: sha256(res.token) });
    expect(auth).toMatchObject({ authenticated: true, clientId: res.client!.clientId, role: 'marketplace' });

    const other = await issue();
    expect(other.client!.clientId).not.toBe(res.client!.clientId);
    expect(other.token.slice(22)).not.toBe(res.token.slice(22));
  });

  test('IssueClient: the name is 1 to 200 characters (INVALID_ARGUMENT naming the field otherwise)', async () => {
    for (const [name, code] of [
      ['', 'required'],
      ['   ', 'required'],
      ['x'.repeat(201), 'max_length'],
      ['€'.repeat(201), 'max_length'],
    ] as const) {
      const err = await connectErrorOf(c.issueClient({ name }));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(reasonOf(err)).toBe(ErrorReason.VALIDATION_FAILED);
      expect(violationsOf(err)).toEqual([{ field: 'name', code }]);
    }
    // 200 characters, whatever their UTF-8 length.
    expect((await issue('€'.repeat(200))).client!.name).toBe('€'.repeat(200));
  });

  test('AuthenticateClient: an unknown hash or one of the wrong length is not authenticated, never an error', async () => {
    const res = await issue();
    const unknown = [sha256(`${res.token}x`), randomBytes(32), new Uint8Array(0), sha256(res.token).subarray(0, 31), Buffer.concat([sha256(res.token), Buffer.from([0])])];
    for (const tokenSha256 of unknown) {
      expect(await c.authenticateClient({ tokenSha256 })).toMatchObject({ authenticated: false, clientId: '', role: '' });
    }
    // The hash of the token text, not of its secret alone nor the hex form.
    expect((await c.authenticateClient({ tokenSha256: sha256(res.token.slice(22)) })).authenticated).toBe(false);
  });

  test('RevokeClient: the token stops authenticating; revoking again keeps the first revoked_at', async () => {
    const res = await issue();
    const id = res.client!.clientId;
    const first = await c.revokeClient({ clientId: id });
    expect(first.client).toMatchObject({ clientId: id, name: res.client!.name, role: 'marketplace' });
    expect(first.client!.revokedAt).toBeDefined();
    expect((await c.authenticateClient({ tokenSha256: sha256(res.token) })).authenticated).toBe(false);

    const again = await c.revokeClient({ clientId: id });
    expect(timestampMs(again.client!.revokedAt!)).toBe(timestampMs(first.client!.revokedAt!));
  });

  test('RevokeClient: an unknown client is NOT_FOUND (CLIENT_NOT_FOUND); a malformed id or a pasted token INVALID_ARGUMENT, never echoed', async () => {
    const err = await connectErrorOf(c.revokeClient({ clientId: 'aaaaaaaaaaaaaaaa' }));
    expect(err.code).toBe(Code.NotFound);
    expect(reasonOf(err)).toBe(ErrorReason.CLIENT_NOT_FOUND);

    const res = await issue();
    for (const clientId of ['', 'short', 'AAAAAAAAAAAAAAAA', res.token]) {
      const bad = await connectErrorOf(c.revokeClient({ clientId }));
      expect(bad.code).toBe(Code.InvalidArgument);
      expect(violationsOf(bad)).toEqual([{ field: 'client_id', code: clientId === '' ? 'required' : 'format' }]);
      expect(bad.rawMessage).not.toContain(res.token.slice(22));
    }
    expect((await c.authenticateClient({ tokenSha256: sha256(res.token) })).authenticated).toBe(true);
  });

  test('ListClients: newest first; revoked clients only with include_revoked; never a token', async () => {
    const a = await issue();
    const b = await issue();
    const d = await issue();
    await c.revokeClient({ clientId: b.client!.clientId });
    const ours = new Set([a, b, d].map((x) => x.client!.clientId));

    const live = (await c.listClients({})).clients.filter((x) => ours.has(x.clientId));
    expect(live.map((x) => x.clientId)).toEqual([d.client!.clientId, a.client!.clientId]);
    expect(live.every((x) => x.role === 'marketplace' && x.revokedAt === undefined)).toBe(true);

    const all = await c.listClients({ includeRevoked: true });
    const mine = all.clients.filter((x) => ours.has(x.clientId));
    expect(mine.map((x) => x.clientId)).toEqual([d, b, a].map((x) => x.client!.clientId));
    expect(mine[1]!.revokedAt).toBeDefined();
    // Newest first across the whole list.
    const times = all.clients.map((x) => timestampMs(x.createdAt!));
    expect([...times].sort((p, q) => q - p)).toEqual(times);
  });

  test('only SHA-256 of the token is stored, and no token reaches a log line', async () => {
    const res = await issue(marker);
    const secret = res.token.slice(22);
    if (db) {
      const [row] = await db<{ token_sha256: Buffer; whole: string }[]>`
        select token_sha256, row_to_json(k)::text as whole from identity.internal_clients k where client_id = ${res.client!.clientId}`;
      expect(row!.token_sha256.equals(sha256(res.token))).toBe(true);
      expect(row!.whole).toContain(marker);
      for (const t of tokens) {
        expect(row!.whole).not.toContain(t.slice(22));
        expect(row!.whole).not.toContain(Buffer.from(t.slice(22), 'base64url').toString('hex'));
      }
      const [columns] = await db<{ names: string[] }[]>`
        select array_agg(column_name::text order by column_name) as names
        from information_schema.columns where table_schema = 'identity' and table_name = 'internal_clients'`;
      expect(columns!.names).toEqual(['client_id', 'created_at', 'name', 'revoked_at', 'role', 'token_sha256']);
    }

    conn.close();
    expect(await system.stop()).toBe(0);
    expect(logEvents(system.logs(), 'identity.internal_client.issued').length).toBeGreaterThan(0);
    const logs = [...system.logs(), ...system.stderr()].join('\n'); // log text on purpose: no secret anywhere in it
    for (const t of tokens) expect(logs).not.toContain(t.slice(22));

    if (!db) {
      // Embedded: the database is files under DATA_DIR. The client's name is in them (so
      // the scan sees the data); no token or secret is, in any encoding.
      const needles = tokens.flatMap((t) => {
        const s = t.slice(22);
        return [Buffer.from(s), Buffer.from(Buffer.from(s, 'base64url').toString('hex')), Buffer.from(s, 'base64url')];
      });
      let sawMarker = false;
      let sawHash = false;
      const scan = (dir: string) => {
        for (const entry of readdirSync(dir, { withFileTypes: true })) {
          const path = join(dir, entry.name);
          if (entry.isDirectory()) scan(path);
          else if (entry.isFile()) {
            const bytes = readFileSync(path);
            if (bytes.includes(marker)) sawMarker = true;
            if (bytes.includes(sha256(res.token))) sawHash = true;
            for (const n of needles) expect(bytes.includes(n)).toBe(false);
          }
        }
      };
      scan(dataDir);
      expect(sawMarker).toBe(true);
      expect(sawHash).toBe(true);
    }
    expect(secret).toHaveLength(43);
  });
});
