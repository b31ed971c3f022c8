/**
 * Forward-only migrations (services/kit/db/migrate.ts) against a real database: PostgreSQL
 * when DATABASE_URL is set, the embedded PGlite server otherwise.
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createSql, Sql } from '../../services/kit/db';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS, loadBaseline, type MigrationSource } from '../../services/kit/db';
import { startTestDatabase, TestDatabase } from '../support/database';
import { logEvents } from '../support/log-events';

/** What a schema records after the kit's baseline: the landed kit migrations it replaces. */
const KIT_IDS = ['kit/0001_outbox', 'kit/0002_processed_events', 'kit/0003_processed_events_age', 'kit/0004_outbox_writer'];

let db: TestDatabase;
let sql: Sql;
let fixtures: string;

beforeAll(async () => {
  db = await startTestDatabase();
  sql = db.sql;
  fixtures = mkdtempSync(join(tmpdir(), 'psync-migrations-'));
});

afterAll(async () => {
  await db?.stop();
  if (fixtures) rmSync(fixtures, { recursive: true, force: true });
});

let dirCount = 0;
/** A migration folder with the given files, in a fresh temporary directory. */
function source(prefix: string, files: Record<string, string>): MigrationSource {
  const dir = join(fixtures, `${prefix}-${++dirCount}`);
  mkdirSync(dir);
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return { prefix, dir };
}

async function tableExists(schema: string, table: string): Promise<boolean> {
  const [row] = await sql<{ t: string | null }[]>`select to_regclass(${`${schema}.${table}`})::text as t`;
  return row!.t !== null;
}

async function appliedIds(schema: string): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`select id from ${sql(`${schema}.schema_migrations`)} order by id`;
  return rows.map((r) => r.id);
}

describe('kit migrations', () => {
  test('create outbox and processed_events in the service schema, not in public', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });

    const result = await runMigrations(sql, { schema: 'svc_kit', sources: [KIT_MIGRATIONS], log });
    expect(result).toEqual({
      schema: 'svc_kit',
      applied: ['kit/baseline'],
      functions: ['kit/append_outbox'],
    });
    expect(logEvents(lines, 'migration.applied').map((l) => [l.level, l.schema, l.migration])).toEqual([[30, 'svc_kit', 'kit/baseline']]);
    // The baseline records the landed migrations it replaces, with their landed checksums.
    expect(await sql`select id, checksum from svc_kit.schema_migrations order by id`).toEqual(
      [...loadBaseline(KIT_MIGRATIONS)!.replaces].map(([id, checksum]) => ({ id, checksum })),
    );
    expect(await appliedIds('svc_kit')).toEqual(KIT_IDS);

    expect(await tableExists('svc_kit', 'outbox')).toBe(true);
    expect(await tableExists('svc_kit', 'processed_events')).toBe(true);
    expect(await tableExists('public', 'outbox')).toBe(false);
    expect(await tableExists('public', 'schema_migrations')).toBe(false);

    const columns = await sql<{ table_name: string; column_name: string; data_type: string; is_nullable: string }[]>`
      select table_name, column_name, data_type, is_nullable from information_schema.columns
      where table_schema = 'svc_kit' and table_name in ('outbox', 'processed_events')
      order by table_name, ordinal_position`;
    expect(columns.map((c) => `${c.table_name}.${c.column_name} ${c.data_type}${c.is_nullable === 'NO' ? ' not null' : ''}`)).toEqual([
      'outbox.seq bigint not null',
      'outbox.id uuid not null',
      'outbox.subject text not null',
      'outbox.data bytea',
      'outbox.headers jsonb not null',
      'outbox.created_at timestamp with time zone not null',
      'outbox.published_at timestamp with time zone',
      'outbox.body jsonb',
      'processed_events.consumer text not null',
      'processed_events.event_id uuid not null',
      'processed_events.processed_at timestamp with time zone not null',
    ]);

    const [index] = await sql<{ indexdef: string }[]>`
      select indexdef from pg_indexes where schemaname = 'svc_kit' and tablename = 'outbox' and indexdef like '%WHERE%'`;
    expect(index!.indexdef).toMatch(/\(seq\) WHERE \(published_at IS NULL\)/);

    const id = '6f1c2b3a-0000-4000-8000-000000000001';
    await sql`insert into svc_kit.outbox (id, subject, data) values (${id}, 'calendar.booking.confirmed', ${Buffer.from([1, 2])})`;
    const [row] = await sql<{ seq: string; headers: unknown; published_at: Date | null }[]>`
      select seq, headers, published_at from svc_kit.outbox where id = ${id}`;
    expect(row).toEqual({ seq: '1', headers: {}, published_at: null });
    await expect(sql`insert into svc_kit.outbox (id, subject, data) values (${id}, 'x', '')`).rejects.toMatchObject({ code: '23505' });
    // A row is encoded (data) or plain (body), never both or neither; append_outbox, the
    // one writer, is bound to this schema's table whatever the caller's search_path.
    const plain = '6f1c2b3a-0000-4000-8000-000000000002';
    await sql`select svc_kit.append_outbox(${plain}::uuid, 'thing_happened', null, '{"n": 1}'::jsonb, '{"traceparent": "t"}'::jsonb)`;
    const [p] = await sql<{ data: Buffer | null; body: unknown; headers: unknown }[]>`select data, body, headers from svc_kit.outbox where id = ${plain}`;
    expect(p).toEqual({ data: null, body: { n: 1 }, headers: { traceparent: 't' } });
    await expect(sql`select svc_kit.append_outbox(gen_random_uuid(), 'x', null, null, null)`).rejects.toMatchObject({ code: '23514' });
    await expect(sql`select svc_kit.append_outbox(gen_random_uuid(), 'x', '\x01'::bytea, '{}'::jsonb, null)`).rejects.toMatchObject({ code: '23514' });

    await sql`insert into svc_kit.processed_events (consumer, event_id) values ('c', ${id})`;
    await expect(sql`insert into svc_kit.processed_events (consumer, event_id) values ('c', ${id})`).rejects.toMatchObject({ code: '23505' });
    await sql`insert into svc_kit.processed_events (consumer, event_id) values ('other', ${id})`;
  });
});

