/**
 * examples/webhook-receiver.mjs with two registrations (two workspaces, one URL path
 * each), registered and delivered to by the notifications service's own code against
 * the real database (EndpointRegistry: the signed challenge during the registration;
 * DeliveryDispatcher: signed deliveries). Only the network is the test's: a poster
 * that sends each POST to the receiver on a free port (RECEIVER_PORT) trusting its
 * self-signed certificate, where the service would connect to port 8443.
 *
 * - the first registration's secret saved as the README does (`signing-secret`), the
 *   second's in `signing-secrets/<path>`: both endpoints become active;
 * - each one's deliveries are verified with its own secret and delivered;
 * - a delivery signed with the other workspace's secret is refused;
 * - a re-registration's challenge is verified.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { DeliveryDispatcher } from '../../services/notifications/dispatcher';
import { notificationsModule } from '../../services/notifications/module';
import { EndpointRegistry } from '../../services/notifications/registration';
import { SecretBox } from '../../services/notifications/secret-box';
import { signatureHeaders } from '../../services/notifications/signature';
import type { PostOptions, PostResult, WebhookPoster } from '../../services/notifications/webhook-poster';
import { testLogger } from '../support/bus';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { ROOT, waitForLine } from '../support/process';
import { freePort } from '../support/system';
import { eventually } from '../notifications/support/harness';

jest.setTimeout(120_000);

let db: TestDatabase;
let dir: string;
let receiver: ChildProcess;
let poster: WebhookPoster;
const box = new SecretBox(randomBytes(32));

/** The network as the test has it: `https://localhost:8443/<path>` is the receiver on `port`, trusted by its certificate. */
function posterTo(port: number, ca: string): WebhookPoster {
  return {
    vet: async () => true,
    close: () => 0,
    post: (url: string, body: string, headers: Record<string, string>, o: PostOptions) =>
      new Promise<PostResult>((resolve) => {
        const req = https.request({ host: 'localhost', port, path: new URL(url).pathname, method: 'POST', headers, ca, timeout: o.timeoutMs }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks) }));
        });
        req.on('error', () => resolve({ error: 'connection_failed' }));
        req.on('timeout', () => req.destroy());
        req.end(body);
      }),
  };
}

beforeAll(async () => {
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'notifications', sources: [KIT_MIGRATIONS, notificationsModule.migrations] });
  dir = mkdtempSync(join(tmpdir(), 'psync-receiver-'));
  const port = await freePort();
  receiver = spawn(process.execPath, ['examples/webhook-receiver.mjs'], {
    cwd: ROOT,
    env: { ...process.env, RECEIVER_DIR: dir, RECEIVER_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await waitForLine(receiver, new RegExp(`listening on https://localhost:${port}`));
  poster = posterTo(port, readFileSync(join(dir, 'cert.pem'), 'utf8'));
}, 120_000);

afterAll(async () => {
  receiver?.kill();
  await db?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function queue(ws: string): Promise<string> {
  const id = randomUUID();
  const body = JSON.stringify({ event_id: id, event_type: 'booking.confirmed', occurred_at: new Date().toISOString(), data: { booking_reference: `BK-${id.slice(0, 8)}` } });
  await db.sql`
    insert into notifications.deliveries (workspace_id, event_id, event_type, occurred_at, booking_reference, body, state, next_attempt_at, created_at)
    values (${ws}, ${id}, 'booking.confirmed', now(), ${`BK-${id.slice(0, 8)}`}, ${body}, 'pending', now(), now())`;
  return id;
}

async function stateOf(eventId: string): Promise<string | undefined> {
  const [r] = await db.sql<{ state: string }[]>`select state from notifications.deliveries where event_id = ${eventId}`;
  return r?.state;
}

test('two registrations on one receiver: both active, each verified with its own secret', async () => {
  const registry = new EndpointRegistry({ sql: db.sql, log: testLogger(), box, poster });
  const events = [WebhookEventType.BOOKING_CONFIRMED];
  const a = randomUUID();
  const b = randomUUID();

  const first = await registry.put(a, 'https://localhost:8443/partner-a', events);
  expect(first.status).toBe('active');
  writeFileSync(join(dir, 'signing-secret'), `${first.signingSecret}\n`);
  await waitForLine(receiver, /^challenge answered on \/partner-a \(not verified: no secret held/);

  // The receiver holds the first workspace's secret; the second registration's challenge is signed with another.
  const second = await registry.put(b, 'https://localhost:8443/partner/b', events);
  expect(second.status).toBe('active');
  await waitForLine(receiver, /^challenge answered on \/partner\/b \(not verified: no signature matches/);
  mkdirSync(join(dir, 'signing-secrets', 'partner'), { recursive: true });
  writeFileSync(join(dir, 'signing-secrets', 'partner', 'b'), `${second.signingSecret}\n`);

  const toA = await queue(a);
  const toB = await queue(b);
  const d = new DeliveryDispatcher({ sql: db.sql, asyncCommitSql: db.sql, log: testLogger(), box, poster, schedule: [60], soleWorker: true, pollMs: 50 });
  await d.start();
  try {
    await eventually(async () => (await stateOf(toA)) === 'delivered' && (await stateOf(toB)) === 'delivered', 30_000, 'both delivered');
  } finally {
    await d.stop(1000);
  }
  await waitForLine(receiver, new RegExp(`^verified booking\\.confirmed (${toA}|${toB}) \\(X-Signature\\)$`));
  await waitForLine(receiver, new RegExp(`^verified booking\\.confirmed (${toA}|${toB}) \\(X-Signature\\)$`));

  // The first workspace's secret does not open the second's path.
  const forged = JSON.stringify({ event_id: randomUUID(), event_type: 'booking.confirmed', occurred_at: new Date().toISOString(), data: {} });
  const refused = await poster.post('https://localhost:8443/partner/b', forged, signatureHeaders({ current: first.signingSecret! }, forged), {
    timeoutMs: 5000,
    maxResponseBytes: 1024,
  });
  expect(refused).toMatchObject({ status: 401 });

  // A re-registration's challenge is verified with the secret held for its path.
  expect((await registry.put(b, 'https://localhost:8443/partner/b', events)).status).toBe('active');
  await waitForLine(receiver, /^challenge verified \(X-Signature\) and answered on \/partner\/b$/);
});
