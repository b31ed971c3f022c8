/**
 * Transactional outbox (outbox-relay.ts), on the kit migrations' tables, against the test
 * database (real PostgreSQL with DATABASE_URL, embedded PGlite otherwise) and the
 * test bus (real NATS with NATS_URL, in-process otherwise).
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import type { EventBus, ReceivedEvent, Subscription } from '../../services/kit/events';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { appendToOutbox } from '../../services/kit/events';
import { OutboxRelay } from '../../services/kit/events';
import { OutboxHousekeeping } from '../../services/kit/events';
import { startTestBus, testLogger, TestBus, withPublish } from '../support/bus';
import { startTestDatabase, TestDatabase } from '../support/database';
import { holdsFor, sleep, waitFor } from '../support/eventually';

/** How long a duplicate that must not be published is watched for. */
const QUIET_MS = 300;

const SCHEMA = 'kit_outbox_test';
let db: TestDatabase;
let t: TestBus;
const subs: Subscription[] = [];
const relays: OutboxRelay[] = [];

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
beforeAll(async () => {
  [db, t] = await Promise.all([startTestDatabase(), startTestBus()]);
  await runMigrations(db.sql, { schema: SCHEMA, sources: [KIT_MIGRATIONS] });
});

afterAll(async () => {
  await Promise.all(relays.map((r) => r.stop()));
  await Promise.all(subs.map((s) => s.stop()));
  await t?.stop();
  await db?.stop();
});

async function collect(durable: string, subjects: string[]) {
  const got: ReceivedEvent[] = [];
  subs.push(await t.bus.subscribe({ durable, subjects, handler: async (e) => void got.push(e) }));
  return got;
}

function relay(bus: EventBus = t.bus, opts: { batchSize?: number; log?: ReturnType<typeof testLogger> } = {}) {
  const r = new OutboxRelay({ sql: db.sql, schema: SCHEMA, bus, log: opts.log ?? testLogger(), batchSize: opts.batchSize ?? 7, pollMs: 50 });
  relays.push(r);
  return r;
}

async function unpublished(): Promise<number> {
  const [row] = await db.sql<{ n: number }[]>`select count(*)::int as n from ${db.sql(`${SCHEMA}.outbox`)} where published_at is null`;
  return row!.n;
}

test('appendToOutbox validates the schema name', async () => {
  await expect(appendToOutbox(db.sql, 'bad;schema', { subject: 'x', data: enc('') })).rejects.toThrow(/invalid schema/);
  expect(() => new OutboxRelay({ sql: db.sql, schema: 'Nope', bus: t.bus, log: testLogger() })).toThrow(/invalid schema/);
});

test('events of a rolled-back transaction never appear; committed ones are all published in order', async () => {
  const got = await collect('outbox-reader', ['ob.>']);
  const committed: string[] = [];

  // A transaction that fails after appending: its events must vanish with it.
  const ghost = randomUUID();
  await expect(
    db.sql.begin(async (tx) => {
      await appendToOutbox(tx, SCHEMA, { id: ghost, subject: 'ob.ghost', data: enc('never') });
      throw new Error('rolled back on purpose');
    }),
  ).rejects.toThrow('rolled back on purpose');

  // 60 committed transactions of 1 to 5 events each, interleaved with more rollbacks.
  for (let i = 0; i < 60; i++) {
    const ids = await db.sql.begin(async (tx) => {
      const out: string[] = [];
      for (let j = 0; j <= i % 5; j++) {
        out.push(await appendToOutbox(tx, SCHEMA, { subject: `ob.item.${j}`, data: enc(`${i}/${j}`), headers: { traceparent: `t-${i}-${j}` } }));
      }
      return out;
    });
    committed.push(...ids);
    if (i % 10 === 0) {
      await db.sql
        .begin(async (tx) => {
          await appendToOutbox(tx, SCHEMA, { subject: 'ob.ghost', data: enc('never') });
          throw new Error('rollback');
        })
        .catch(() => {});
    }
  }
  const own = await db.sql.begin((tx) => appendToOutbox(tx, SCHEMA, { id: 'a3c9f0b2-5d1e-4f5a-9c3b-1234567890ab', subject: 'ob.own', data: enc('own') }));
  expect(own).toBe('a3c9f0b2-5d1e-4f5a-9c3b-1234567890ab');
  committed.push(own);

  const r = relay();
  expect(await r.lag()).toEqual({ pending: committed.length, oldestAgeSeconds: expect.any(Number) });
  r.start();
  r.nudge();
  await waitFor('all committed events', () => got.length >= committed.length);
  await holdsFor('no event published twice', () => got.length === committed.length, QUIET_MS);
  expect(got.map((e) => e.id)).toEqual(committed); // all, once each, in commit order
  expect(got.some((e) => e.subject === 'ob.ghost' || e.id === ghost)).toBe(false);
  expect(dec(got[4]!.data)).toBe('2/1');
  expect(got[4]!.headers).toEqual({ traceparent: 't-2-1' });
  await waitFor('rows marked published', async () => (await unpublished()) === 0);
  expect((await r.lag()).pending).toBe(0);
  await r.stop();
});

