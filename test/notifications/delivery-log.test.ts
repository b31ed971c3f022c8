/**
 * The delivery log and resend (services/notifications/delivery-log.ts,
 * delivery-resend.ts) on the test database (real PostgreSQL with DATABASE_URL, embedded
 * PGlite otherwise), with rows written directly: the states a running system reaches
 * only by timing (a pending delivery whose retry is not yet due, one in flight, one
 * abandoned before bodies were kept, a suspended endpoint, more attempts than shown).
 * A test erasure's deletion request never escalates. The whole path through the gateway
 * and a real receiver: sandbox-tools.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorDetailSchema, ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import type { Sql } from '../../services/kit/db';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { testLogger } from '../support/bus';
import { DeletionRequests } from '../../services/notifications/deletion-requests';
import { ATTEMPTS_SHOWN, deliveryByEventId, deliveryLogPage } from '../../services/notifications/delivery-log';
import { resendDelivery } from '../../services/notifications/delivery-resend';
import { notificationsModule } from '../../services/notifications/module';
import { startTestDatabase, type TestDatabase } from '../support/database';

jest.setTimeout(120_000);

let db: TestDatabase;
let sql: Sql;
const log = testLogger();

beforeAll(async () => {
  db = await startTestDatabase();
  sql = db.sql;
  await runMigrations(sql, { schema: 'notifications', sources: [KIT_MIGRATIONS, notificationsModule.migrations] });
});
afterAll(() => db?.stop());

async function endpoint(ws: string, status = 'active', events = ['booking.confirmed', 'booking.cancelled', 'user.erased']): Promise<void> {
  await sql`
    insert into notifications.endpoints (workspace_id, url, events, status, secret_ciphertext)
    values (${ws}, 'https://hooks.example.com/x', ${sql.array(events)}::text[], ${status}, '\\x00'::bytea)`;
}

interface Row {
  state?: 'pending' | 'delivered' | 'abandoned';
  body?: string | null;
  nextAttemptInS?: number | null;
  leasedForS?: number;
  kind?: string;
  test?: boolean;
}

/** A delivery of `ws`; resolves with its event_id and row id. */
async function delivery(ws: string, r: Row = {}): Promise<{ eventId: string; id: string }> {
  const eventId = randomUUID();
  const state = r.state ?? 'pending';
  const next = state === 'pending' ? (r.nextAttemptInS ?? 0) : null;
  const [row] = await sql<{ id: string }[]>`
    insert into notifications.deliveries (workspace_id, event_id, event_type, occurred_at, body, state, attempts, next_attempt_at,
                                          lease_owner, lease_until, finished_at, test)
    values (${ws}, ${eventId}, ${r.kind ?? 'booking.confirmed'}, now(), ${r.body === undefined ? '{"b":1}' : r.body}, ${state}, 2,
            case when ${next}::float8 is null then null else now() + ${next}::float8 * interval '1 second' end,
            ${r.leasedForS ? 'worker-1' : null}, ${r.leasedForS ? new Date(Date.now() + r.leasedForS * 1000) : null},
            case when ${state} = 'pending' then null else now() end, ${r.test ?? false})
    returning id`;
  return { eventId, id: String(row!.id) };
}

async function attempts(deliveryId: string, n: number): Promise<void> {
  await sql`
    insert into notifications.delivery_attempts (delivery_id, attempted_at, response_status, duration_ms, outcome)
    select ${deliveryId}::bigint, now() - (${n} - i) * interval '1 second', 500, i, 'http_status' from generate_series(1, ${n}) as i`;
}

async function failure(p: Promise<unknown>): Promise<{ code: string; reason: string }> {
  try {
    await p;
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: Code[e.code], reason: ErrorReason[e.findDetails(ErrorDetailSchema)[0]?.reason ?? 0] ?? 'UNSPECIFIED' };
  }
  throw new Error('expected a failure');
}

const row = async (id: string) =>
  (
    await sql<{ state: string; attempts: number; next_attempt_at: Date | null; lease_owner: string | null; finished_at: Date | null }[]>`
    select state, attempts, next_attempt_at, lease_owner, finished_at from notifications.deliveries where id = ${id}`
  )[0]!;