describe('runMigrations', () => {
  test('applying twice is idempotent: the second run applies nothing and changes nothing', async () => {
    const src = source('service', {
      '0001_things.sql': 'create table things (id serial primary key, name text not null);',
      '0002_seed.sql': "insert into things (name) values ('a'), ('b');",
    });
    const first = await runMigrations(sql, { schema: 'svc_twice', sources: [KIT_MIGRATIONS, src] });
    expect(first.applied).toEqual(['kit/baseline', 'service/0001_things', 'service/0002_seed']);
    const thingsBefore = await sql`select * from svc_twice.things order by id`;
    const recordBefore = await sql`select * from svc_twice.schema_migrations order by id`;

    const second = await runMigrations(sql, { schema: 'svc_twice', sources: [KIT_MIGRATIONS, src] });
    expect(second).toEqual({ schema: 'svc_twice', applied: [], functions: [] });
    expect(await sql`select * from svc_twice.things order by id`).toEqual(thingsBefore);
    expect(await sql`select * from svc_twice.schema_migrations order by id`).toEqual(recordBefore);
    expect(thingsBefore).toHaveLength(2);
    expect(recordBefore).toHaveLength(6);
  });

  test('concurrent runs on the same schema apply every migration exactly once, without error', async () => {
    const src = source('service', {
      // The sleep keeps the first run inside its transaction while the others arrive.
      '0001_counter.sql': 'create table counter (n int not null); select pg_sleep(0.2);',
      '0002_bump.sql': 'insert into counter (n) values (1);',
    });
    const clients = db.embedded ? [sql] : Array.from({ length: 5 }, () => createSql(db.url, { max: 2 }));
    try {
      const runs = await Promise.all(Array.from({ length: 5 }, (_, i) => runMigrations(clients[i % clients.length]!, { schema: 'svc_race', sources: [KIT_MIGRATIONS, src] })));
      const all = runs.flatMap((r) => r.applied).sort();
      expect(all).toEqual(['kit/baseline', 'service/0001_counter', 'service/0002_bump']);
      expect(runs.filter((r) => r.applied.length > 0)).toHaveLength(1);
    } finally {
      if (!db.embedded) await Promise.all(clients.map((c) => c.end({ timeout: 5 })));
    }
    expect(await appliedIds('svc_race')).toEqual([...KIT_IDS, 'service/0001_counter', 'service/0002_bump']);
    expect(await sql`select n from svc_race.counter`).toEqual([{ n: 1 }]);
  });

  test('concurrent runs on different schemas: CREATE EXTENSION and CREATE SCHEMA never race', async () => {
    const src = source('service', {
      '0001_ext.sql': 'create extension if not exists btree_gist with schema public; select pg_sleep(0.05);',
      '0002_ranges.sql': 'create table spans (k int not null, during int4range not null, exclude using gist (k with =, during with &&));',
    });
    const schemas = ['svc_par_a', 'svc_par_b', 'svc_par_c', 'svc_par_d', 'svc_par_e'];
    const clients = db.embedded ? [sql] : schemas.map(() => createSql(db.url, { max: 2 }));
    try {
      const runs = await Promise.all(schemas.map((schema, i) => runMigrations(clients[i % clients.length]!, { schema, sources: [src] })));
      for (const r of runs) expect(r.applied).toEqual(['service/0001_ext', 'service/0002_ranges']);
    } finally {
      if (!db.embedded) await Promise.all(clients.map((c) => c.end({ timeout: 5 })));
    }
    await sql`insert into svc_par_c.spans values (1, '[1,5)')`;
    await expect(sql`insert into svc_par_c.spans values (1, '[3,8)')`).rejects.toMatchObject({ code: '23P01' });
  });

  test('an applied migration whose checksum changed is refused, and nothing else is applied', async () => {
    const src = source('service', { '0001_widgets.sql': 'create table widgets (id int primary key);' });
    await runMigrations(sql, { schema: 'svc_edit', sources: [src] });

    appendFileSync(join(src.dir, '0001_widgets.sql'), '\nalter table widgets add column name text;');
    writeFileSync(join(src.dir, '0002_gadgets.sql'), 'create table gadgets (id int primary key);');
    await expect(runMigrations(sql, { schema: 'svc_edit', sources: [src] })).rejects.toThrow(
      /migration service\/0001_widgets \(.*0001_widgets\.sql\) was changed after it was applied/,
    );
    expect(await appliedIds('svc_edit')).toEqual(['service/0001_widgets']);
    expect(await tableExists('svc_edit', 'gadgets')).toBe(false);
  });

  test('a failing file rolls back the whole run and names the file', async () => {
    const src = source('service', {
      '0001_fine.sql': 'create table fine (id int);',
      '0002_broken.sql': 'create table broken (id int); insert into no_such_table values (1);',
    });
    const err = await runMigrations(sql, { schema: 'svc_fail', sources: [src] }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/migration service\/0002_broken .* failed on schema svc_fail/);
    expect((err as Error).cause).toMatchObject({ code: '42P01' });
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from pg_namespace where nspname = 'svc_fail'`;
    expect(row!.n).toBe(0);
  });

  test('two schemas are independent', async () => {
    const src = source('service', { '0001_items.sql': 'create table items (id int primary key);' });
    expect((await runMigrations(sql, { schema: 'svc_one', sources: [src] })).applied).toEqual(['service/0001_items']);
    expect(await tableExists('svc_two', 'items')).toBe(false);
    expect((await runMigrations(sql, { schema: 'svc_two', sources: [src] })).applied).toEqual(['service/0001_items']);

    writeFileSync(join(src.dir, '0002_more.sql'), 'create table more (id int primary key);');
    expect((await runMigrations(sql, { schema: 'svc_one', sources: [src] })).applied).toEqual(['service/0002_more']);
    expect(await appliedIds('svc_one')).toEqual(['service/0001_items', 'service/0002_more']);
    expect(await appliedIds('svc_two')).toEqual(['service/0001_items']);
    expect(await tableExists('svc_two', 'more')).toBe(false);

    await sql`insert into svc_one.items values (1)`;
    await sql`insert into svc_two.items values (1)`; // no conflict: a different table
  });

  test('sources run in the given order, files sorted by name within each', async () => {
    const trail = (id: string) => `create table if not exists trail (n serial primary key, id text not null); insert into trail (id) values ('${id}');`;
    // Written out of order: readdir order must not matter.
    const a = source('alpha', { '0010_c.sql': trail('alpha/0010_c'), '0001_a.sql': trail('alpha/0001_a'), '0002_b.sql': trail('alpha/0002_b') });
    const b = source('beta', { '0002_y.sql': trail('beta/0002_y'), '0001_x.sql': trail('beta/0001_x') });

    const ab = await runMigrations(sql, { schema: 'svc_order_ab', sources: [a, b] });
    const ba = await runMigrations(sql, { schema: 'svc_order_ba', sources: [b, a] });
    expect(ab.applied).toEqual(['alpha/0001_a', 'alpha/0002_b', 'alpha/0010_c', 'beta/0001_x', 'beta/0002_y']);
    expect(ba.applied).toEqual(['beta/0001_x', 'beta/0002_y', 'alpha/0001_a', 'alpha/0002_b', 'alpha/0010_c']);
    expect((await sql<{ id: string }[]>`select id from svc_order_ab.trail order by n`).map((r) => r.id)).toEqual(ab.applied);
    expect((await sql<{ id: string }[]>`select id from svc_order_ba.trail order by n`).map((r) => r.id)).toEqual(ba.applied);
  });

  test('files set search_path freely without leaking into the next file', async () => {
    const src = source('service', {
      '0001_elsewhere.sql': 'set local search_path to public;',
      '0002_here.sql': 'create table here (id int);',
    });
    await runMigrations(sql, { schema: 'svc_path', sources: [src] });
    expect(await tableExists('svc_path', 'here')).toBe(true);
    expect(await tableExists('public', 'here')).toBe(false);
  });

  test('rejects bad schema names, bad file names and duplicate numbers before touching the database', async () => {
    for (const schema of ['Svc', '1svc', 'svc-a', 'svc;drop schema public', '', 'svc.a']) {
      await expect(runMigrations(sql, { schema, sources: [KIT_MIGRATIONS] })).rejects.toThrow(/invalid schema name/);
    }
    await expect(runMigrations(sql, { schema: 'svc_bad', sources: [source('service', { '1_x.sql': 'select 1;' })] })).rejects.toThrow(/is not named NNNN_name\.sql/);
    await expect(runMigrations(sql, { schema: 'svc_bad', sources: [source('service', { '0001_a.sql': 'select 1;', '0001_b.sql': 'select 1;' })] })).rejects.toThrow(
      /share the number 0001/,
    );
    await expect(runMigrations(sql, { schema: 'svc_bad', sources: [KIT_MIGRATIONS, { ...KIT_MIGRATIONS }] })).rejects.toThrow(/used by two sources/);
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from pg_namespace where nspname = 'svc_bad'`;
    expect(row!.n).toBe(0);
  });
});