test('a failing publish leaves rows unpublished and the relay retries without skipping', async () => {
  const got = await collect('outbox-retry-reader', ['obr.>']);
  let calls = 0;
  const flaky = withPublish(t.bus, async (e) => {
    calls++;
    // Fails on the 4th and 5th attempts, and on every 11th after that.
    if (calls === 4 || calls === 5 || calls % 11 === 0) throw new Error('bus unavailable (simulated)');
    await t.bus.publish(e);
  });
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) {
    ids.push(await db.sql.begin((tx) => appendToOutbox(tx, SCHEMA, { subject: `obr.n`, data: enc(String(i)) })));
  }
  const r = relay(flaky, { batchSize: 6, log: pino({ level: 'silent' }) });
  r.start();
  await waitFor('all events despite failures', () => got.length >= ids.length, 30000);
  await r.stop();
  expect(calls).toBeGreaterThan(ids.length);
  expect(got.map((e) => e.id)).toEqual(ids);
  expect(await unpublished()).toBe(0);
});

test('publishes are pipelined, and each workspace keeps commit order even when a publish fails mid-batch', async () => {
  const got = await collect('outbox-pipeline-reader', ['obp.>']);
  const workspaces = ['w-a', 'w-b', 'w-c', 'w-d'];
  let calls = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  const slow = withPublish(t.bus, async (e) => {
    calls++;
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      // Acknowledgements come back in any order.
      // timing under test: writers interleave at random (at most 8 ms apart).
      await sleep(Math.random() * 8);
      if (calls === 9 || calls === 23) throw new Error('bus unavailable (simulated)');
      await t.bus.publish(e);
    } finally {
      inFlight--;
    }
  });
  const rows: { id: string; ws: string }[] = [];
  for (let i = 0; i < 60; i++) {
    const ws = workspaces[i % 3 === 0 ? 0 : 1 + (i % 3)]!;
    const id = await db.sql.begin((tx) => appendToOutbox(tx, SCHEMA, { subject: `obp.n`, data: enc(String(i)), headers: { workspace_id: ws } }));
    rows.push({ id, ws });
  }
  const r = relay(slow, { batchSize: 25, log: pino({ level: 'silent' }) });
  r.start();
  await waitFor('all events despite failures', () => got.length >= rows.length, 30000);
  await r.stop();
  expect(maxInFlight).toBeGreaterThan(1);
  expect(new Set(got.map((e) => e.id)).size).toBe(rows.length);
  for (const ws of workspaces) {
    expect(got.filter((e) => rows.find((x) => x.id === e.id)!.ws === ws).map((e) => e.id)).toEqual(rows.filter((x) => x.ws === ws).map((x) => x.id));
  }
  expect(await unpublished()).toBe(0);
});

test("an encoder's order keys: one listing at a time, listings of a workspace together, a workspace-wide event alone", async () => {
  const got = await collect('outbox-keys-reader', ['obk.>']);
  const inFlight = new Map<string, string>(); // event id → its key
  let together = 0;
  const conflicts: string[] = [];
  const keyOf = (h: Record<string, string>) => h.k!.split('/');
  const slow = withPublish(t.bus, async (e) => {
    const k = e.headers!.k!;
    for (const other of inFlight.values()) {
      if (k.startsWith(other) || other.startsWith(k)) conflicts.push(`${other} with ${k}`);
      else together++;
    }
    inFlight.set(e.id, k);
    // timing under test: writers interleave at random (at most 5 ms apart).
    await sleep(Math.random() * 5);
    inFlight.delete(e.id);
    await t.bus.publish(e);
  });
  const keys = ['w/a', 'w/b', 'w/a', 'v/a', 'w/b', 'w', 'w/a', 'w/b', 'v/a', 'v/b', 'w/a', 'v', 'v/b', 'w/b'];
  const ids: string[] = [];
  for (const [i, k] of keys.entries()) ids.push(await db.sql.begin((tx) => appendToOutbox(tx, SCHEMA, { subject: 'obk.n', data: enc(String(i)), headers: { k } })));
  const r = new OutboxRelay({
    sql: db.sql,
    schema: SCHEMA,
    bus: slow,
    log: testLogger(),
    batchSize: 50,
    encode: (row) => ({ subject: row.subject, data: row.data!, headers: row.headers, orderKey: keyOf(row.headers) }),
  });
  while ((await r.relayOnce()) > 0);
  await waitFor('all events', () => got.length >= ids.length);
  expect(conflicts).toEqual([]);
  expect(together).toBeGreaterThan(0);
  // Keys that conflict (one a prefix of the other) arrive in commit order.
  const at = new Map(got.map((e, i) => [e.id, i]));
  for (let i = 0; i < keys.length; i++) {
    for (let j = i + 1; j < keys.length; j++) {
      const [a, b] = [keys[i]!, keys[j]!];
      if (a.startsWith(b) || b.startsWith(a)) expect(at.get(ids[i]!)!).toBeLessThan(at.get(ids[j]!)!);
    }
  }
});

