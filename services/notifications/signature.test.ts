import { createHmac } from 'node:crypto';
import { sign, signatureHeaders } from './signature';

describe('delivery signatures', () => {
  const secret = 'whsec_test-secret';
  const body = '{"event_id":"e","event_type":"booking.confirmed","occurred_at":"2030-01-01T00:00:00.000Z","data":{}}';

  test('lowercase hex HMAC-SHA256 keyed with the UTF-8 bytes of the secret over v1:<timestamp>:<raw body>', () => {
    const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`v1:1700000000:${body}`).digest('hex');
    expect(sign(secret, 1700000000, body)).toBe(expected);
    expect(sign(secret, 1700000000, body)).toMatch(/^[0-9a-f]{64}$/);
  });

  test('headers: X-Signature and X-Signature-Timestamp always; X-Signature-Previous only with a previous secret', () => {
    const now = new Date(1_700_000_000_500);
    const h = signatureHeaders({ current: secret }, body, now);
    expect(h).toEqual({ 'X-Signature': sign(secret, 1700000000, body), 'X-Signature-Timestamp': '1700000000' });
    const r = signatureHeaders({ current: 'whsec_new', previous: secret }, body, now);
    expect(r['X-Signature']).toBe(sign('whsec_new', 1700000000, body));
    expect(r['X-Signature-Previous']).toBe(sign(secret, 1700000000, body));
  });
});
