import { create } from '@bufbuild/protobuf';
import { RecordedRequestSchema } from '../gen/psync/identity/v1/identity_pb';
import { REQUEST_LOG_LIMITS as LIMITS } from '../services/kit/base';
import { recordViolations } from '../services/identity/request-log-intake';
import { knownFieldPath, UNKNOWN_FIELD } from './contract-field-names';
import { sanitiseRecord, storedFieldPath, storedPathValue, storedText } from './request-log-sanitiser';
import type { RequestRecordInit } from './request-recorder';

const KEY = `psk_abcdefghijklmnop_${'A'.repeat(43)}`;
const TOKEN = 'pst_eyJ3cyI6IngifQ.sig-sig-sig';
const SECRET = `whsec_${'Q'.repeat(43)}`;
const long = (c: string) => c.repeat(128);

/** A record as requestRecord builds it, with `over` replacing fields. */
function record(over: Partial<Record<keyof RequestRecordInit, unknown>> = {}): RequestRecordInit {
  return {
    requestId: '6f1c1f7e-3f0a-4e0b-9d53-2a8e5c1b7a10',
    workspaceId: '0b6f0f57-8f53-4c1c-8a3f-0c0a3f3e0a11',
    keyId: 'abcdefghijklmnop',
    receivedAt: { seconds: 1_764_374_400n, nanos: 0 },
    method: 'PUT',
    route: '/v1/blocks/{external_uid}',
    pathParams: { external_uid: 'b-1' },
    status: 400,
    code: 'validation_failed',
    errors: [{ field: 'check_in', code: 'format' }],
    durationMs: 3,
    ...over,
  } as RequestRecordInit;
}

describe('storedText', () => {
  test('U+0000 and unpaired surrogates become U+FFFD; storable text is returned as it is', () => {
    expect(storedText('a\u0000b', 10)).toBe('a\uFFFDb');
    expect(storedText('x\uD800y\uDC00', 10)).toBe('x\uFFFDy\uFFFD');
    const fine = 'résumé 🏠';
    expect(storedText(fine, 100)).toBe(fine);
  });

  test('cut to the limit in code points (as max_len and char_length count), ending in …, never splitting a pair', () => {
    expect(storedText('abcdef', 6)).toBe('abcdef');
    expect(storedText('abcdefg', 6)).toBe('abcde…');
    // Six houses are twelve UTF-16 units but six characters: within a limit of six.
    expect(storedText('🏠'.repeat(6), 6)).toBe('🏠'.repeat(6));
    expect(storedText('🏠'.repeat(7), 6)).toBe(`${'🏠'.repeat(5)}…`);
  });
});

describe('knownFieldPath: only the contract’s names are stored', () => {
  test.each([
    ['check_in', 'check_in'],
    ['photos[1].url', 'photos[1].url'],
    ['address.country', 'address.country'],
    ['body', 'body'],
    ['page_size', 'page_size'],
    ['note', UNKNOWN_FIELD],
    ['address.x', `address.${UNKNOWN_FIELD}`],
    ['photos[0].x.y', `photos[0].${UNKNOWN_FIELD}`],
    ['\u0000', UNKNOWN_FIELD],
    ['check_in\u0000', UNKNOWN_FIELD],
    ['check_in-x', UNKNOWN_FIELD],
    [`${long('a')}….${long('b')}…`, UNKNOWN_FIELD],
    [KEY, UNKNOWN_FIELD],
    ['', UNKNOWN_FIELD],
    ['.check_in', UNKNOWN_FIELD],
    ['[0]', UNKNOWN_FIELD],
    ['photos[0]x', `photos[0].${UNKNOWN_FIELD}`],
  ])('%j → %j', (field, stored) => {
    expect(knownFieldPath(field)).toBe(stored);
  });
});

describe('path values: secrets scrubbed by the logger’s rule, storable, bounded', () => {
  test.each([
    [KEY, 'psk_[redacted]'],
    [`resv_${KEY}`, 'resv_psk_[redacted]'],
    [`${TOKEN}`, 'pst_[redacted]'],
    [`b-${SECRET}-x`, 'b-whsec_[redacted]'],
    ['resv-100234', 'resv-100234'],
  ])('%j → %j', (value, stored) => {
    expect(storedPathValue(value)).toBe(stored);
  });

  test('a value beyond the limit is cut to it', () => {
    expect(Array.from(storedPathValue('x'.repeat(5000)))).toHaveLength(LIMITS.pathParamValue);
  });
});

describe('sanitiseRecord', () => {
  test('a clean record is unchanged', () => {
    expect(sanitiseRecord(record())).toEqual(record());
  });

  test('every poison of the December review (docs/security/threat-model.md) becomes a record identity accepts', () => {
    const deep = Array.from({ length: 6 }, (_, i) => long(String.fromCharCode(97 + i))).join('.');
    const poisoned = record({
      pathParams: { external_uid: KEY, ['\u0000name']: 'x\u0000y', ...Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`p${i}`, 'v'])) },
      errors: [
        { field: '\u0000', code: 'unknown_field' },
        { field: deep, code: 'invalid' },
        { field: KEY, code: 'unknown_field' },
        ...Array.from({ length: 150 }, () => ({ field: 'check_in', code: 'format' })),
      ],
    });
    expect(recordViolations(create(RecordedRequestSchema, poisoned)).length).toBeGreaterThan(0);

    const clean = sanitiseRecord(poisoned);
    expect(recordViolations(create(RecordedRequestSchema, clean))).toEqual([]);
    expect(clean.pathParams!.external_uid).toBe('psk_[redacted]');
    expect(Object.keys(clean.pathParams!)).toHaveLength(LIMITS.pathParams);
    expect(clean.errors).toHaveLength(LIMITS.violations);
    expect(clean.errors!.slice(0, 3)).toEqual([
      { field: UNKNOWN_FIELD, code: 'unknown_field' },
      { field: UNKNOWN_FIELD, code: 'invalid' },
      { field: UNKNOWN_FIELD, code: 'unknown_field' },
    ]);
    expect(JSON.stringify({ ...clean, receivedAt: undefined })).not.toContain(KEY.slice(4));
  });

  test('a field path of contract names beyond the limit is cut to it', () => {
    const path = Array.from({ length: 100 }, () => 'address').join('.');
    expect(Array.from(storedFieldPath(path))).toHaveLength(LIMITS.fieldPath);
  });

  test('the record passed in is left as it is', () => {
    const poisoned = record({ pathParams: { external_uid: KEY } });
    sanitiseRecord(poisoned);
    expect(poisoned.pathParams).toEqual({ external_uid: KEY });
  });
});
