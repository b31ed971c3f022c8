/**
 * Memory under a steady load (docs/performance.md "Memory under load"): the whole system
 * answering mixed partner traffic at a constant rate for a long time, its RSS sampled
 * throughout.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres NATS_URL=nats://127.0.0.1:4222 npm run bench:soak
 *   … BENCH_DURATION=90s BENCH_WARMUP=20s npm run bench:soak        (a quick run)
 *
 * On a scratch database of DATABASE_URL's server (created and dropped) it starts
 * `main.ts all` (tsc-compiled as the image runs it; BENCH_RUNTIME=tsx: through
 * tsx) on NATS_URL's JetStream (without NATS_URL: the in-process bus), with
 * BENCH_PARTNERS (10) sandbox workspaces, each with 10 listings and an access token. The
 * load is open-loop — a request every 1/BENCH_RATE s (200/s) whatever the answers, over
 * at most 64 kept-alive connections — and mixed as a channel manager's would be:
 *
 *   40 % GET /v1/blocks (page 1, the next page, or from a date)
 *   30 % PUT /v1/blocks/{uid}: a new block (70 %) or a recent one moved (30 %)
 *    5 % DELETE /v1/blocks/{uid} of a recent block
 *   15 % PUT /v1/properties/{id}: the same body again (the periodic full sync)
 *    5 % PUT /v1/properties/{id} with a changed name (an update and its listing event)
 *    5 % GET /v1/webhooks/deliveries (the sandbox delivery log)
 *
 * for BENCH_DURATION (10m; `90s`, `2m` …). The system's RSS (VmRSS) is read every 5 s.
 * Warm-up is the first BENCH_WARMUP (2m); the growth is that of the floor of RSS after it
 * (the lowest sample of each minute: what stays after the garbage collector's passes),
 * from the first third of the measured minutes to the last (target: < 5 %);
 * also reported: RSS and latency per stretch of the run, every answer's status, and the
 * peak (VmHWM).
 */
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { createBenchDatabase, fullSystemEnv } from './support/bench-system';
import { benchRuntime, buildForBench } from './support/compiled-build';
import { startFull, type Build, type Server } from './support/gateway-servers';
import { machineLine } from './support/machine';
import { benchDay, createPartner, operatorClients, propertyBody, type Partner } from './support/partners';
import { cpuMsOf } from './support/proc-cpu';
import { benchName, memoryOf, recordMetric } from './support/results';

const ROOT = resolve(__dirname, '..');

/** `600`, `600s`, `10m`, `1h` → seconds. */
function durationSeconds(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(s|m|h)?$/.exec(text.trim());
  if (!m) throw new Error(`unreadable duration ${JSON.stringify(text)} (e.g. 90s, 10m)`);
  return Number(m[1]) * (m[2] === 'h' ? 3600 : m[2] === 'm' ? 60 : 1);
}

const DURATION_S = durationSeconds(process.env.BENCH_DURATION ?? '10m');
const WARMUP_S = Math.min(durationSeconds(process.env.BENCH_WARMUP ?? '2m'), DURATION_S / 2);
const RATE = Number(process.env.BENCH_RATE ?? '200');
const PARTNERS = Number(process.env.BENCH_PARTNERS ?? '10');
const SAMPLE_MS = 5000;
const MAX_IN_FLIGHT = 256;
const TARGET_GROWTH_PCT = 5;
/** The floor of RSS is taken per this many seconds (a few major collections at this load). */
const FLOOR_WINDOW_S = Math.max(10, Math.min(60, (DURATION_S - WARMUP_S) / 6));

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const quantile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
const median = (xs: number[]) =>
  quantile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

interface Request {
  kind: string;
  method: 'GET' | 'PUT' | 'DELETE';
  path: string;
  token: string;
  body?: string;
}

/** The traffic mix: one request, chosen at random with the weights above. */
function mix(partners: Partner[]) {
  let n = 0;
  // Recent block uids per partner (for moves and deletes), bounded.
  const recent = partners.map(() => [] as { uid: string; listing: string }[]);
  const properties = 20;
  return (): Request => {
    const k = n++;
    const i = k % partners.length;
    const p = partners[i]!;
    const r = Math.random() * 100;
    if (r < 40) {
      const q = Math.random();
      const path = q < 0.6 ? '/v1/blocks' : q < 0.8 ? '/v1/blocks?page=2' : `/v1/blocks?from=${benchDay(Math.floor(Math.random() * 600))}`;
      return { kind: 'GET /v1/blocks', method: 'GET', path, token: p.token };
    }
    if (r < 70) {
      const own = recent[i]!;
      const move = own.length > 0 && Math.random() < 0.3;
      const b = move ? own[Math.floor(Math.random() * own.length)]! : { uid: `soak-${k}`, listing: p.listings[k % p.listings.length]! };
      if (!move) {
        own.push(b);
        if (own.length > 200) own.shift();
      }
      const start = Math.floor(Math.random() * 700);
      return {
        kind: move ? 'PUT /v1/blocks (move)' : 'PUT /v1/blocks (new)',
        method: 'PUT',
        path: `/v1/blocks/${b.uid}`,
        token: p.token,
        body: JSON.stringify({ listing_id: b.listing, check_in: benchDay(start), check_out: benchDay(start + 1 + Math.floor(Math.random() * 14)), reason: 'reserved' }),
      };
    }
    if (r < 75) {
      const own = recent[i]!;
      const b = own.length > 0 ? own.splice(Math.floor(Math.random() * own.length), 1)[0]! : { uid: `soak-missing-${k}` };
      return { kind: 'DELETE /v1/blocks', method: 'DELETE', path: `/v1/blocks/${b.uid}`, token: p.token };
    }
    if (r < 95) {
      const changed = r >= 90;
      const id = `prop-${k % properties}`;
      return {
        kind: changed ? 'PUT /v1/properties (changed)' : 'PUT /v1/properties (same)',
        method: 'PUT',
        path: `/v1/properties/${id}`,
        token: p.token,
        body: JSON.stringify(propertyBody(changed ? `Harbour loft ${k}` : `Harbour loft ${id}`)),
      };
    }
    return { kind: 'GET /v1/webhooks/deliveries', method: 'GET', path: '/v1/webhooks/deliveries', token: p.token };
  };
}

