/**
 * The contract's limits are named once per language: services/kit/base/limits.ts for
 * TypeScript, one SQL function each for the database (calendar.max_nights(),
 * identity.rate_window_seconds()), and the .proto rules state them for the services
 * (the gateway's request schemas read theirs from there, gateway/proto-rules.ts). This file runs the migrations (real PostgreSQL with
 * DATABASE_URL, embedded PGlite otherwise), selects the SQL values and fails when any
 * of them disagrees with TypeScript — and checks that the database's rules are built
 * on those functions, so the number cannot hide in a literal again.
 */
import { getOption, hasOption, type DescMessage } from '@bufbuild/protobuf';
import { field as fieldRules } from '../../gen/buf/validate/validate_pb';
import { ListBlocksRequestSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import { ListPropertiesRequestSchema, SearchPublicListingsRequestSchema } from '../../gen/psync/catalog/v1/catalog_pb';
import { ListDeliveryLogRequestSchema } from '../../gen/psync/notifications/v1/notifications_pb';
import { calendarModule } from '../../services/calendar/module';
import { identityModule } from '../../services/identity/module';
import { MAX_NIGHTS, PAGE_SIZE_MAX, RATE_WINDOW_SECONDS } from '../../services/kit/base';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { startTestDatabase, type TestDatabase } from '../support/database';

jest.setTimeout(120_000);

let db: TestDatabase;

beforeAll(async () => {
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'calendar', sources: [KIT_MIGRATIONS, calendarModule.migrations] });
  await runMigrations(db.sql, { schema: 'identity', sources: [KIT_MIGRATIONS, identityModule.migrations] });
}, 120_000);

afterAll(async () => {
  await db?.stop();
});

describe('SQL and TypeScript', () => {
  test('calendar.max_nights() is MAX_NIGHTS, and the range rules of blocks, holds and bookings and the last span class use it', async () => {
    const [row] = await db.sql<{ n: number; span: number }[]>`select calendar.max_nights() as n, calendar.block_span_max_nights(9) as span`;
    expect(row).toEqual({ n: MAX_NIGHTS, span: MAX_NIGHTS });
    const checks = await db.sql<{ table: string; def: string }[]>`
      select conrelid::regclass::text as table, pg_get_constraintdef(oid) as def from pg_constraint
      where conname in ('blocks_nights', 'holds_nights', 'bookings_nights') order by conname`;
    expect(checks.map((c) => c.table)).toEqual(['calendar.blocks', 'calendar.bookings', 'calendar.holds']);
    for (const c of checks) expect(c.def).toContain('<= calendar.max_nights()');
    // Exactly at the limit is a block; one night more is refused.
    await db.sql`insert into calendar.blocks (workspace_id, external_uid, listing_id, check_in, check_out, reason)
                 values ('w-limits', 'at', 'L', '2031-01-01', date '2031-01-01' + ${MAX_NIGHTS}::int, 'other')`;
    await expect(db.sql`insert into calendar.blocks (workspace_id, external_uid, listing_id, check_in, check_out, reason)
                        values ('w-limits', 'over', 'L', '2031-01-01', date '2031-01-01' + ${MAX_NIGHTS + 1}::int, 'other')`).rejects.toMatchObject({ code: '23514' });
  });

  test('identity.rate_window_seconds() is RATE_WINDOW_SECONDS, and windows start on its multiples since the epoch', async () => {
    const [row] = await db.sql<{ w: number; start: Date; next: Date }[]>`
      select identity.rate_window_seconds() as w,
             identity.rate_window_start(to_timestamp(${RATE_WINDOW_SECONDS * 1000 + RATE_WINDOW_SECONDS - 1})) as start,
             identity.rate_window_start(to_timestamp(${RATE_WINDOW_SECONDS * 1001})) as next`;
    expect(row!.w).toBe(RATE_WINDOW_SECONDS);
    expect(row!.start.getTime()).toBe(RATE_WINDOW_SECONDS * 1000 * 1000);
    expect(row!.next.getTime()).toBe(RATE_WINDOW_SECONDS * 1001 * 1000);
  });

  test('no function of the calendar or identity schema encodes protobuf or spells the limits as literals', async () => {
    const defs = await db.sql<{ name: string; def: string }[]>`
      select p.oid::regprocedure::text as name, pg_get_functiondef(p.oid) as def
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname in ('calendar', 'identity') and p.prokind = 'f'`;
    expect(defs.length).toBeGreaterThan(10);
    const offenders = defs.filter(
      (d) =>
        /pb_|set_byte|varint/i.test(d.def) ||
        (!d.name.startsWith('calendar.max_nights(') && new RegExp(`\\b${MAX_NIGHTS}\\b`).test(d.def)) ||
        (!d.name.startsWith('identity.rate_window_seconds(') && new RegExp(`\\b${RATE_WINDOW_SECONDS}\\b`).test(d.def)),
    );
    expect(offenders.map((d) => d.name)).toEqual([]);
  });
});

describe('the .proto rules', () => {
  test.each([ListBlocksRequestSchema, ListPropertiesRequestSchema, SearchPublicListingsRequestSchema, ListDeliveryLogRequestSchema].map((s) => [s.typeName, s] as const))(
    '%s page_size: protovalidate allows at most PAGE_SIZE_MAX',
    (_name, schema: DescMessage) => {
      const f = schema.fields.find((x) => x.name === 'page_size')!;
      expect(hasOption(f, fieldRules)).toBe(true);
      const rules = getOption(f, fieldRules);
      expect(rules.type.case).toBe('int32');
      expect((rules.type.value as { lessThan: { case: string; value: number } }).lessThan).toEqual({ case: 'lte', value: PAGE_SIZE_MAX });
    },
  );
});
