/**
 * `psync webhook health`'s `last_success_at` (services/notifications/endpoint-health.ts
 * readEndpointHealth) against the real database (PostgreSQL with DATABASE_URL, embedded
 * PGlite otherwise): the dispatcher delivers through a poster the test controls, then
 * GetEndpoint (the service's implementation with a real registry) is shown the way the
 * CLI shows it (bin/cli/present.ts).
 *
 * - a healthy endpoint's 2xx writes no health row, yet `last_success_at` is the last delivery;
 * - after failures and a recovery, it is the recovering delivery's time;
 * - an endpoint that never had a 2xx shows null.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { type EndpointHealth, EndpointHealthSchema } from '../../gen/psync/notifications/v1/notifications_pb';
import { presentMessage } from '../../bin/cli/present';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { DeliveryDispatcher } from '../../services/notifications/dispatcher';
import { notificationsModule } from '../../services/notifications/module';
import { EndpointRegistry } from '../../services/notifications/registration';
import { mintSigningSecret, SecretBox } from '../../services/notifications/secret-box';
import { notificationsService } from '../../services/notifications/service';
import type { PostResult, WebhookPoster } from '../../services/notifications/webhook-poster';
import { testLogger } from '../support/bus';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from './support/harness';

jest.setTimeout(120_000);

let db: TestDatabase;
const box = new SecretBox(randomBytes(32));

/** Answers each endpoint (the last path segment of its URL) with the statuses queued for it, then 200. */
class ScriptedPoster implements WebhookPoster {
  readonly answers = new Map<string, number[]>();
  async vet(): Promise<boolean> {
    return true;
  }
  close(): number {
    return 0;
  }
  async post(url: string): Promise<PostResult> {
    return { status: this.answers.get(url.split('/').at(-1)!)?.shift() ?? 200, body: Buffer.alloc(0) };
  }
}

const poster = new ScriptedPoster();

beforeAll(async () => {
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'notifications', sources: [KIT_MIGRATIONS, notificationsModule.migrations] });
}, 120_000);
afterAll(async () => db?.stop());

async function endpoint(): Promise<string> {
  const ws = randomUUID();
  await db.sql`
    insert into notifications.endpoints (workspace_id, url, events, status, secret_ciphertext, secret_shown)
    values (${ws}, ${`https://partner.example/${ws}`}, ${db.sql.array(['booking.confirmed'])}, 'active', ${box.seal(mintSigningSecret(), ws)}, true)`;
  return ws;
}

async function queue(ws: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    const body = JSON.stringify({ event_id: id, event_type: 'booking.confirmed', occurred_at: new Date().toISOString(), data: { booking_reference: `BK-${i}` } });
    await db.sql`
      insert into notifications.deliveries (workspace_id, event_id, event_type, occurred_at, booking_reference, body, state, next_attempt_at, created_at)
      values (${ws}, ${id}, 'booking.confirmed', now(), ${`BK-${i}`}, ${body}, 'pending', now(), now())`;
  }
}

async function delivered(ws: string): Promise<{ n: number; last: Date | null }> {
  const [r] = await db.sql<{ n: number; last: Date | null }[]>`
    select count(*)::int as n, max(finished_at) as last from notifications.deliveries where workspace_id = ${ws} and state = 'delivered'`;
  return { n: Number(r!.n), last: r!.last };
}

/** `psync webhook health --workspace ws` as the CLI prints it, from the service's GetEndpoint. */
async function webhookHealth(ws: string) {
  const registry = new EndpointRegistry({ sql: db.sql, log: testLogger(), box, poster });
  const service = notificationsService({
    sql: db.sql,
    log: testLogger(),
    registry: () => registry,
    deletionRequests: () => {
      throw new Error('not used');
    },
    endpointChecks: () => {
      throw new Error('not used');
    },
    catalog: () => {
      throw new Error('not used');
    },
    deliveriesQueued: () => undefined,
  });
  const res = await service.getEndpoint!({ workspaceId: ws } as never, {} as never);
  // The implementation returns the message it built with create() (service.ts healthMessage).
  return presentMessage(EndpointHealthSchema, res.health as EndpointHealth);
}

test('last_success_at: the last 2xx of a healthy endpoint, the recovery after failures, null before any', async () => {
  const healthy = await endpoint();
  const recovering = await endpoint();
  const never = await endpoint();
  poster.answers.set(recovering, [500, 500]);
  poster.answers.set(never, Array<number>(100).fill(503));
  const started = new Date();
  await queue(healthy, 3);
  await queue(recovering, 1);
  await queue(never, 1);
  const d = new DeliveryDispatcher({ sql: db.sql, asyncCommitSql: db.sql, log: testLogger(), box, poster, schedule: [1, 1, 1, 1, 1], soleWorker: true, pollMs: 50 });
  await d.start();
  try {
    await eventually(async () => (await delivered(healthy)).n === 3 && (await delivered(recovering)).n === 1, 60_000, 'delivered');
  } finally {
    await d.stop(1000);
  }

  // A healthy endpoint's 2xx writes no health row …
  expect(await db.sql`select 1 from notifications.endpoint_health where workspace_id = ${healthy}`).toHaveLength(0);
  // … and its health still shows when the last one was.
  const h = await webhookHealth(healthy);
  expect(h).toMatchObject({ breaker: 'closed', consecutive_failures: 0, pending: 0, last_success_at: (await delivered(healthy)).last!.toISOString() });
  expect(Date.parse(h.last_success_at as string)).toBeGreaterThanOrEqual(started.getTime() - 1000);

  const r = await webhookHealth(recovering);
  expect(r).toMatchObject({ breaker: 'closed', consecutive_failures: 0, last_failure_status: 500 });
  expect(Date.parse(r.last_success_at as string)).toBeGreaterThanOrEqual(Date.parse(r.last_failure_at as string));

  expect(await webhookHealth(never)).toMatchObject({ last_success_at: null, last_failure_status: 503 });
});
