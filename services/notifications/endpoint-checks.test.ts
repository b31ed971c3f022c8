/**
 * What each receiver check sends (endpoint-checks.ts checkRequest), judged by the
 * contract's verification rule (signature.ts): only the shapes meant to be accepted
 * verify, each for the reason its name says.
 */
import { checkRequest, checksFor } from './endpoint-checks';
import { testConfirmationBody } from './test-events';
import { sign } from './signature';

const keys = { current: 'whsec_current', previous: 'whsec_previous' };
const now = new Date('2031-01-01T10:00:00Z');
const fresh = () => testConfirmationBody('8a5e2c61-1f3b-4d7e-9c0a-6b2d4e8f1a37', now);
const valid = fresh();

/** The contract's receiver: either header under any known secret, timestamp within five minutes. */
function verifies(req: { body: string; headers: Record<string, string> }, secrets: string[]): boolean {
  const ts = Number(req.headers['X-Signature-Timestamp']);
  if (Math.abs(now.getTime() / 1000 - ts) > 300) return false;
  const expected = secrets.map((s) => sign(s, ts, req.body));
  return [req.headers['X-Signature'], req.headers['X-Signature-Previous']].some((h) => h !== undefined && expected.includes(h));
}

test('only the valid, duplicate and previous-secret shapes verify', () => {
  const shapes = ['valid', 'duplicate', 'wrong_signature', 'stale', 'altered', 'previous_only'] as const;
  expect(Object.fromEntries(shapes.map((s) => [s, verifies(checkRequest(s, keys, valid, fresh, now), [keys.current, keys.previous])]))).toEqual({
    valid: true,
    duplicate: true,
    wrong_signature: false,
    stale: false,
    altered: false,
    previous_only: true,
  });
  // Valid only under the previous secret: its X-Signature verifies under no secret.
  const previousOnly = checkRequest('previous_only', keys, valid, fresh, now);
  expect(verifies({ body: previousOnly.body, headers: { ...previousOnly.headers, 'X-Signature-Previous': '' } }, [keys.current, keys.previous])).toBe(false);
});

test('the duplicate is the valid delivery byte for byte; every body is a marked test', () => {
  const first = checkRequest('valid', keys, valid, fresh, now).body;
  expect(checkRequest('duplicate', keys, valid, fresh, now).body).toBe(first);
  const other = JSON.parse(checkRequest('wrong_signature', keys, valid, fresh, now).body);
  expect(other.event_id).not.toBe(JSON.parse(first).event_id);
  for (const body of [JSON.parse(first), other]) {
    expect(body).toMatchObject({ event_type: 'booking.confirmed', test: true, data: { booking_reference: expect.stringMatching(/^TEST-BK/) } });
  }
});

test('the rotation check runs only while an overlap is open', () => {
  expect(checksFor(keys).map((c) => c.name)).toContain('previous_secret_accepted');
  expect(checksFor({ current: keys.current }).map((c) => c.name)).not.toContain('previous_secret_accepted');
});
