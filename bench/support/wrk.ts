/**
 * wrk (Debian package `wrk`) as the load generator: a C program, one thread driving all
 * connections through epoll. On a 2-core machine the load generator shares the CPUs with
 * the server and PostgreSQL, and autocannon (JavaScript, in the bench process) costs
 * about as much CPU per request as the server it measures; wrk costs a fraction of it, so
 * more of the machine goes to the system under test. The benches use it when it is on
 * PATH and fall back to autocannon otherwise (BENCH_LOADGEN=wrk|autocannon forces one).
 */
import { execFile, execFileSync } from 'node:child_process';

export interface LoadResult {
  requests: { average: number; total: number };
  /** Milliseconds, fractional. */
  latency: { p50: number; p99: number; average: number; max: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

/** `wrk`'s version line, or undefined when it is not installed. */
export function wrkVersion(): string | undefined {
  try {
    // wrk -v prints its version and exits with 1.
    execFileSync('wrk', ['-v'], { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const out = String((err as { stdout?: Buffer }).stdout ?? '');
    const m = /wrk (\S+)/.exec(out);
    if (m) return m[1];
  }
  return undefined;
}

/** "635.91us" | "1.28ms" | "2.00s" | "1.00m" → milliseconds. */
export function wrkDurationMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  if (!m) throw new Error(`wrk: unreadable duration ${JSON.stringify(text)}`);
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : n * 60000;
}

/** Parses `wrk --latency` output. */
export function parseWrk(out: string, seconds: number): LoadResult {
  const line = (re: RegExp) => re.exec(out);
  const pct = (p: string) => {
    const m = line(new RegExp(`^\\s*${p}%\\s+(\\S+)`, 'm'));
    if (!m) throw new Error(`wrk: no ${p}% latency in:\n${out}`);
    return wrkDurationMs(m[1]!);
  };
  const lat = line(/^\s*Latency\s+(\S+)\s+\S+\s+(\S+)/m);
  const total = line(/^\s*(\d+) requests in/m);
  if (!lat || !total) throw new Error(`wrk: unreadable output:\n${out}`);
  const non2xx = Number(line(/Non-2xx or 3xx responses:\s*(\d+)/)?.[1] ?? 0);
  const sock = line(/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/);
  const n = Number(total[1]);
  return {
    requests: { average: n / seconds, total: n },
    latency: { p50: pct('50'), p99: pct('99'), average: wrkDurationMs(lat[1]!), max: wrkDurationMs(lat[2]!) },
    non2xx,
    errors: sock ? Number(sock[1]) + Number(sock[2]) + Number(sock[3]) : 0,
    timeouts: sock ? Number(sock[4]) : 0,
  };
}

/**
 * GET `url` over `connections` keep-alive connections for `seconds`, one wrk thread.
 * `script`: a wrk Lua script file that builds each request instead (method, path, body;
 * the `headers` are added to every request it formats).
 */
export function runWrk(url: string, headers: Record<string, string>, connections: number, seconds: number, script?: string): Promise<LoadResult> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '--timeout', '10s'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  if (script !== undefined) args.push('-s', script);
  args.push(url);
  return new Promise((res, rej) => {
    execFile('wrk', args, { maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) return rej(new Error(`wrk failed: ${err.message}\n${stderr}`));
      try {
        res(parseWrk(stdout, seconds));
      } catch (e) {
        rej(e);
      }
    });
  });
}

/**
 * A wrk Lua script of `PUT /v1/blocks/{uid}` requests: a fresh uid `<prefix>-<n>` per
 * request, round-robin over `listings`, a check-in within 700 days of `fromEpochS` (UTC
 * midnight) and 1 to `maxNights` nights.
 */
export function putBlocksScript(listings: string[], prefix: string, fromEpochS: number, maxNights: number): string {
  return `-- PUT /v1/blocks/{uid}: a fresh uid per request over ${listings.length} listings.
local listings = { ${listings.map((l) => JSON.stringify(l)).join(', ')} }
local n = 0
local base = ${fromEpochS} -- ${new Date(fromEpochS * 1000).toISOString()}
wrk.method = "PUT"
wrk.headers["Content-Type"] = "application/json"
local function day(d) return os.date("!%Y-%m-%d", base + d * 86400) end
request = function()
  n = n + 1
  local start = math.random(0, 700)
  local body = string.format('{"listing_id":"%s","check_in":"%s","check_out":"%s","reason":"reserved"}',
    listings[(n % #listings) + 1], day(start), day(start + math.random(1, ${maxNights})))
  return wrk.format(nil, "/v1/blocks/${prefix}-" .. n, nil, body)
end
`;
}
