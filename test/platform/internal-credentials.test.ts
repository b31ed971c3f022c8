/**
 * The internal API's credentials as an operator meets them
 * (docs/security/internal-access.md):
 *
 * - the all-in-one binds the internal port on loopback unless INTERNAL_HOST opens it
 *   (read from the kernel's socket table: no traffic leaves loopback);
 * - with no operator credential configured, one is generated at first start under
 *   DATA_DIR/keys/operator.token (0600), logged by path only, and loaded again on restart;
 * - rotation without downtime: OPERATOR_TOKEN + OPERATOR_TOKEN_PREVIOUS both work, then
 *   the previous one is refused once removed; the same for a service credential's two
 *   hashes in INTERNAL_CALLERS;
 * - no credential ever appears in the logs.
 */
import { readFileSync, statSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Code, ConnectError } from '@connectrpc/connect';
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { InternalClients } from '../../services/kit/rpc';
import { operatorTokenPath } from '../../services/kit/base';
import { callerEntry } from '../support/credentials';
import { backends, createScratchDatabase, logEvents, startSystem, stopAllSystems, type RunningSystem, type ScratchDatabase } from '../support/system';

/** Local addresses (as dotted IPv4) listening on `port`, from /proc/net/tcp. */
function listeningAddresses(port: number): string[] {
  const out: string[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 4 || cols[3] !== '0A') continue; // 0A = LISTEN
      const [addr, p] = cols[1]!.split(':');
      if (parseInt(p!, 16) !== port) continue;
      if (addr!.length === 8)
        out.push(
          addr!
            .match(/../g)!
            .reverse()
            .map((h) => parseInt(h, 16))
            .join('.'),
        );
      else out.push(addr === '00000000000000000000000000000000' ? '::' : `ipv6:${addr}`);
    }
  }
  return out;
}

async function codeAs(url: string, token: string, call: 'migrate' | 'authorize' = 'migrate'): Promise<string> {
  const clients = new InternalClients([], 5000, { token });
  try {
    if (call === 'migrate') await clients.client(AdminService, url).migrate({});
    else await clients.client(IdentityService, url).authorize({ accessToken: '' });
    return 'ok';
  } catch (err) {
    return Code[ConnectError.from(err).code];
  } finally {
    clients.close();
  }
}

const A = 'operator-credential-A-0123456789abcdef0123456789abcdef';
const B = 'operator-credential-B-0123456789abcdef0123456789abcdef';

function expectNoSecretsIn(system: RunningSystem, secrets: string[]): void {
  const text = [...system.logs(), ...system.stderr()].join('\n'); // log text on purpose: no secret anywhere in it
  for (const s of secrets) expect(text).not.toContain(s);
}

describe(`internal API credentials (database: ${backends.database}, bus: ${backends.bus})`, () => {
  let dataDir: string;
  let db: ScratchDatabase | undefined;
  /** Shared across restarts: the same data directory and, on a real server, the same database. */
  let keep: Record<string, string>;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'psync-credentials-'));
    db = process.env.DATABASE_URL ? await createScratchDatabase() : undefined;
    keep = db ? { DATABASE_URL: db.url } : {};
  });
  afterAll(async () => {
    await stopAllSystems();
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('role all: the internal port listens on 127.0.0.1 even with HOST=0.0.0.0; INTERNAL_HOST opens it', async () => {
    const closed = await startSystem({ env: { HOST: '0.0.0.0' } });
    try {
      expect(listeningAddresses(Number(closed.env.INTERNAL_PORT))).toEqual(['127.0.0.1']);
      expect(listeningAddresses(Number(closed.env.PORT))).toEqual(['0.0.0.0']);
    } finally {
      await closed.stop();
    }
    const open = await startSystem({ env: { HOST: '127.0.0.1', INTERNAL_HOST: '0.0.0.0' } });
    try {
      expect(listeningAddresses(Number(open.env.INTERNAL_PORT))).toEqual(['0.0.0.0']);
    } finally {
      await open.stop();
    }
  });

  test('no operator credential configured: generated once under DATA_DIR/keys (0600), logged by path, loaded on restart', async () => {
    const env = { ...keep, OPERATOR_TOKEN: '', INTERNAL_CALLERS: '' };
    const first = await startSystem({ dataDir, env });
    const file = operatorTokenPath(dataDir);
    const token = readFileSync(file, 'utf8').trim();
    expect(token).toMatch(/^psop_[A-Za-z0-9_-]{43}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, 'keys')).mode & 0o777).toBe(0o700);
    expect(logEvents(first.logs(), 'credentials.operator.ready')).toEqual([expect.objectContaining({ source: 'generated', file })]);
    expect(await codeAs(first.internalUrl, token)).toBe('ok');
    expect(await codeAs(first.internalUrl, A)).toBe('Unauthenticated');
    expectNoSecretsIn(first, [token]);
    await first.stop();

    const second = await startSystem({ dataDir, env });
    expect(readFileSync(file, 'utf8').trim()).toBe(token);
    expect(logEvents(second.logs(), 'credentials.operator.ready')).toEqual([expect.objectContaining({ source: 'loaded', file })]);
    expect(await codeAs(second.internalUrl, token)).toBe('ok');
    await second.stop();
  });

  test('operator rotation: A; then B with A as previous (both work); then B alone (A refused)', async () => {
    const before = await startSystem({ dataDir, env: { ...keep, OPERATOR_TOKEN: A } });
    expect([await codeAs(before.internalUrl, A), await codeAs(before.internalUrl, B)]).toEqual(['ok', 'Unauthenticated']);
    expectNoSecretsIn(before, [A, B]);
    await before.stop();

    const overlap = await startSystem({ dataDir, env: { ...keep, OPERATOR_TOKEN: B, OPERATOR_TOKEN_PREVIOUS: A } });
    expect([await codeAs(overlap.internalUrl, A), await codeAs(overlap.internalUrl, B)]).toEqual(['ok', 'ok']);
    expectNoSecretsIn(overlap, [A, B]);
    await overlap.stop();

    const after = await startSystem({ dataDir, env: { ...keep, OPERATOR_TOKEN: B } });
    expect([await codeAs(after.internalUrl, A), await codeAs(after.internalUrl, B)]).toEqual(['Unauthenticated', 'ok']);
    await after.stop();
  });

  test("a service credential's rotation: old and new hash accepted together, the old one refused once removed", async () => {
    const oldToken = 'gateway-credential-old-0123456789abcdef0123456789abcdef';
    const newToken = 'gateway-credential-new-0123456789abcdef0123456789abcdef';
    const overlap = await startSystem({ env: { ...keep, INTERNAL_CALLERS: [callerEntry('gateway', oldToken), callerEntry('gateway', newToken)].join(',') } });
    expect([await codeAs(overlap.internalUrl, oldToken, 'authorize'), await codeAs(overlap.internalUrl, newToken, 'authorize')]).toEqual(['ok', 'ok']);
    // A gateway credential is still only the gateway's: Migrate is the operator's.
    expect(await codeAs(overlap.internalUrl, newToken, 'migrate')).toBe('PermissionDenied');
    await overlap.stop();

    const after = await startSystem({ env: { ...keep, INTERNAL_CALLERS: callerEntry('gateway', newToken) } });
    expect([await codeAs(after.internalUrl, oldToken, 'authorize'), await codeAs(after.internalUrl, newToken, 'authorize')]).toEqual(['Unauthenticated', 'ok']);
    expectNoSecretsIn(after, [oldToken, newToken]);
    await after.stop();
  });
});
