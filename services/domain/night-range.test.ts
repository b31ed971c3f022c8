/**
 * The date and night-range rules (night-range.ts), beside their code: every caller (the
 * calendar, the gateway's block route, test events, the nights read-back) relies on
 * exactly these answers.
 */
import { MAX_NIGHTS } from '../kit/base';
import { checkRange, formatDay, nightCountProblem, nightsOf, parseDay } from './night-range';

describe('parseDay / formatDay', () => {
  test('a calendar date round-trips through its day number, whatever the year', () => {
    for (const d of ['1970-01-01', '2024-02-29', '2031-12-31', '0001-01-01', '0099-07-04', '9999-12-31']) expect(formatDay(parseDay(d)!)).toBe(d);
    expect(parseDay('1970-01-02')).toBe(1);
    expect(parseDay('1969-12-31')).toBe(-1);
  });

  test('only real dates in the one shape parse', () => {
    for (const bad of ['2023-02-29', '2024-13-01', '2024-00-10', '2024-04-31', '0000-01-01', '2024-1-01', '2024-01-01T00:00:00Z', ' 2024-01-01', '20240101', '']) {
      expect([bad, parseDay(bad)]).toEqual([bad, undefined]);
    }
  });
});

describe('checkRange', () => {
  test('a range of 1 to MAX_NIGHTS nights is a span', () => {
    expect(checkRange('2031-01-01', '2031-01-02')).toEqual({ span: { checkIn: '2031-01-01', checkOut: '2031-01-02', nights: 1 }, problems: [] });
    expect(checkRange('2024-02-28', '2024-03-01').span?.nights).toBe(2);
    expect(checkRange('2030-01-01', formatDay(parseDay('2030-01-01')! + MAX_NIGHTS)).span?.nights).toBe(MAX_NIGHTS);
  });

  test('each field names its own problem; the range rule is reported on check_out', () => {
    expect(checkRange('', '').problems).toEqual([
      { field: 'check_in', code: 'required' },
      { field: 'check_out', code: 'required' },
    ]);
    expect(checkRange('2031-02-30', 'x').problems).toEqual([
      { field: 'check_in', code: 'format' },
      { field: 'check_out', code: 'format' },
    ]);
    expect(checkRange('2031-01-02', '2031-01-02').problems).toEqual([{ field: 'check_out', code: 'invalid' }]);
    expect(checkRange('2031-01-03', '2031-01-02').problems).toEqual([{ field: 'check_out', code: 'invalid' }]);
    expect(checkRange('2030-01-01', formatDay(parseDay('2030-01-01')! + MAX_NIGHTS + 1)).problems).toEqual([{ field: 'check_out', code: 'maximum' }]);
  });

  test('a caller may set its own limit (the nights read-back reads at most 366)', () => {
    expect(checkRange('2032-01-01', '2033-01-01', 366).span?.nights).toBe(366);
    expect(checkRange('2032-01-01', '2033-01-02', 366).problems).toEqual([{ field: 'check_out', code: 'maximum' }]);
  });

  test('nightCountProblem is the same rule on a count', () => {
    expect([0, 1, MAX_NIGHTS, MAX_NIGHTS + 1, -3].map((n) => nightCountProblem(n)?.code)).toEqual(['invalid', undefined, undefined, 'maximum', 'invalid']);
  });
});

test('nightsOf lists every night of [check_in, check_out), across a leap day', () => {
  expect(nightsOf('2024-02-27', '2024-03-02')).toEqual(['2024-02-27', '2024-02-28', '2024-02-29', '2024-03-01']);
  expect(nightsOf('2024-03-02', '2024-03-02')).toEqual([]);
  expect(nightsOf('nope', '2024-03-02')).toEqual([]);
});
