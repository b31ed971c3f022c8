/**
 * `bin/psync workspace create|show`, `key issue|revoke` and `client issue|revoke|list`
 * against a running system (docs/operator-cli.md): exactly one JSON
 * object on stdout and exit 0; a usage error is one line on stderr and exit 2, a
 * refused call one line and exit 1. The issued key and client really work, and are
 * never echoed by an error. psync calls with the operator's test credential (PSYNC_TOKEN).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Code } from '@connectrpc/connect';
import { TEST_TOKENS } from '../support/credentials';
import { backends, linesOf, runCommand, RunningSystem, RunResult, startSystem, stopAllSystems } from '../support/system';
import { connectErrorOf, identityClient, IdentityClient } from './helpers';

/** A first embedded start runs initdb: slow on a busy machine. */
const START_TIMEOUT_MS = 120_000;

// Every psync call is a fresh Node process (about a second each, more on a busy machine).
jest.setTimeout(180_000);

describe(`psync workspace, key and client commands (database: ${backends.database})`, () => {
  let system: RunningSystem;
  let conn: { client: IdentityClient; close(): void };

  beforeAll(async () => {
    system = await startSystem({
      timeoutMs: START_TIMEOUT_MS,
      role: 'identity',
      env: process.env.DATABASE_URL ? { TOKEN_SIGNING_KEY: randomBytes(32).toString('base64') } : {},
    });
    conn = identityClient(system.internalUrl);
  }, 3 * START_TIMEOUT_MS);

  afterAll(async () => {
    conn?.close();
    await stopAllSystems();
  });

  const psync = (...args: string[]): Promise<RunResult> =>
    runCommand('bin/psync', args, { ...process.env, PSYNC_INTERNAL_URL: system.internalUrl, PSYNC_TOKEN: TEST_TOKENS.operator });

  /** The one JSON object a successful command prints. */
  function jsonOf(res: RunResult): Record<string, unknown> {
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const lines = linesOf(res.stdout);
    expect(lines).toHaveLength(1);
    return JSON.parse(lines[0]!) as Record<string, unknown>;
  }

  function usageError(res: RunResult, mentions: string): string {
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    const lines = linesOf(res.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(mentions);
    return lines[0]!;
  }

  test('workspace create → key issue → (key works) → key revoke → (key refused)', async () => {
    const ws = jsonOf(await psync('workspace', 'create', '--name', 'Lakeside Rentals', '--env', 'sandbox'));
    expect(Object.keys(ws).sort()).toEqual(['environment', 'name', 'workspace_id']);
    expect(ws).toMatchObject({ name: 'Lakeside Rentals', environment: 'sandbox' });
    expect(ws.workspace_id).toMatch(/^[0-9a-f-]{36}$/);

    const key = jsonOf(await psync('key', 'issue', '--workspace', ws.workspace_id as string));
    expect(Object.keys(key).sort()).toEqual(['api_key', 'environment', 'key_id', 'workspace_id']);
    expect(key).toMatchObject({ workspace_id: ws.workspace_id, environment: 'sandbox' });
    expect(key.api_key).toMatch(new RegExp(`^psk_${key.key_id as string}_[A-Za-z0-9_-]{43}$`));

    const token = await conn.client.exchangeToken({ apiKey: key.api_key as string });
    expect(token).toMatchObject({ workspaceId: ws.workspace_id, sandbox: true });

    const revoked = jsonOf(await psync('key', 'revoke', '--key', key.key_id as string));
    expect(revoked).toEqual({ key_id: key.key_id, revoked: true });
    // idempotent
    expect(jsonOf(await psync('key', 'revoke', '--key', key.key_id as string))).toEqual({ key_id: key.key_id, revoked: true });

    const err = await connectErrorOf(conn.client.exchangeToken({ apiKey: key.api_key as string }));
    expect(err.code).toBe(Code.Unauthenticated);
  });

  test('a production workspace says so', async () => {
    const ws = jsonOf(await psync('workspace', 'create', '--name=Prod Co', '--env=production'));
    expect(ws.environment).toBe('production');
    const key = jsonOf(await psync('key', 'issue', '--workspace', ws.workspace_id as string));
    expect(key.environment).toBe('production');
  });

  test('bad flags are usage errors (exit 2), checked before any call', async () => {
    const cases: [string[], string][] = [
      [['workspace', 'create', '--name', 'x', '--env', 'staging'], '--env'],
      [['workspace', 'create', '--name', 'x'], '--env'],
      [['workspace', 'create', '--name', '', '--env', 'sandbox'], '--name'],
      [['workspace', 'create', '--name', 'x'.repeat(201), '--env', 'sandbox'], '--name'],
      [['workspace', 'create', '--name', 'x', '--env', 'sandbox', '--color', 'red'], '--color'],
      [['key', 'issue'], '--workspace'],
      [['key', 'issue', '--workspace', 'nope'], '--workspace'],
      [['key', 'revoke', '--key', 'short'], '--key'],
    ];
    const results = await Promise.all(cases.map(([args]) => psync(...args)));
    results.forEach((res, i) => usageError(res, cases[i]![1]));
  });

  test('key revoke given a whole API key refuses without printing it', async () => {
    const ws = jsonOf(await psync('workspace', 'create', '--name', 'paste', '--env', 'sandbox'));
    const key = jsonOf(await psync('key', 'issue', '--workspace', ws.workspace_id as string));
    const line = usageError(await psync('key', 'revoke', '--key', key.api_key as string), '--key');
    expect(line).not.toContain((key.api_key as string).slice(21));
  });

  test('refusals from the service: exit 1, one line', async () => {
    const res = await psync('key', 'issue', '--workspace', randomUUID());
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(linesOf(res.stderr)).toHaveLength(1);
    expect(res.stderr).toMatch(/not ?found/i);
    const revoke = await psync('key', 'revoke', '--key', 'aaaaaaaaaaaaaaaa');
    expect(revoke.code).toBe(1);
    expect(revoke.stderr).toMatch(/not ?found/i);
  });

  test('workspace show prints the workspace; an unknown one is NOT_FOUND (exit 1, one line)', async () => {
    const ws = jsonOf(await psync('workspace', 'create', '--name', 'Shown Co', '--env', 'production'));
    const shown = jsonOf(await psync('workspace', 'show', '--workspace', ws.workspace_id as string));
    expect(Object.keys(shown)).toEqual(['workspace_id', 'name', 'environment', 'created_at']);
    expect(shown).toMatchObject({ workspace_id: ws.workspace_id, name: 'Shown Co', environment: 'production' });
    expect(new Date(shown.created_at as string).toISOString()).toBe(shown.created_at);

    const missing = await psync('workspace', 'show', '--workspace', randomUUID());
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('');
    expect(linesOf(missing.stderr)).toHaveLength(1);
    expect(missing.stderr).toMatch(/not ?found/i);
    usageError(await psync('workspace', 'show', '--workspace', 'nope'), '--workspace');
  });

  test('client issue → (token authenticates) → client list → client revoke → (refused, listed only with --all)', async () => {
    const issued = jsonOf(await psync('client', 'issue', '--name', 'search-indexer'));
    expect(Object.keys(issued)).toEqual(['client_id', 'name', 'role', 'token']);
    expect(issued).toMatchObject({ name: 'search-indexer', role: 'marketplace' });
    const token = issued.token as string;
    expect(token).toMatch(new RegExp(`^psmc_${issued.client_id as string}_[A-Za-z0-9_-]{43}$`));
    const hash = createHash('sha256').update(token, 'utf8').digest();
    expect(await conn.client.authenticateClient({ tokenSha256: hash })).toMatchObject({ authenticated: true, clientId: issued.client_id });

    const listed = jsonOf(await psync('client', 'list'));
    expect(Object.keys(listed)).toEqual(['items']);
    const item = (listed.items as Record<string, unknown>[]).find((i) => i.client_id === issued.client_id);
    expect(item).toEqual({ client_id: issued.client_id, name: 'search-indexer', role: 'marketplace', created_at: expect.any(String), revoked_at: null });
    expect(JSON.stringify(listed)).not.toContain(token.slice(22));

    const revoked = jsonOf(await psync('client', 'revoke', '--client', issued.client_id as string));
    expect(Object.keys(revoked)).toEqual(['client_id', 'revoked', 'revoked_at']);
    expect(revoked).toMatchObject({ client_id: issued.client_id, revoked: true });
    expect(new Date(revoked.revoked_at as string).toISOString()).toBe(revoked.revoked_at);
    // idempotent: the first revocation's time
    expect(jsonOf(await psync('client', 'revoke', '--client', issued.client_id as string))).toEqual(revoked);
    expect((await conn.client.authenticateClient({ tokenSha256: hash })).authenticated).toBe(false);

    const live = jsonOf(await psync('client', 'list'));
    expect((live.items as Record<string, unknown>[]).some((i) => i.client_id === issued.client_id)).toBe(false);
    const all = jsonOf(await psync('client', 'list', '--all'));
    expect((all.items as Record<string, unknown>[]).find((i) => i.client_id === issued.client_id)).toMatchObject({ revoked_at: revoked.revoked_at });
  });

  test('client commands: bad flags are usage errors (exit 2); a pasted token is never echoed; an unknown client is NOT_FOUND', async () => {
    const issued = jsonOf(await psync('client', 'issue', '--name', 'paste-test'));
    const token = issued.token as string;
    const cases: [string[], string][] = [
      [['client', 'issue'], '--name'],
      [['client', 'issue', '--name', ''], '--name'],
      [['client', 'issue', '--name', 'x'.repeat(201)], '--name'],
      [['client', 'revoke'], '--client'],
      [['client', 'revoke', '--client', 'short'], '--client'],
      [['client', 'list', '--all=yes'], '--all'],
    ];
    const results = await Promise.all(cases.map(([args]) => psync(...args)));
    results.forEach((res, i) => usageError(res, cases[i]![1]));
    const pasted = usageError(await psync('client', 'revoke', '--client', token), '--client');
    expect(pasted).not.toContain(token.slice(22));

    const unknown = await psync('client', 'revoke', '--client', 'aaaaaaaaaaaaaaaa');
    expect(unknown.code).toBe(1);
    expect(linesOf(unknown.stderr)).toHaveLength(1);
    expect(unknown.stderr).toMatch(/not ?found/i);
  });
});
