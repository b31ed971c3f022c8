/**
 * What an outbox batch costs on the wire and how it ends (services/kit/events/outbox-relay.ts,
 * OutboxRelay's class comment): socket writes to PostgreSQL per batch, per empty claim
 * and per idle poll; a claim that finds another relay's lock retries within 50 ms; a
 * failed claim is rolled back and its connection released; a connection lost in the
 * middle of a batch is not handed back to the pool. On the test database (real
 * PostgreSQL with DATABASE_URL, embedded PGlite otherwise) and the test bus.
 */
import { Socket } from 'node:net';
import pino from 'pino';
import type { EventBus } from '../../services/kit/events';
import { createSql, type Sql } from '../../services/kit/db';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { appendToOutbox } from '../../services/kit/events';
import { OutboxRelay } from '../../services/kit/events';
import { startTestBus, TestBus, withPublish } from '../support/bus';
import { startTestDatabase, TestDatabase } from '../support/database';
import { holdsFor, sleep, waitFor } from '../support/eventually';

const SCHEMA = 'kit_outbox_rt';
let db: TestDatabase;
let t: TestBus;
/** One connection of its own on a server (statements prepared once, nothing else on it); the shared one when embedded. */
let sql: Sql;
const relays: OutboxRelay[] = [];
const extra: Sql[] = [];

const enc = (s: string) => new TextEncoder().encode(s);
const onServer = process.env.DATABASE_URL ? test : test.skip;

beforeAll(async () => {
  [db, t] = await Promise.all([startTestDatabase(), startTestBus()]);
  await runMigrations(db.sql, { schema: SCHEMA, sources: [KIT_MIGRATIONS] });
  sql = db.embedded ? db.sql : createSql(db.url, { max: 1, applicationName: 'outbox-rt' });
  if (!db.embedded) extra.push(sql);
});

afterAll(async () => {
  await Promise.all(relays.map((r) => r.stop()));
  await Promise.all(extra.map((s) => s.end({ timeout: 5 })));
  await t?.stop();
  await db?.stop();
});

function relay(opts: { bus?: EventBus; sql?: Sql; schema?: string; pollMs?: number } = {}): OutboxRelay {
  const r = new OutboxRelay({ sql: opts.sql ?? sql, schema: opts.schema ?? SCHEMA, bus: opts.bus ?? t.bus, log: pino({ level: 'silent' }), pollMs: opts.pollMs });
  relays.push(r);
  return r;
}

async function append(n: number, subject = 'ort.n'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await db.sql.begin((tx) => appendToOutbox(tx, SCHEMA, { subject, data: enc(String(i)) })));
  return ids;
}

async function unpublished(): Promise<number> {
  const [row] = await db.sql<{ n: number }[]>`select count(*)::int as n from ${db.sql(`${SCHEMA}.outbox`)} where published_at is null`;
  return row!.n;
}

/** Socket writes this process makes to the database's port while `fn` runs. */
async function databaseWrites<T>(fn: () => Promise<T>): Promise<{ result: T; writes: number }> {
  const port = Number(new URL(db.url).port);
  const original = Socket.prototype.write;
  let writes = 0;
  Socket.prototype.write = function (this: Socket, ...args: unknown[]) {
    if (this.remotePort === port) writes++;
    return (original as (...a: unknown[]) => boolean).apply(this, args);
  };
  try {
    const result = await fn();
    return { result, writes };
  } finally {
    Socket.prototype.write = original;
  }
}

test('a batch is two writes to PostgreSQL (begin with the claim, the update with commit); an empty claim two; an idle poll one', async () => {
  const r = relay();
  // Statements are prepared on the connection by their first run (postgres.js describes them first).
  await append(2);
  expect(await r.relayOnce()).toBe(2);
  expect(await r.relayOnce()).toBe(0);

  await append(3);
  const batch = await databaseWrites(() => r.relayOnce());
  expect(batch).toEqual({ result: 3, writes: 2 });
  expect(await unpublished()).toBe(0);

  const empty = await databaseWrites(() => r.relayOnce());
  expect(empty).toEqual({ result: 0, writes: 2 });
  if (!db.embedded) {
    // The empty claim's transaction has ended: no advisory lock left behind.
    const [held] = await db.sql<
      { n: number }[]
    >`select count(*)::int as n from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())`;
    expect(held!.n).toBe(0);
  }

  // The background loop: its first round claims (two writes), then every idle poll asks in one statement.
  const asked = jest.spyOn(OutboxRelay.prototype as unknown as { anyUnpublished(): Promise<boolean> }, 'anyUnpublished');
  const polling = relay({ pollMs: 100 });
  const idle = await databaseWrites(async () => {
    polling.start();
    await waitFor('three idle polls', () => asked.mock.calls.length >= 3, 10_000);
    await polling.stop();
  });
  const polls = asked.mock.calls.length;
  asked.mockRestore();
  expect(polls).toBeGreaterThanOrEqual(3);
  expect(idle.writes).toBe(2 + polls);
});

test('a failed claim is rolled back and its connection released', async () => {
  // No outbox table in this schema: the claim fails inside the transaction.
  const r = relay({ schema: 'kit_outbox_rt_missing' });
  await expect(r.relayOnce()).rejects.toMatchObject({ code: '42P01' });
  // The one connection of `sql` is back in the pool and not inside an aborted transaction.
  const [row] = await sql<{ one: number }[]>`select 1 as one`;
  expect(row!.one).toBe(1);
  await append(1);
  expect(await relay().relayOnce()).toBe(1);
});

onServer('a relay that finds the lock held by another relay tries again within 50 ms, not at its idle poll (needs DATABASE_URL; skipped otherwise)', async () => {
  const other = createSql(db.url, { max: 1, applicationName: 'outbox-rt-other' });
  extra.push(other);
  const conn = await other.reserve();
  try {
    await conn`begin`;
    await conn`select pg_advisory_xact_lock(hashtext(${`${SCHEMA}.outbox`}))`;
    const got: string[] = [];
    const bus = withPublish(t.bus, async (e) => {
      got.push(e.id);
      await t.bus.publish(e);
    });
    const r = relay({ bus, pollMs: 60_000 });
    r.start();
    const [id] = await append(1);
    r.nudge();
    await holdsFor('nothing published while another relay holds the lock', () => got.length === 0, 500);
    await conn`commit`;
    const released = performance.now();
    while (!got.includes(id!) && performance.now() - released < 5000) await sleep(10);
    expect(got).toContain(id);
    expect(performance.now() - released).toBeLessThan(1000); // the idle poll is 60 s
    await r.stop();
  } finally {
    conn.release();
  }
});

onServer('a connection lost in the middle of a batch is not handed back to the pool, and the next batch publishes the rows (needs DATABASE_URL; skipped otherwise)', async () => {
  const own = createSql(db.url, { max: 1, applicationName: 'outbox-rt-lost' });
  extra.push(own);
  let kill = true;
  const bus = withPublish(t.bus, async (e) => {
    if (kill) {
      kill = false;
      await db.sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'outbox-rt-lost'`;
      await sleep(100);
    }
    await t.bus.publish(e);
  });
  const ids = await append(4);
  const r = relay({ bus, sql: own });
  await expect(r.relayOnce()).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
  expect(await unpublished()).toBe(ids.length);
  // Released, the dead connection would fail every later query of this (one-connection) pool.
  expect(await r.relayOnce()).toBe(ids.length);
  expect(await unpublished()).toBe(0);
});
