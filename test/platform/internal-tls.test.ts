/**
 * TLS on the internal API (INTERNAL_TLS_*; docs/security/internal-access.md
 * "Transport"): the listener speaks only HTTP/2 over TLS, a client that does not trust
 * its certificate is refused, under mutual TLS a client without a certificate or with
 * one from another CA is refused in the handshake, and (with DATABASE_URL and NATS_URL)
 * the processes of a split system call each other over TLS with their credentials.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Code, ConnectError } from '@connectrpc/connect';
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { InternalClients, type InternalTls } from '../../services/kit/rpc';
import { credentialInterceptor } from '../support/credentials';
import { canSplit, startSplitSystem, type SplitSystem } from '../support/split-system';
import { backends, firstLogEvent, startSystem, stopAllSystems, type RunningSystem } from '../support/system';
import { createInternalCa, type InternalCa } from '../support/tls';

let dir: string;
let ca: InternalCa;
let otherCa: InternalCa;
let files: { ca: string; cert: string; key: string };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'psync-internal-tls-'));
  ca = await createInternalCa();
  otherCa = await createInternalCa('Somebody else');
  const server = await ca.issue();
  files = { ca: join(dir, 'ca.pem'), cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') };
  writeFileSync(files.ca, ca.caPem);
  writeFileSync(files.cert, server.cert);
  writeFileSync(files.key, server.key);
});

afterAll(async () => {
  await stopAllSystems();
  rmSync(dir, { recursive: true, force: true });
});

const tlsEnv = (requireClientCert: boolean) => ({
  INTERNAL_TLS_CERT: files.cert,
  INTERNAL_TLS_KEY: files.key,
  INTERNAL_TLS_CA: files.ca,
  INTERNAL_TLS_REQUIRE_CLIENT_CERT: String(requireClientCert),
});

/** Migrate as the operator over `url` with `tls`; 'ok' or how it failed. */
async function migrateWith(url: string, tls: InternalTls | undefined): Promise<string> {
  const clients = new InternalClients([credentialInterceptor()], 5000, { tls });
  try {
    await clients.client(AdminService, url).migrate({});
    return 'ok';
  } catch (err) {
    const e = ConnectError.from(err);
    return `${Code[e.code]}: ${e.rawMessage}`;
  } finally {
    clients.close();
  }
}

describe(`internal TLS, all-in-one (database: ${backends.database}, bus: ${backends.bus})`, () => {
  let system: RunningSystem;
  beforeAll(async () => {
    system = await startSystem({ env: tlsEnv(false) });
  });

  test('the listener says TLS and the internal URL is https', () => {
    expect(system.internalUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const bound = firstLogEvent(system.logs(), 'rpc.server.bound');
    expect(bound).toMatchObject({ tls: true, client_certificates: 'not requested' });
  });

  test('a client trusting the CA gets through (by IP and by name)', async () => {
    expect(await migrateWith(system.internalUrl, { ca: Buffer.from(ca.caPem) })).toBe('ok');
    expect(await migrateWith(system.internalUrl.replace('127.0.0.1', 'localhost'), { ca: Buffer.from(ca.caPem) })).toBe('ok');
  });

  test('a client that does not trust the certificate is refused; so is one trusting another CA', async () => {
    expect(await migrateWith(system.internalUrl, undefined)).toMatch(/certificate/i);
    expect(await migrateWith(system.internalUrl, { ca: Buffer.from(otherCa.caPem) })).toMatch(/certificate/i);
  });

  test('clear-text h2c is not served: credentials never travel unencrypted', async () => {
    expect(await migrateWith(system.internalUrl.replace('https:', 'http:'), undefined)).not.toBe('ok');
  });
});

describe('internal mutual TLS (INTERNAL_TLS_REQUIRE_CLIENT_CERT=true)', () => {
  let system: RunningSystem;
  beforeAll(async () => {
    system = await startSystem({ env: tlsEnv(true) });
  });

  test('a client certificate from the CA gets through', async () => {
    const client = await ca.issue('operator-workstation');
    expect(await migrateWith(system.internalUrl, { ca: Buffer.from(ca.caPem), cert: Buffer.from(client.cert), key: Buffer.from(client.key) })).toBe('ok');
  });

  test('no client certificate, or one from an untrusted CA: refused in the handshake', async () => {
    const stranger = await otherCa.issue('stranger');
    expect(await migrateWith(system.internalUrl, { ca: Buffer.from(ca.caPem) })).not.toBe('ok');
    expect(await migrateWith(system.internalUrl, { ca: Buffer.from(ca.caPem), cert: Buffer.from(stranger.cert), key: Buffer.from(stranger.key) })).not.toBe('ok');
  });
});

(canSplit ? describe : describe.skip)('internal TLS between processes, one per service (needs DATABASE_URL and NATS_URL; skipped otherwise)', () => {
  let split: SplitSystem;
  beforeAll(async () => {
    split = await startSplitSystem(tlsEnv(true), 'https');
  }, 120000);
  afterAll(() => split?.stop());

  test('the gateway reaches identity over mutual TLS with its credential: a token exchange works end to end', async () => {
    const client = await ca.issue('operator');
    const tls = { ca: Buffer.from(ca.caPem), cert: Buffer.from(client.cert), key: Buffer.from(client.key) };
    const clients = new InternalClients([credentialInterceptor()], 10000, { tls });
    try {
      const identity = clients.client(IdentityService, split.urls.identity);
      const ws = (await identity.createWorkspace({ name: 'tls', environment: Environment.SANDBOX })).workspace!.workspaceId;
      const key = await identity.issueKey({ workspaceId: ws });
      const res = await fetch(`${split.gateway.gatewayUrl}/v1/token`, { method: 'POST', headers: { authorization: `Bearer ${key.apiKey}` } });
      expect(res.status).toBe(200);
      // And a contract call: gateway → identity (Authorize) → calendar, every hop over TLS.
      const token = ((await res.json()) as { access_token: string }).access_token;
      const blocks = await fetch(`${split.gateway.gatewayUrl}/v1/blocks`, { headers: { authorization: `Bearer ${token}` } });
      expect(blocks.status).toBe(200);
    } finally {
      clients.close();
    }
  });
});