interface Sample {
  /** Seconds since the load started. */
  t: number;
  rssMiB: number;
}

async function main(): Promise<void> {
  benchName('soak');
  const runtime = benchRuntime();
  const build: Build = { runtime, dist: runtime === 'compiled' ? buildForBench(ROOT) : undefined };
  const db = await createBenchDatabase('psync_bench_soak');
  let system: Server | undefined;
  const loadStart = loadavg();
  try {
    const full = await startFull(build, fullSystemEnv(db.url, 'benchsoak'));
    system = full;
    const op = operatorClients(full.internal);
    const partners: Partner[] = [];
    try {
      for (let i = 0; i < PARTNERS; i++) partners.push(await createPartner(op, full.url, `bench-soak-${i}`, 10));
    } finally {
      op.close();
    }
    const next = mix(partners);
    const pool = new Pool(full.url, { connections: 64, pipelining: 1, keepAliveTimeout: 60_000 });
    const pid = full.child.pid!;

    const statuses = new Map<string, Map<number | string, number>>();
    const latencies: { t: number; ms: number }[] = [];
    const samples: Sample[] = [];
    let inFlight = 0;
    let dropped = 0;
    let sent = 0;
    const t0 = performance.now();
    const cpu0 = cpuMsOf(pid);
    const count = (kind: string, status: number | string) => {
      const m = statuses.get(kind) ?? new Map<number | string, number>();
      m.set(status, (m.get(status) ?? 0) + 1);
      statuses.set(kind, m);
    };
    const send = (req: Request) => {
      inFlight++;
      sent++;
      const began = performance.now();
      pool
        .request({
          method: req.method,
          path: req.path,
          headers: { authorization: `Bearer ${req.token}`, ...(req.body ? { 'content-type': 'application/json' } : {}) },
          body: req.body,
        })
        .then(async (res) => {
          await res.body.dump();
          const now = performance.now();
          latencies.push({ t: (now - t0) / 1000, ms: now - began });
          count(req.kind, res.statusCode);
        })
        .catch((err: unknown) => count(req.kind, err instanceof Error ? err.name : 'error'))
        .finally(() => inFlight--);
    };
    const sampler = setInterval(() => {
      const m = memoryOf(pid);
      if (m) samples.push({ t: (performance.now() - t0) / 1000, rssMiB: m.rssKiB / 1024 });
    }, SAMPLE_MS);
    process.stdout.write(`soak: ${RATE} requests/s for ${DURATION_S} s (warm-up ${WARMUP_S} s), ${PARTNERS} partners; system pid ${pid}\n`);
    const total = Math.round(RATE * DURATION_S);
    let lastReport = 0;
    for (let i = 0; i < total; i++) {
      const due = t0 + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      if (inFlight >= MAX_IN_FLIGHT) {
        dropped++;
        continue;
      }
      send(next());
      const elapsed = (performance.now() - t0) / 1000;
      if (elapsed - lastReport >= 60) {
        lastReport = elapsed;
        const rss = samples.at(-1)?.rssMiB ?? NaN;
        process.stdout.write(`  ${elapsed.toFixed(0)} s: ${sent} sent, ${dropped} not sent (${MAX_IN_FLIGHT} in flight), RSS ${rss.toFixed(0)} MiB\n`);
      }
    }
    while (inFlight > 0) await sleep(50);
    clearInterval(sampler);
    const elapsed = (performance.now() - t0) / 1000;
    const cpu = cpuMsOf(pid) - cpu0;
    const hwm = memoryOf(pid)?.hwmKiB;
    await pool.close();

    // Growth after warm-up, of the floor: V8's heap grows and shrinks by tens of MiB
    // between major collections (a saw-tooth of 150–260 MiB at this load), so single
    // samples, medians or a line through them move with where the teeth fall. What a
    // leak raises is what stays after each collection: the lowest sample of each minute.
    // Growth = the median floor of the last third of the measured minutes over that of
    // the first third.
    const measured = samples.filter((s) => s.t >= WARMUP_S);
    const floors: number[] = [];
    for (let a = WARMUP_S; a < DURATION_S; a += FLOOR_WINDOW_S) {
      const inWindow = measured.filter((s) => s.t >= a && s.t < a + FLOOR_WINDOW_S).map((s) => s.rssMiB);
      if (inWindow.length > 0) floors.push(Math.min(...inWindow));
    }
    const third = Math.max(1, Math.floor(floors.length / 3));
    const first = median(floors.slice(0, third));
    const last = median(floors.slice(-third));
    const growthPct = ((last - first) / first) * 100;
    const maxRss = Math.max(...measured.map((s) => s.rssMiB));
    const loadEnd = loadavg();

    const stretches = 10;
    const lines: string[] = [];
    lines.push(
      `Command: \`${process.env.DATABASE_URL ? 'DATABASE_URL=… ' : ''}${process.env.NATS_URL ? 'NATS_URL=… ' : ''}npm run bench:soak\` (BENCH_DURATION=${DURATION_S}s, BENCH_WARMUP=${WARMUP_S}s, BENCH_RATE=${RATE}, ${runtime}); bus: ${process.env.NATS_URL ? 'NATS JetStream' : 'in-process'}.`,
      `${machineLine()}; load average at the start ${loadStart.map((x) => x.toFixed(2)).join(' ')}, at the end ${loadEnd.map((x) => x.toFixed(2)).join(' ')}.`,
      '',
      `Sent ${sent} requests in ${elapsed.toFixed(0)} s (${(sent / elapsed).toFixed(0)}/s; ${dropped} not sent because ${MAX_IN_FLIGHT} were in flight); system CPU ${(cpu / Math.max(1, sent)).toFixed(2)} ms per request.`,
      '',
      '| stretch | requests answered | p50 | p99 | RSS (median of 5 s samples) |',
      '|---|---:|---:|---:|---:|',
    );
    for (let s = 0; s < stretches; s++) {
      const a = (s * DURATION_S) / stretches;
      const b = ((s + 1) * DURATION_S) / stretches;
      const lat = latencies
        .filter((l) => l.t >= a && l.t < b)
        .map((l) => l.ms)
        .sort((x, y) => x - y);
      const rss = median(samples.filter((x) => x.t >= a && x.t < b).map((x) => x.rssMiB));
      lines.push(
        `| ${a.toFixed(0)}–${b.toFixed(0)} s${b <= WARMUP_S ? ' (warm-up)' : ''} | ${lat.length} | ${quantile(lat, 0.5).toFixed(1)} ms | ${quantile(lat, 0.99).toFixed(1)} ms | ${rss.toFixed(0)} MiB |`,
      );
    }
    lines.push('', '| request | answers |', '|---|---|');
    for (const [kind, m] of [...statuses].sort()) lines.push(`| ${kind} | ${[...m].map(([status, n]) => `${status}: ${n}`).join(', ')} |`);
    lines.push(
      '',
      `RSS floor after warm-up (the lowest sample of each ${FLOOR_WINDOW_S} s: ${floors.map((f) => f.toFixed(0)).join(', ')} MiB): ${first.toFixed(1)} MiB (first third) → ${last.toFixed(1)} MiB (last third), **${growthPct >= 0 ? '+' : ''}${growthPct.toFixed(1)} %** (target < ${TARGET_GROWTH_PCT} %); highest sample ${maxRss.toFixed(0)} MiB; peak (VmHWM) ${hwm === undefined ? '—' : `${(hwm / 1024).toFixed(0)} MiB`}.`,
    );
    process.stdout.write(`\n${lines.join('\n')}\n`);
    const unexpected = [...statuses.values()].flatMap((m) => [...m]).filter(([status]) => typeof status !== 'number' || status >= 500);
    recordMetric({
      id: 'soak.rss_growth_pct',
      label: `RSS growth after warm-up at ${RATE} requests/s`,
      value: growthPct,
      unit: '%',
      note: `floor ${first.toFixed(0)} → ${last.toFixed(0)} MiB over ${(DURATION_S - WARMUP_S).toFixed(0)} s`,
    });
    recordMetric({ id: 'soak.rss_max_mib', label: 'highest RSS sample after warm-up', value: maxRss, unit: 'MiB' });
    recordMetric({ id: 'soak.cpu_per_request', label: `system CPU per request at ${RATE} requests/s (mixed)`, value: cpu / Math.max(1, sent), unit: 'ms' });
    recordMetric({
      id: 'soak.p99',
      label: `p99 at ${RATE} requests/s (mixed)`,
      value: quantile(
        latencies.map((l) => l.ms).sort((x, y) => x - y),
        0.99,
      ),
      unit: 'ms',
    });
    if (unexpected.length > 0) throw new Error(`answers that are not a partner's expected ones: ${JSON.stringify(unexpected)}`);
  } finally {
    await system?.stop();
    await db.drop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:soak: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
