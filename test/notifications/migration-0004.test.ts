/**
 * Migration 0004 (abandoned bodies back in `deliveries`) over a schema that ran 0001–0003,
 * against the test database (real PostgreSQL with DATABASE_URL, embedded PGlite
 * otherwise): the bodies 0003 kept in `replay_bodies` move back into their abandoned
 * deliveries (an erased guest's name still scrubbed), nothing else changes, and the side
 * table, its triggers and functions are gone. The landed files stay in the tree as
 * history (the notifications baseline replaces them on a new schema): this replays them.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS, type MigrationSource } from '../../services/kit/db';
import { envelopeBody, scrubGuestName } from '../../services/notifications/envelope';
import { notificationsModule } from '../../services/notifications/module';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { historySource } from '../support/migration-history';

jest.setTimeout(120_000);

const MIGRATIONS = notificationsModule.migrations;
let db: TestDatabase;
let fixtures: string;
let before0004: MigrationSource;
let landed: MigrationSource[];

beforeAll(async () => {
  db = await startTestDatabase();
  // The notifications migrations as they were before 0004: the same files, so the same checksums.
  fixtures = mkdtempSync(join(tmpdir(), 'psync-notifications-0003-'));
  before0004 = historySource(join(fixtures, 'before'), MIGRATIONS, { last: '0003_replay_bodies.sql' });
  landed = [KIT_MIGRATIONS, MIGRATIONS].map((s) => historySource(join(fixtures, 'landed'), s, { functions: true }));
}, 120_000);

afterAll(async () => {
  await db?.stop();
  if (fixtures) rmSync(fixtures, { recursive: true, force: true });
});

const WS = randomUUID();

function confirmation(ref: string, guestName: string): string {
  return envelopeBody({
    event_id: randomUUID(),
    event_type: 'booking.confirmed',
    occurred_at: '2026-11-22T07:00:00.000Z',
    data: { booking_reference: ref, listing_id: 'L1', guest_name: guestName, party_size: 2 },
  });
}

test('0004 moves the kept bodies back into their abandoned deliveries, then drops replay_bodies, its triggers and functions', async () => {
  const sql = db.sql;
  const first = await runMigrations(sql, { schema: 'notifications', sources: [landed[0]!, before0004] });
  expect(first.applied.filter((id) => id.startsWith('notifications/'))).toEqual([
    'notifications/0001_webhooks',
    'notifications/0002_delivery_trace',
    'notifications/0003_replay_bodies',
  ]);

  const bodies = {
    kept: confirmation('BK-KEPT', 'Ada Lovelace'),
    erased: confirmation('BK-ERASED', 'Zoë "guest_name":"x" \\ Ada ✓'),
    pending: confirmation('BK-PENDING', 'Grace Hopper'),
    legacy: confirmation('BK-LEGACY', 'Legacy'),
  };
  const insert = (ref: string, body: string | null, state: string) =>
    sql<{ id: string }[]>`
    insert into notifications.deliveries (workspace_id, event_id, event_type, occurred_at, booking_reference, body, state, next_attempt_at, finished_at)
    values (${WS}, ${randomUUID()}, 'booking.confirmed', now(), ${ref}, ${body}, ${state},
            ${state === 'pending' ? new Date() : null}, ${state === 'pending' ? null : new Date()})
    returning id`.then(([r]) => r!.id);
  /** The dispatcher before 0004: abandonment cleared the body (0003's trigger kept it). */
  const abandonAsBefore = (id: string) => sql`
    update notifications.deliveries set state = 'abandoned', body = null, next_attempt_at = null, finished_at = now()
    where id = ${id}`;

  const kept = await insert('BK-KEPT', bodies.kept, 'pending');
  await abandonAsBefore(kept);
  const erased = await insert('BK-ERASED', bodies.erased, 'pending');
  await abandonAsBefore(erased);
  // An erasure after the abandonment: 0003's deferred trigger scrubbed the kept body.
  await sql`insert into notifications.erased_bookings (workspace_id, booking_reference) values (${WS}, 'BK-ERASED')`;
  const pending = await insert('BK-PENDING', bodies.pending, 'pending');
  const legacy = await insert('BK-LEGACY', null, 'abandoned'); // abandoned before 0003: nothing kept
  const delivered = await insert('BK-DELIVERED', null, 'delivered');
  expect((await sql`select delivery_id from notifications.replay_bodies order by delivery_id`).map((r) => String(r.delivery_id))).toEqual([kept, erased]);

  const second = await runMigrations(sql, { schema: 'notifications', sources: landed });
  // 0004 first; later migrations follow it.
  expect(second.applied[0]).toBe('notifications/0004_abandoned_bodies_in_deliveries');
  // The tree finds the schema at its baselines: nothing left to run.
  expect((await runMigrations(sql, { schema: 'notifications', sources: [KIT_MIGRATIONS, MIGRATIONS] })).applied).toEqual([]);

  const rows = await sql<{ id: string; state: string; body: string | null }[]>`
    select id, state, body from notifications.deliveries where workspace_id = ${WS} order by id`;
  expect(rows.map((r) => ({ ...r, id: String(r.id) }))).toEqual([
    { id: kept, state: 'abandoned', body: bodies.kept },
    { id: erased, state: 'abandoned', body: scrubGuestName(bodies.erased) },
    { id: pending, state: 'pending', body: bodies.pending },
    { id: legacy, state: 'abandoned', body: null },
    { id: delivered, state: 'delivered', body: null },
  ]);

  const [left] = await sql<{ tables: string | null; functions: number; triggers: number }[]>`
    select to_regclass('notifications.replay_bodies')::text as tables,
           (select count(*)::int from pg_proc p join pg_namespace n on n.oid = p.pronamespace
             where n.nspname = 'notifications' and p.proname in ('scrub_guest_name', 'keep_abandoned_body', 'scrub_kept_bodies')) as functions,
           (select count(*)::int from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
             where n.nspname = 'notifications' and not t.tgisinternal) as triggers`;
  expect(left).toEqual({ tables: null, functions: 0, triggers: 0 });

  // Abandoning no longer moves anything anywhere: the body stays where it is.
  await sql`update notifications.deliveries set state = 'abandoned', next_attempt_at = null, finished_at = now() where id = ${pending}`;
  const [p] = await sql`select body from notifications.deliveries where id = ${pending}`;
  expect(p!.body).toBe(bodies.pending);

  // The erasure's lookup index covers every delivery that still has a body.
  const [index] = await sql<{ indexdef: string }[]>`
    select indexdef from pg_indexes where schemaname = 'notifications' and indexname = 'deliveries_by_booking'`;
  expect(index!.indexdef).toMatch(/WHERE \(\(booking_reference IS NOT NULL\) AND \(body IS NOT NULL\)\)/);
});