describe('delivery log', () => {
  test('newest first, paged without a total, filtered; the newest 20 attempts of each, with the count of all', async () => {
    const ws = randomUUID();
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await delivery(ws, { state: i % 2 ? 'delivered' : 'abandoned', kind: i === 4 ? 'user.erased' : 'booking.confirmed' }));
    await attempts(made[4]!.id, 25);
    await delivery(randomUUID()); // another workspace's

    const p1 = await deliveryLogPage(sql, ws, { page: 1, pageSize: 2 });
    const p3 = await deliveryLogPage(sql, ws, { page: 3, pageSize: 2 });
    const past = await deliveryLogPage(sql, ws, { page: 2_147_483_647, pageSize: 200 });
    expect([p1.items.map((d) => d.event_id), p1.hasMore]).toEqual([[made[4]!.eventId, made[3]!.eventId], true]);
    expect([p3.items.map((d) => d.event_id), p3.hasMore]).toEqual([[made[0]!.eventId], false]);
    expect(past).toEqual({ items: [], hasMore: false });
    expect(p1.items[0]!.attempt_log).toHaveLength(ATTEMPTS_SHOWN);
    expect(p1.items[0]!.attempt_log_total).toBe(25);
    expect(p1.items[0]!.attempt_log.map((a) => a.duration_ms)).toEqual(Array.from({ length: 20 }, (_, i) => 25 - i));
    expect([p1.items[1]!.attempt_log, p1.items[1]!.attempt_log_total]).toEqual([[], 0]);

    const defaults = await deliveryLogPage(sql, ws, { page: 0, pageSize: 0 });
    expect(defaults.items).toHaveLength(5);
    const erased = await deliveryLogPage(sql, ws, { page: 1, pageSize: 50, kind: 'user.erased' });
    expect(erased.items.map((d) => d.event_id)).toEqual([made[4]!.eventId]);
    const delivered = await deliveryLogPage(sql, ws, { page: 1, pageSize: 50, state: 'delivered' });
    expect(delivered.items.map((d) => d.event_id)).toEqual([made[3]!.eventId, made[1]!.eventId]);
  });

  // Bad paging and workspace ids are refused by the .proto's rules before a handler runs (services/kit/rpc/validation.test.ts).
  test('unknown, malformed and foreign event_ids are one NOT_FOUND', async () => {
    const ws = randomUUID();
    const other = await delivery(randomUUID());
    for (const id of [randomUUID(), 'not-a-uuid', other.eventId]) {
      expect(await failure(deliveryByEventId(sql, ws, id))).toEqual({ code: 'NotFound', reason: 'DELIVERY_NOT_FOUND' });
      expect(await failure(resendDelivery(sql, log, ws, id))).toEqual({ code: 'NotFound', reason: 'DELIVERY_NOT_FOUND' });
    }
  });
});

test("a test user.erased's deletion request never escalates; a real one beside it does", async () => {
  const ws = randomUUID();
  const [real, test] = [randomUUID(), randomUUID()];
  for (const [id, isTest] of [
    [real, false],
    [test, true],
  ] as const) {
    await sql`
      insert into notifications.deletion_requests (event_id, workspace_id, booking_references, provider_ids, occurred_at, created_at, test)
      values (${id}, ${ws}, '{}', '{}', now() - interval '1 hour', now() - interval '1 hour', ${isTest})`;
  }
  await new DeletionRequests({ sql, log, escalationSeconds: 60 }).escalateDue();
  const rows = await sql<{ event_id: string; escalated: boolean }[]>`
    select event_id, escalated_at is not null as escalated from notifications.deletion_requests where workspace_id = ${ws} order by test`;
  expect(rows.map((r) => [r.event_id, r.escalated])).toEqual([
    [real, true],
    [test, false],
  ]);
});

describe('resend', () => {
  test('abandoned: pending again with a fresh schedule, due now; its attempts stay in the log', async () => {
    const ws = randomUUID();
    await endpoint(ws);
    const d = await delivery(ws, { state: 'abandoned' });
    await attempts(d.id, 4);
    const out = await resendDelivery(sql, log, ws, d.eventId.toUpperCase());
    expect([out.state, out.attempts, out.attempt_log_total]).toEqual(['pending', 0, 4]);
    const r = await row(d.id);
    expect([r.state, r.attempts, r.finished_at, r.lease_owner]).toEqual(['pending', 0, null, null]);
    expect(r.next_attempt_at!.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
  });

  test('pending: made due now without restarting its schedule; one in flight is left alone', async () => {
    const ws = randomUUID();
    await endpoint(ws);
    const waiting = await delivery(ws, { nextAttemptInS: 3600 });
    const out = await resendDelivery(sql, log, ws, waiting.eventId);
    expect([out.state, out.attempts]).toEqual(['pending', 2]);
    expect((await row(waiting.id)).next_attempt_at!.getTime()).toBeLessThanOrEqual(Date.now() + 1000);

    const inFlight = await delivery(ws, { nextAttemptInS: 3600, leasedForS: 30 });
    const before = await row(inFlight.id);
    await resendDelivery(sql, log, ws, inFlight.eventId);
    expect(await row(inFlight.id)).toEqual(before);
  });

  test('a delivery without its body is not resendable; an endpoint not active or not subscribed refuses; nothing changes', async () => {
    const ws = randomUUID();
    await endpoint(ws, 'active', ['booking.confirmed']);
    const noBody = await delivery(ws, { state: 'delivered', body: null });
    const erasure = await delivery(ws, { state: 'abandoned', kind: 'user.erased' });
    const before = [await row(noBody.id), await row(erasure.id)];
    expect(await failure(resendDelivery(sql, log, ws, noBody.eventId))).toEqual({ code: 'FailedPrecondition', reason: 'DELIVERY_NOT_RESENDABLE' });
    expect(await failure(resendDelivery(sql, log, ws, erasure.eventId))).toEqual({ code: 'FailedPrecondition', reason: 'WEBHOOK_ENDPOINT_NOT_ACTIVE' });

    const suspended = randomUUID();
    await endpoint(suspended, 'suspended');
    const s = await delivery(suspended, { state: 'abandoned' });
    expect(await failure(resendDelivery(sql, log, suspended, s.eventId))).toEqual({ code: 'FailedPrecondition', reason: 'WEBHOOK_ENDPOINT_NOT_ACTIVE' });
    const none = randomUUID();
    const n = await delivery(none, { state: 'abandoned' });
    expect(await failure(resendDelivery(sql, log, none, n.eventId))).toEqual({ code: 'FailedPrecondition', reason: 'WEBHOOK_ENDPOINT_NOT_ACTIVE' });
    expect([await row(noBody.id), await row(erasure.id)]).toEqual(before);
    expect((await row(s.id)).state).toBe('abandoned');
  });
});
