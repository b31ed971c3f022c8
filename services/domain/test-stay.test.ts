/**
 * A test event's stay (test-stay.ts), beside its code: the default stay, the rule it
 * shares with blocks (night-range.ts), and the edges the gateway and the notifications
 * service both rely on.
 */
import { MAX_NIGHTS } from '../kit/base';
import { formatDay, parseDay } from './night-range';
import { resolveTestStay, TEST_STAY_LEAD_DAYS, TEST_STAY_NIGHTS } from './test-stay';

const now = new Date('2031-05-10T23:59:59Z');

test('without dates: TEST_STAY_LEAD_DAYS from today (UTC) for TEST_STAY_NIGHTS nights', () => {
  const checkIn = formatDay(parseDay('2031-05-10')! + TEST_STAY_LEAD_DAYS);
  expect(resolveTestStay(undefined, undefined, now)).toEqual({ checkIn, checkOut: formatDay(parseDay(checkIn)! + TEST_STAY_NIGHTS), nights: TEST_STAY_NIGHTS });
});

test('a check-in alone gets the default length; both dates are taken as given', () => {
  expect(resolveTestStay('2031-07-01', undefined, now)).toEqual({ checkIn: '2031-07-01', checkOut: '2031-07-03', nights: 2 });
  expect(resolveTestStay('2031-07-01', '2031-07-08', now)).toEqual({ checkIn: '2031-07-01', checkOut: '2031-07-08', nights: 7 });
});

test('the block range rule, field by field', () => {
  expect(resolveTestStay('2031-02-30', '2031-03-01', now)).toEqual([{ field: 'check_in', code: 'format' }]);
  expect(resolveTestStay('2031-07-01', 'soon', now)).toEqual([{ field: 'check_out', code: 'format' }]);
  expect(resolveTestStay('2031-07-01', '2031-07-01', now)).toEqual([{ field: 'check_out', code: 'invalid' }]);
  expect(resolveTestStay('2031-07-01', formatDay(parseDay('2031-07-01')! + MAX_NIGHTS + 1), now)).toEqual([{ field: 'check_out', code: 'maximum' }]);
});

test('a default departure past year 9999 is refused on check_in', () => {
  expect(resolveTestStay('9999-12-31', undefined, now)).toEqual([{ field: 'check_in', code: 'maximum' }]);
});
