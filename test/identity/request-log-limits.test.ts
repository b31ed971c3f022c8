/**
 * The request log's limits are named once in TypeScript (services/kit/base/request-log-limits.ts):
 * the gateway bounds its records to them, identity refuses a record beyond them by the
 * .proto rules of RecordedRequest/RecordedViolation, and identity.request_log checks
 * some of them again. This file fails when the .proto or the database says another
 * number than TypeScript (so the gateway would send what identity refuses), and when
 * RecordRequests' items stop being left to its handler (one bad record would refuse
 * the whole batch again).
 *
 * Real PostgreSQL when DATABASE_URL is set, else embedded PGlite.
 */
import { getOption, hasOption, type DescField, type DescMessage } from '@bufbuild/protobuf';
import { field as fieldRules, Ignore } from '../../gen/buf/validate/validate_pb';
import { RecordedRequestSchema, RecordedViolationSchema, RecordRequestsRequestSchema } from '../../gen/psync/identity/v1/identity_pb';
import { REQUEST_SCHEMAS } from '../../gateway/contract';
import { identityModule } from '../../services/identity/module';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { REQUEST_LOG_LIMITS as LIMITS } from '../../services/kit/base';
import { startTestDatabase, type TestDatabase } from '../support/database';

function rulesOf(desc: DescMessage, name: string) {
  const f = desc.fields.find((x) => x.name === name) as DescField;
  expect(hasOption(f, fieldRules)).toBe(true);
  return getOption(f, fieldRules);
}

/** `string.max_len` of a field. */
function maxLen(desc: DescMessage, name: string): number {
  const rules = rulesOf(desc, name);
  expect(rules.type.case).toBe('string');
  return Number((rules.type.value as { maxLen?: bigint }).maxLen);
}

describe('the .proto rules', () => {
  test('RecordedRequest and RecordedViolation: the lengths and counts of REQUEST_LOG_LIMITS', () => {
    expect({
      fieldPath: maxLen(RecordedViolationSchema, 'field'),
      violationCode: maxLen(RecordedViolationSchema, 'code'),
      code: maxLen(RecordedRequestSchema, 'code'),
      route: maxLen(RecordedRequestSchema, 'route'),
      method: maxLen(RecordedRequestSchema, 'method'),
      keyId: maxLen(RecordedRequestSchema, 'key_id'),
    }).toEqual({
      fieldPath: LIMITS.fieldPath,
      violationCode: LIMITS.code,
      code: LIMITS.code,
      route: LIMITS.route,
      method: LIMITS.method,
      keyId: LIMITS.keyId,
    });

    const errors = rulesOf(RecordedRequestSchema, 'errors');
    expect(errors.type.case).toBe('repeated');
    expect(Number((errors.type.value as { maxItems?: bigint }).maxItems)).toBe(LIMITS.violations);

    const params = rulesOf(RecordedRequestSchema, 'path_params');
    expect(params.type.case).toBe('map');
    const map = params.type.value as { maxPairs?: bigint; keys?: { type: { value: { maxLen?: bigint } } }; values?: { type: { value: { maxLen?: bigint } } } };
    expect([Number(map.maxPairs), Number(map.keys?.type.value.maxLen), Number(map.values?.type.value.maxLen)]).toEqual([
      LIMITS.pathParams,
      LIMITS.pathParamName,
      LIMITS.pathParamValue,
    ]);
  });

  test("RecordRequests' records are left to its handler, which refuses a bad one alone", () => {
    const rules = rulesOf(RecordRequestsRequestSchema, 'requests');
    expect(rules.type.case).toBe('repeated');
    expect((rules.type.value as { items?: { ignore: Ignore } }).items?.ignore).toBe(Ignore.ALWAYS);
  });
});

describe('the public path parameters', () => {
  test('every path identifier the contract accepts fits a stored path value', () => {
    const paths = Object.entries(REQUEST_SCHEMAS as Record<string, { properties?: Record<string, { maxLength?: number; format?: string }> }>).filter(([name]) =>
      name.endsWith('Path'),
    );
    expect(paths.length).toBeGreaterThanOrEqual(4);
    for (const [, def] of paths) {
      const props = Object.entries(def.properties ?? {});
      expect(props.length).toBeLessThanOrEqual(LIMITS.pathParams);
      for (const [name, p] of props) {
        expect(name.length).toBeLessThanOrEqual(LIMITS.pathParamName);
        expect(p.format === 'uuid' || (p.maxLength !== undefined && p.maxLength <= LIMITS.pathParamValue)).toBe(true);
      }
    }
  });
});

describe('identity.request_log', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await startTestDatabase();
    await runMigrations(db.sql, { schema: 'identity', sources: [KIT_MIGRATIONS, identityModule.migrations] });
  }, 120_000);
  afterAll(async () => db?.stop());

  test("the table's checks on method, route and code are REQUEST_LOG_LIMITS'", async () => {
    const checks = await db.sql<{ def: string }[]>`
      select pg_get_constraintdef(oid) as def from pg_constraint
      where conrelid = 'identity.request_log'::regclass and contype = 'c'`;
    const defs = checks.map((c) => c.def).join('\n');
    expect(defs).toMatch(new RegExp(`char_length\\(method\\) >= 1\\) AND \\(char_length\\(method\\) <= ${LIMITS.method}\\)`));
    expect(defs).toMatch(new RegExp(`char_length\\(route\\) >= 1\\) AND \\(char_length\\(route\\) <= ${LIMITS.route}\\)`));
    expect(defs).toMatch(new RegExp(`char_length\\(code\\) >= 1\\) AND \\(char_length\\(code\\) <= ${LIMITS.code}\\)`));
  });
});
