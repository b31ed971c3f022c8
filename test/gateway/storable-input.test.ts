/**
 * The gateway's rule for text and instants that can be stored (docs/decisions.md
 * "Text and instants that can be stored"), without a running system: the `date` and
 * `date-time` formats every schema uses, the walk over every decoded string, and the
 * completed_at bound shared with the notifications service.
 */
import { instantMs, storableDate, storableDateTime } from '../../gateway/instant-formats';
import { acknowledgeViolations } from '../../gateway/routes/deletion-requests';
import { COMPLETED_AT_MAX_AHEAD_MS } from '../../gateway/contract';
import { unstorableTextViolations } from '../../gateway/storable-text';
import { schemas } from '../support/request-validators';
import { COMPLETED_AT_MAX_AHEAD_MS as SERVICE_MAX_AHEAD_MS } from '../../services/notifications/deletion-requests';
import { validBlock, validProperty } from './fixtures';

describe('date-time: RFC 3339 inside 0001-01-01T00:00:00Z … 9999-12-31T23:59:59.999…Z after the offset', () => {
  test.each([
    '0001-01-01T00:00:00Z',
    '0001-01-01T01:00:00+01:00',
    '9999-12-31T23:59:59.999999999Z',
    '9999-12-30T23:59:59-23:59',
    '2027-01-02T03:04:05.123+02:00',
    '2016-12-31T23:59:60Z',
    '2027-01-02t03:04:05z',
    '2027-01-02 03:04:05Z',
    '2027-01-02T03:04:05+0200',
    '2027-01-02T03:04:05+02',
  ])('%s is accepted', (text) => {
    expect(storableDateTime(text)).toBe(true);
    expect(schemas.acknowledge.violations({ completed_at: text })).toEqual([]);
  });

  test.each(['0000-01-01T00:00:00Z', '0001-01-01T00:30:00+01:00', '9999-12-31T23:59:59-23:59', '0000-12-31T23:59:59.999Z', '9999-12-31T23:00:00-01:00'])(
    '%s is refused: format',
    (text) => {
      expect(storableDateTime(text)).toBe(false);
      expect(schemas.acknowledge.violations({ completed_at: text })).toEqual([{ field: 'completed_at', code: 'format' }]);
    },
  );

  test('instants are computed from the parts, offsets applied', () => {
    expect(instantMs('2027-01-02T03:04:05.123+02:00')).toBe(Date.UTC(2027, 0, 2, 1, 4, 5, 123));
    expect(instantMs('2027-01-02T03:04:05+0200')).toBe(Date.UTC(2027, 0, 2, 1, 4, 5));
    expect(instantMs('2027-01-02T03:04:05-02')).toBe(Date.UTC(2027, 0, 2, 5, 4, 5));
    expect(instantMs('2016-12-31T23:59:60Z')).toBe(Date.UTC(2016, 11, 31, 23, 59, 59, 999));
    expect(instantMs('0050-06-01T00:00:00Z')).toBe(new Date('0050-06-01T00:00:00Z').getTime());
    expect(instantMs('yesterday')).toBeNaN();
    expect(instantMs('2027-02-30T00:00:00Z')).toBeNaN();
  });
});

describe('date: a full-date of year 0001–9999', () => {
  test('the bounds', () => {
    expect(storableDate('0001-01-01')).toBe(true);
    expect(storableDate('9999-12-31')).toBe(true);
    expect(storableDate('0000-01-01')).toBe(false);
    expect(storableDate('0000-02-29')).toBe(false);
  });

  test('block dates and the GET /blocks query refuse year 0000 as format', () => {
    expect(schemas.block.violations({ ...validBlock(), check_in: '0000-12-30', check_out: '0001-01-02' })).toEqual([{ field: 'check_in', code: 'format' }]);
    expect(schemas.blocksQuery.violations({ from: '0000-01-01', to: '9999-12-31' })).toEqual([{ field: 'from', code: 'format' }]);
  });
});

describe('completed_at in the future', () => {
  const now = Date.UTC(2027, 5, 1, 12, 0, 0);
  const at = (ms: number) => ({ completed_at: new Date(ms).toISOString() });

  test('up to five minutes ahead (clock skew) passes; more is maximum', () => {
    expect(COMPLETED_AT_MAX_AHEAD_MS).toBe(5 * 60_000);
    expect(acknowledgeViolations(at(now + COMPLETED_AT_MAX_AHEAD_MS), [], now)).toEqual([]);
    expect(acknowledgeViolations(at(now + COMPLETED_AT_MAX_AHEAD_MS + 1), [], now)).toEqual([{ field: 'completed_at', code: 'maximum' }]);
    expect(acknowledgeViolations(at(now - 86_400_000), [], now)).toEqual([]);
  });

  test('the gateway and the notifications service share the bound', () => {
    expect(COMPLETED_AT_MAX_AHEAD_MS).toBe(SERVICE_MAX_AHEAD_MS);
  });
});

describe('text that cannot be stored, in every decoded string', () => {
  test('nothing to report in a valid body', () => {
    expect(unstorableTextViolations(validProperty(), 'body', [])).toEqual([]);
  });

  test('body strings at any depth, by dotted path with indices', () => {
    const p = validProperty() as Record<string, any>;
    p.name = 'a\u0000';
    p.address.postal_code = '\ud800';
    p.amenities[2] = 'x\udc00';
    p.photos[1].url = 'https://images.example.com/\u0000.jpg';
    expect(unstorableTextViolations(p, 'body', [])).toEqual([
      { field: 'name', code: 'invalid' },
      { field: 'address.postal_code', code: 'invalid' },
      { field: 'amenities[2]', code: 'invalid' },
      { field: 'photos[1].url', code: 'invalid' },
    ]);
  });

  test('a field the schema already reports is not reported twice', () => {
    const body = { completed_at: '\u0000' };
    const found = schemas.acknowledge.violations(body);
    expect(found).toEqual([{ field: 'completed_at', code: 'format' }]);
    expect(unstorableTextViolations(body, 'body', found)).toEqual([]);
  });

  test('a body that is one string is field body', () => {
    expect(unstorableTextViolations('\u0000', 'body', [])).toEqual([{ field: 'body', code: 'invalid' }]);
  });

  test('parameters are reported by name, a repeated query parameter too', () => {
    expect(unstorableTextViolations({ provider_id: 'a\u0000b' }, 'parameters', [])).toEqual([{ field: 'provider_id', code: 'invalid' }]);
    expect(unstorableTextViolations({ from: ['2027-01-01', '\u0000'] }, 'parameters', [])).toEqual([{ field: 'from', code: 'invalid' }]);
    expect(unstorableTextViolations({ external_uid: 'fine' }, 'parameters', [])).toEqual([]);
  });

  test('a hostile nesting depth neither overflows the stack nor is walked past what any schema describes', () => {
    let deep: unknown = '\u0000';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(unstorableTextViolations({ name: deep }, 'body', [])).toEqual([]);
    expect(schemas.property.violations({ ...validProperty(), name: deep })).toEqual([{ field: 'name', code: 'type' }]);
  });

  test('a surrogate pair is text like any other', () => {
    expect(unstorableTextViolations({ name: 'pool 🏊' }, 'body', [])).toEqual([]);
  });
});
