/**
 * Database spans and `db.client.operation.duration` (services/kit/db/sql-telemetry.ts) on
 * the test database (real PostgreSQL with DATABASE_URL, embedded PGlite otherwise),
 * through the postgres.js instance createSql makes: statements, fragments, a
 * transaction with a savepoint, a reserved connection, a failing statement and
 * `sql.unsafe`, read back from an in-memory span exporter and the process's /metrics.
 */
import { ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createLogger } from '../../services/kit/base';
import { operationName } from '../../services/kit/db';
import { inSpan, startTelemetry, type Telemetry } from '../../services/kit/telemetry';
import { startTestDatabase, type TestDatabase } from '../support/database';

const log = createLogger({ level: 'silent', name: 'sql-telemetry-test' });
const exporter = new InMemorySpanExporter();
let telemetry: Telemetry;
let db: TestDatabase;

beforeAll(async () => {
  telemetry = await startTelemetry({ name: 'test', host: '127.0.0.1', metricsPort: 0, log, env: {}, spanProcessors: [new SimpleSpanProcessor(exporter)] });
  db = await startTestDatabase();
});

afterAll(async () => {
  await db?.stop();
  await telemetry?.shutdown();
});

beforeEach(() => exporter.reset());

const dbSpans = () => exporter.getFinishedSpans().filter((s) => s.attributes['db.system.name'] === 'postgresql');
const childOf = (s: ReadableSpan, parent: ReadableSpan) => s.parentSpanContext?.spanId === parent.spanContext().spanId;

async function metricsText(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${telemetry.metricsPort}/metrics`);
  return res.text();
}

test('operationName is the first keyword, upper-cased', () => {
  expect(operationName('select 1')).toBe('SELECT');
  expect(operationName('\n  with x as (select 1) insert into t select * from x')).toBe('WITH');
  expect(operationName('(select 1) union (select 2)')).toBe('SELECT');
  expect(operationName('')).toBeUndefined();
});

test('each statement of a request is a CLIENT span under it, with the conventions attributes and placeholders, not values', async () => {
  const { sql } = db;
  const secret = 'guest-name-never-in-a-span';
  await inSpan('GET /v1/test', { kind: SpanKind.SERVER, parent: ROOT_CONTEXT }, async () => {
    const cond = sql`where n = ${2}`; // a fragment: never a statement of its own
    const rows = await sql`select n from (values (1), (2)) as t(n) ${cond}`;
    expect(rows).toEqual([{ n: 2 }]);
    await sql`select ${secret}::text as v`;
  });
  const root = exporter.getFinishedSpans().find((s) => s.name === 'GET /v1/test')!;
  const spans = dbSpans();
  expect(spans).toHaveLength(2);
  for (const s of spans) {
    expect(s.kind).toBe(SpanKind.CLIENT);
    expect(childOf(s, root)).toBe(true);
    expect(s.name).toMatch(/^SELECT /);
    expect(s.attributes['db.operation.name']).toBe('SELECT');
    expect(s.attributes['db.namespace']).toEqual(expect.any(String));
    expect(s.attributes['server.address']).toEqual(expect.any(String));
  }
  expect(spans[0]!.attributes['db.query.text']).toMatch(/where n = \$1/);
  expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain(secret);
});

test('a transaction, its savepoint and a reserved connection are measured statement by statement', async () => {
  const { sql } = db;
  await inSpan('PUT /v1/test', { kind: SpanKind.SERVER, parent: ROOT_CONTEXT }, async () => {
    await sql.begin(async (tx) => {
      await tx`select 1 as a`;
      await tx.savepoint(async (sp) => {
        await sp`select 2 as b`;
      });
    });
    if (!db.embedded) {
      const reserved = await sql.reserve();
      try {
        await reserved`select 3 as c`;
      } finally {
        reserved.release();
      }
    }
  });
  const texts = dbSpans().map((s) => String(s.attributes['db.query.text']));
  expect(texts).toEqual(expect.arrayContaining([expect.stringContaining('select 1 as a'), expect.stringContaining('select 2 as b')]));
  if (!db.embedded) expect(texts).toEqual(expect.arrayContaining([expect.stringContaining('select 3 as c')]));
});

test('a failing statement carries its SQLSTATE; sql.unsafe keeps its text out; a statement outside any span is measured but not traced', async () => {
  const { sql } = db;
  await inSpan('GET /v1/fails', { kind: SpanKind.SERVER, parent: ROOT_CONTEXT }, async () => {
    await expect(sql`select * from no_such_table_here`).rejects.toMatchObject({ code: '42P01' });
    await sql.unsafe(`select 'literal' as l`);
  });
  await sql`select 4 as background`;
  const spans = dbSpans();
  expect(spans).toHaveLength(2);
  const [failed, unsafe] = spans;
  expect(failed!.attributes).toMatchObject({ 'db.response.status_code': '42P01', 'error.type': '42P01' });
  expect(failed!.status.code).toBe(2); // SpanStatusCode.ERROR
  expect(unsafe!.attributes['db.query.text']).toBeUndefined();

  const text = await metricsText();
  const count = (filter: RegExp) =>
    text
      .split('\n')
      .filter((l) => l.startsWith('db_client_operation_duration_count{') && filter.test(l))
      .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
  expect(count(/db_system_name="postgresql"/)).toBeGreaterThanOrEqual(5);
  expect(count(/error_type="42P01"/)).toBe(1);
  expect(text).toMatch(/# UNIT db_client_operation_duration s/);
});
