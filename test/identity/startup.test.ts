/**
 * The identity service's configuration at start-up (docs/decisions.md "Identity"):
 *
 * - TOKEN_TTL_SECONDS over 3600, a short TOKEN_SIGNING_KEY or a bad
 *   TOKEN_RATE_LIMIT_PER_HOUR: refused, exit 1, one line naming the variable.
 * - The token-signing key survives a restart: generated once under DATA_DIR/keys on
 *   the embedded default (mode 0600, directory 0700), configured on a real
 *   PostgreSQL; a token issued before the restart is accepted after it.
 * - Embedded: the database files under DATA_DIR never contain an issued secret.
 * - Real PostgreSQL without TOKEN_SIGNING_KEY: the process starts, ExchangeToken is
 *   UNAVAILABLE / TOKEN_ISSUER_NOT_CONFIGURED and Authorize UNAVAILABLE /
 *   SERVICE_UNAVAILABLE; workspaces and keys still work.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Code } from '@connectrpc/connect';
import { AuthorizeDecision } from '../../gen/psync/identity/v1/identity_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { localKeyPath } from '../../services/kit/base';
import { backends, createScratchDatabase, linesOf, logEvents, runMain, ScratchDatabase, startSystem, stopAllSystems } from '../support/system';
import { connectErrorOf, identityClient, reasonOf } from './helpers';

/** A first embedded start runs initdb: slow on a busy machine. */
const START_TIMEOUT_MS = 120_000;

afterAll(() => stopAllSystems());

describe('configuration refused at start-up', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'psync-idcfg-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  test.each([
    ['TOKEN_TTL_SECONDS', '3601'],
    ['TOKEN_TTL_SECONDS', '0'],
    ['TOKEN_SIGNING_KEY', Buffer.alloc(31, 7).toString('base64')],
    ['TOKEN_SIGNING_KEY', 'not base64!'],
    ['TOKEN_RATE_LIMIT_PER_HOUR', '0'],
    ['TOKEN_RATE_LIMIT_PER_HOUR', 'lots'],
  ])(
    '%s=%s exits 1 with one line naming it',
    async (name, value) => {
      const res = await runMain(['identity'], { ...process.env, DATA_DIR: dataDir, [name]: value });
      expect(res.code).toBe(1);
      const lines = linesOf(res.stderr);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(name);
      // a key given on the command line is not repeated back
      if (name === 'TOKEN_SIGNING_KEY') expect(res.stderr).not.toContain(value);
    },
    START_TIMEOUT_MS,
  );
});

