import { classifyResponse } from './delivery-outcomes';

const answer = (status: number, retryAfter?: string) => ({ status, body: Buffer.alloc(0), ...(retryAfter === undefined ? {} : { retryAfter }) });

describe('what a receiver’s answer means for the delivery', () => {
  test('any 2xx delivers', () => {
    for (const status of [200, 201, 204, 299]) expect(classifyResponse(answer(status))).toEqual({ delivered: true, status });
  });

  test('a 3xx is a redirect, never followed; other statuses are http_status', () => {
    expect(classifyResponse(answer(301))).toMatchObject({ delivered: false, status: 301, error: 'redirect' });
    expect(classifyResponse(answer(400))).toMatchObject({ delivered: false, status: 400, error: 'http_status' });
    expect(classifyResponse(answer(500))).toMatchObject({ delivered: false, status: 500, error: 'http_status' });
  });

  test('Retry-After is honoured on 429 and 503 only', () => {
    expect(classifyResponse(answer(429, '120'))).toMatchObject({ retryAfterS: 120 });
    expect(classifyResponse(answer(503, '7'))).toMatchObject({ retryAfterS: 7 });
    expect((classifyResponse(answer(500, '7')) as { retryAfterS?: number }).retryAfterS).toBeUndefined();
  });

  test('no answer is the poster’s error', () => {
    expect(classifyResponse({ error: 'timeout' })).toEqual({ delivered: false, status: null, error: 'timeout' });
    expect(classifyResponse({ error: 'address_refused' })).toEqual({ delivered: false, status: null, error: 'address_refused' });
  });
});