test('rows without a workspace are one aggregate: published one at a time, in commit order', async () => {
  const got = await collect('outbox-serial-reader', ['obs.>']);
  let inFlight = 0;
  let maxInFlight = 0;
  const slow = withPublish(t.bus, async (e) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await sleep(1);
    await t.bus.publish(e);
    inFlight--;
  });
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) ids.push(await db.sql.begin((tx) => appendToOutbox(tx, SCHEMA, { subject: 'obs.n', data: enc(String(i)) })));
  const r = relay(slow, { batchSize: 50 });
  while ((await r.relayOnce()) > 0);
  await waitFor('all events', () => got.length >= ids.length);
  expect(maxInFlight).toBe(1);
  expect(got.map((e) => e.id)).toEqual(ids);
});

test('two relays on one schema (replicas) publish every row once, in order', async () => {
  const got = await collect('outbox-replicas-reader', ['obx.>']);
  const published: string[] = [];
  const counting = withPublish(t.bus, async (e) => {
    published.push(e.id);
    await new Promise((r) => setTimeout(r, 1));
    await t.bus.publish(e);
  });
  const a = relay(counting, { batchSize: 5 });
  const b = relay(counting, { batchSize: 5 });
  a.start();
  b.start();
  const ids: string[] = [];
  for (let i = 0; i < 80; i++) {
    ids.push(await db.sql.begin((tx) => appendToOutbox(tx, SCHEMA, { subject: 'obx.n', data: enc(String(i)) })));
    if (i % 7 === 0) (i % 2 ? a : b).nudge();
  }
  await waitFor('all events', () => got.length >= ids.length);
  await Promise.all([a.stop(), b.stop()]);
  expect(published).toEqual(ids); // no row published twice, none out of order
  expect(got.map((e) => e.id)).toEqual(ids);
});

test('prune deletes only rows published more than 7 days ago', async () => {
  const table = db.sql(`${SCHEMA}.outbox`);
  const old = randomUUID();
  const recent = randomUUID();
  const pending = randomUUID();
  await db.sql`insert into ${table} (id, subject, data, published_at) values
    (${old}, 'prune.x', '\\x00', now() - interval '8 days'),
    (${recent}, 'prune.x', '\\x00', now() - interval '6 days'),
    (${pending}, 'prune.x', '\\x00', null)`;
  const h = new OutboxHousekeeping({ sql: db.sql, schema: SCHEMA, log: testLogger() });
  expect(await h.prune()).toBe(1);
  const left = await db.sql<{ id: string }[]>`select id from ${table} where subject = 'prune.x' order by seq`;
  expect(left.map((x) => x.id)).toEqual([recent, pending]);
  await db.sql`delete from ${table} where subject = 'prune.x'`;
});

test('pruneProcessed deletes only dedupe marks older than 30 days', async () => {
  const table = db.sql(`${SCHEMA}.processed_events`);
  const old = randomUUID();
  const recent = randomUUID();
  await db.sql`insert into ${table} (consumer, event_id, processed_at) values
    ('prune-c', ${old}, now() - interval '31 days'),
    ('prune-c', ${recent}, now() - interval '29 days')`;
  const h = new OutboxHousekeeping({ sql: db.sql, schema: SCHEMA, log: testLogger() });
  expect(await h.pruneProcessed()).toBe(1);
  const left = await db.sql<{ event_id: string }[]>`select event_id from ${table} where consumer = 'prune-c'`;
  expect(left.map((x) => x.event_id)).toEqual([recent]);
  await db.sql`delete from ${table} where consumer = 'prune-c'`;
});

test('requeuePublished marks every published row unpublished again, and the relay publishes them once more', async () => {
  const table = db.sql(`${SCHEMA}.outbox`);
  const a = randomUUID();
  const b = randomUUID();
  await db.sql`insert into ${table} (id, subject, data, published_at) values
    (${a}, 'requeue.x', '\\x01', now() - interval '2 days'),
    (${b}, 'requeue.x', '\\x02', now())`;
  const r = new OutboxRelay({ sql: db.sql, schema: SCHEMA, bus: t.bus, log: testLogger() });
  expect(await new OutboxHousekeeping({ sql: db.sql, schema: SCHEMA, log: testLogger() }).requeuePublished()).toBeGreaterThanOrEqual(2);
  const rows = await db.sql<{ id: string; published_at: Date | null }[]>`select id, published_at from ${table} where subject = 'requeue.x' order by seq`;
  expect(rows.map((x) => x.published_at)).toEqual([null, null]);
  // Published again by the next batch (the bus, or JetStream within its window, drops copies by id).
  while ((await r.relayOnce()) > 0);
  const after = await db.sql<{ n: number }[]>`select count(*)::int as n from ${table} where published_at is null`;
  expect(after[0]!.n).toBe(0);
  await db.sql`delete from ${table} where subject = 'requeue.x'`;
});
