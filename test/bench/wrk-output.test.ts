/**
 * The gateway bench reads wrk's report (bench/support/wrk.ts): latency percentiles in
 * wrk's own units, request count, non-2xx answers and socket errors.
 */
import { parseWrk, wrkDurationMs } from '../../bench/support/wrk';

const REPORT = `Running 10s test @ http://127.0.0.1:41235/v1/blocks
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    18.61ms    9.02ms 126.80ms   79.80%
    Req/Sec     3.45k   312.40     3.98k    74.00%
  Latency Distribution
     50%   17.55ms
     75%   21.20ms
     90%   27.91ms
     99%   41.49ms
  34332 requests in 10.00s, 12.14MB read
  Socket errors: connect 0, read 2, write 1, timeout 3
  Non-2xx or 3xx responses: 5
Requests/sec:   3432.51
Transfer/sec:      1.21MB
`;

test('durations in us, ms, s and m', () => {
  expect(wrkDurationMs('635.91us')).toBeCloseTo(0.63591);
  expect(wrkDurationMs('1.28ms')).toBe(1.28);
  expect(wrkDurationMs('2.00s')).toBe(2000);
  expect(wrkDurationMs('1.00m')).toBe(60000);
  expect(() => wrkDurationMs('fast')).toThrow();
});

test('a report with failures', () => {
  expect(parseWrk(REPORT, 10)).toEqual({
    requests: { average: 3433.2, total: 34332 },
    latency: { p50: 17.55, p99: 41.49, average: 18.61, max: 126.8 },
    non2xx: 5,
    errors: 3,
    timeouts: 3,
  });
});

test('a clean report has no failures; an unreadable one throws', () => {
  const clean = REPORT.replace(/ {2}Socket errors.*\n {2}Non-2xx.*\n/, '');
  expect(parseWrk(clean, 10)).toMatchObject({ non2xx: 0, errors: 0, timeouts: 0 });
  expect(() => parseWrk('wrk: connection refused', 10)).toThrow(/unreadable|no 50%/);
});