describe(`the token-signing key survives a restart (database: ${backends.database})`, () => {
  let dataDir: string;
  let scratch: ScratchDatabase | undefined;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'psync-idkey-'));
    if (process.env.DATABASE_URL) scratch = await createScratchDatabase();
  });
  afterAll(async () => {
    await stopAllSystems();
    await scratch?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test(
    'a token issued before a restart is accepted after it; TOKEN_TTL_SECONDS=3600 is allowed',
    async () => {
      const env: Record<string, string> = { TOKEN_TTL_SECONDS: '3600' };
      if (scratch) {
        env.DATABASE_URL = scratch.url;
        env.TOKEN_SIGNING_KEY = randomBytes(32).toString('base64');
      }
      const marker = `marker-${randomBytes(8).toString('hex')}`;

      const first = await startSystem({ role: 'identity', dataDir, env, timeoutMs: START_TIMEOUT_MS });
      const a = identityClient(first.internalUrl);
      const ws = (await a.client.createWorkspace({ name: marker, environment: Environment.SANDBOX })).workspace!;
      const key = await a.client.issueKey({ workspaceId: ws.workspaceId });
      const exchanged = await a.client.exchangeToken({ apiKey: key.apiKey });
      expect(exchanged.expiresIn).toBe(3600);
      a.close();
      expect(await first.stop()).toBe(0);

      if (!scratch) {
        const file = localKeyPath(dataDir, 'token-signing');
        expect(statSync(file).mode & 0o777).toBe(0o600);
        expect(statSync(join(dataDir, 'keys')).mode & 0o777).toBe(0o700);
        expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')).toHaveLength(32);
        expect(logEvents(first.logs(), 'identity.signing_key.ready')).toEqual([expect.objectContaining({ source: 'generated' })]);
      }

      const second = await startSystem({ role: 'identity', dataDir, env, timeoutMs: START_TIMEOUT_MS });
      if (!scratch) expect(logEvents(second.logs(), 'identity.signing_key.ready')).toEqual([expect.objectContaining({ source: 'loaded' })]);
      const b = identityClient(second.internalUrl);
      const res = await b.client.authorize({ accessToken: exchanged.accessToken, countRequest: true });
      expect(res.decision).toBe(AuthorizeDecision.ALLOWED);
      expect(res.rateLimit!.remaining).toBe(599);
      b.close();
      expect(await second.stop()).toBe(0);

      if (!scratch) {
        // Embedded: the database is files under DATA_DIR. The workspace name is in them
        // (so the scan sees the data); the key's secret is not, in any encoding.
        const secret = key.apiKey.slice(21);
        const needles = [secret, Buffer.from(secret, 'base64url').toString('hex'), Buffer.from(secret, 'base64url').toString('base64')];
        let sawMarker = false;
        const scan = (dir: string) => {
          for (const entry of readdirSync(dir, { withFileTypes: true })) {
            const path = join(dir, entry.name);
            if (entry.isDirectory()) scan(path);
            else if (entry.isFile()) {
              const bytes = readFileSync(path);
              if (bytes.includes(marker)) sawMarker = true;
              for (const n of needles) expect(bytes.includes(n)).toBe(false);
              expect(bytes.includes(Buffer.from(secret, 'base64url'))).toBe(false);
            }
          }
        };
        scan(dataDir);
        expect(sawMarker).toBe(true);
      }
    },
    3 * START_TIMEOUT_MS,
  );
});

(process.env.DATABASE_URL ? describe : describe.skip)(
  'real PostgreSQL without TOKEN_SIGNING_KEY: the token endpoint is not configured (needs DATABASE_URL; skipped otherwise)',
  () => {
    test(
      'ExchangeToken is UNAVAILABLE/TOKEN_ISSUER_NOT_CONFIGURED, Authorize UNAVAILABLE/SERVICE_UNAVAILABLE; the rest works',
      async () => {
        // Empty counts as unset (and hides any key in the test's own environment).
        const system = await startSystem({ role: 'identity', env: { TOKEN_SIGNING_KEY: '' }, timeoutMs: START_TIMEOUT_MS });
        const conn = identityClient(system.internalUrl);
        try {
          expect(logEvents(system.logs(), 'identity.signing_key.missing')).toHaveLength(1);
          const ws = (await conn.client.createWorkspace({ name: 'no key', environment: Environment.SANDBOX })).workspace!;
          const key = await conn.client.issueKey({ workspaceId: ws.workspaceId });
          for (const apiKey of [key.apiKey, 'garbage']) {
            const err = await connectErrorOf(conn.client.exchangeToken({ apiKey }));
            expect(err.code).toBe(Code.Unavailable);
            expect(reasonOf(err)).toBe(ErrorReason.TOKEN_ISSUER_NOT_CONFIGURED);
          }
          const err = await connectErrorOf(conn.client.authorize({ accessToken: 'pst_x.y', countRequest: true }));
          expect(err.code).toBe(Code.Unavailable);
          expect(reasonOf(err)).toBe(ErrorReason.SERVICE_UNAVAILABLE);
          // no key file was generated on a real database
          expect(() => statSync(join(system.dataDir, 'keys'))).toThrow();
        } finally {
          conn.close();
          await system.stop();
        }
      },
      2 * START_TIMEOUT_MS,
    );
  },
);
