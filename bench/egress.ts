/**
 * Egress benchmark (docs/performance.md, "Egress"):
 *
 *   npm run bench:egress
 *
 * The egress guard (services/kit/egress/egress.ts) alone, without the database or the bus:
 * this process runs a local HTTPS receiver (a throwaway CA, `localhost`) and starts a
 * client process that trusts the CA through NODE_EXTRA_CA_CERTS and reaches the
 * receiver through EGRESS_ALLOW_CIDRS=127.0.0.1/32. The client sends, with the same
 * options as services/notifications/webhook-poster.ts and
 * services/catalog/photo-processor.ts:
 *
 *   1. kept-alive deliveries: BENCH_DELIVERIES (20000) signed ~0.7 KB JSON POSTs over an
 *      `EgressPool`, round-robin over BENCH_ENDPOINTS (10) endpoints with 8 in flight per
 *      endpoint (the dispatcher's bound), only the status read;
 *   2. fresh connections: BENCH_FRESH (1000) POSTs each on a connection of its own (the
 *      registration challenge's path, body read), 8 in flight;
 *   3. photo fetches: BENCH_PHOTOS (300) GETs of a 256 KiB body, each on a connection of
 *      its own, 4 in flight (PHOTO_CONCURRENCY).
 *
 * Each part runs BENCH_RUNS (3) times after a warm-up; reported per run: requests per
 * second, latency p50/p99, the client process's CPU per request (user + system, robust
 * to what else the machine does), and the TLS connections the receiver accepted (and
 * how many resumed a session).
 */
import { spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg } from 'node:os';
import type { TLSSocket } from 'node:tls';
import { createInterface } from 'node:readline';
import { EgressPool, guardedRequest, type UrlRules } from '../services/kit/egress';
import { createCertificates } from '../test/support/tls';
import { benchName, watchPeakRss } from './support/results';

const num = (name: string, def: number) => Number(process.env[name] ?? String(def));
const DELIVERIES = num('BENCH_DELIVERIES', 20_000);
const ENDPOINTS = num('BENCH_ENDPOINTS', 10);
const FRESH = num('BENCH_FRESH', 1000);
const PHOTOS = num('BENCH_PHOTOS', 300);
const RUNS = num('BENCH_RUNS', 3);
const PER_ENDPOINT = 8;
const PHOTO_BYTES = 256 * 1024;
/** The receiver binds an ephemeral port, so the webhook rules' port list is left out. */
const RULES: UrlRules = { schemes: ['https'] };

interface PartResult {
  part: string;
  run: number;
  requests: number;
  per_s: number;
  p50_ms: number;
  p99_ms: number;
  cpu_ms_per_request: number;
  failed: number;
  tls_connections?: number;
  tls_resumed?: number;
  load?: number;
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

/** Runs `count` calls of `one(i)`, `inFlight` at a time; times each and the client's CPU. */
async function measure(part: string, run: number, count: number, inFlight: number, one: (i: number) => Promise<boolean>): Promise<PartResult> {
  const latencies: number[] = [];
  let next = 0;
  let failed = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) {
        const i = next++;
        const s = performance.now();
        if (!(await one(i))) failed++;
        latencies.push(performance.now() - s);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  latencies.sort((a, b) => a - b);
  return {
    part,
    run,
    requests: count,
    per_s: Math.round(count / seconds),
    p50_ms: +pct(latencies, 50).toFixed(2),
    p99_ms: +pct(latencies, 99).toFixed(2),
    cpu_ms_per_request: +((cpu.user + cpu.system) / 1000 / count).toFixed(3),
    failed,
  };
}

/** The client process: sends the three parts to the receiver at BENCH_EGRESS_BASE, one JSON line per result. */
async function client(base: string): Promise<void> {
  const allowCidrs = (process.env.EGRESS_ALLOW_CIDRS ?? '').split(',').filter(Boolean);
  const secret = Buffer.alloc(32, 7);
  const delivery = (i: number) => {
    const body = JSON.stringify({
      event_id: randomUUID(),
      event_type: 'booking.confirmed',
      occurred_at: new Date().toISOString(),
      workspace_id: `ws-${i % ENDPOINTS}`,
      environment: 'sandbox',
      data: {
        booking_id: randomUUID(),
        listing_id: randomUUID(),
        check_in: '2026-12-01',
        check_out: '2026-12-05',
        guest: { id: `g-${i}`, name: 'Ada Lovelace' },
        total: { amount: '1234.56', currency: 'EUR' },
      },
    });
    const ts = String(Math.floor(Date.now() / 1000));
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'PartnerSync-Webhooks/1',
      'x-signature': createHmac('sha256', secret).update(`v1:${ts}:${body}`).digest('hex'),
      'x-signature-timestamp': ts,
    };
    return { body, headers };
  };
  const post = (url: string, i: number, extra: { pool?: EgressPool; poolKey?: string; readBody?: boolean }) => {
    const { body, headers } = delivery(i);
    return guardedRequest(url, {
      rules: RULES,
      allowCidrs,
      method: 'POST',
      headers,
      body,
      maxBytes: 64 * 1024,
      ignoreBody: !extra.readBody,
      connectTimeoutMs: 5000,
      headersTimeoutMs: 10_000,
      bodyTimeoutMs: 10_000,
      totalTimeoutMs: 10_000,
      ...(extra.pool ? { pool: extra.pool, poolKey: extra.poolKey } : {}),
    }).then(
      (r) => r.status === 200,
      () => false,
    );
  };
  const out = (r: PartResult) => process.stdout.write(`${JSON.stringify(r)}\n`);
  const mark = async (label: string) => {
    process.stdout.write(`${JSON.stringify({ mark: label })}\n`);
    // The receiver counts connections from here on; wait for its acknowledgement.
    await acks.next();
  };
  const acks = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

  // Warm-up (JIT, first handshakes), not reported.
  const warm = new EgressPool({ allowCidrs, maxSocketsPerKey: PER_ENDPOINT });
  await measure('warm-up', 0, 2000, ENDPOINTS * PER_ENDPOINT, (i) => post(`${base}/hook/ws-${i % ENDPOINTS}`, i, { pool: warm, poolKey: `ws-${i % ENDPOINTS}` }));
  warm.close();

  for (let run = 1; run <= RUNS; run++) {
    await mark(`kept-alive ${run}`);
    const pool = new EgressPool({ allowCidrs, maxSocketsPerKey: PER_ENDPOINT });
    out(
      await measure('kept-alive deliveries', run, DELIVERIES, ENDPOINTS * PER_ENDPOINT, (i) =>
        post(`${base}/hook/ws-${i % ENDPOINTS}`, i, { pool, poolKey: `ws-${i % ENDPOINTS}` }),
      ),
    );
    pool.close();

    await mark(`fresh ${run}`);
    out(await measure('fresh-connection POSTs', run, FRESH, PER_ENDPOINT, (i) => post(`${base}/challenge`, i, { readBody: true })));

    await mark(`photos ${run}`);
    out(
      await measure('photo GETs (256 KiB)', run, PHOTOS, 4, (i) =>
        guardedRequest(`${base}/photo/${i}.jpg`, {
          rules: { schemes: ['http', 'https'] },
          allowCidrs,
          headers: { accept: 'image/jpeg, image/png, image/webp;q=0.9, */*;q=0.1' },
          maxBytes: 25 * 1024 * 1024,
          connectTimeoutMs: 5000,
          headersTimeoutMs: 10_000,
          bodyTimeoutMs: 10_000,
          totalTimeoutMs: 60_000,
        }).then(
          (r) => r.status === 200 && r.body.length === PHOTO_BYTES,
          () => false,
        ),
      ),
    );
  }
  await mark('end');
}

/** This process: the receiver, the client process, the report. */
async function main(): Promise<void> {
  benchName('egress');
  const certs = await createCertificates();
  const photo = Buffer.alloc(PHOTO_BYTES, 0x5a);
  let tlsConnections = 0;
  let tlsResumed = 0;
  const server = https.createServer({ key: certs.key, cert: certs.cert, keepAliveTimeout: 30_000 }, (req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.startsWith('/photo/')) {
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': String(photo.length) });
        res.end(photo);
      } else {
        const body = req.url === '/challenge' ? '{"challenge":"x"}' : '{"ok":true}';
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
        res.end(body);
      }
    });
  });
  server.on('secureConnection', (s: TLSSocket) => {
    tlsConnections++;
    if (s.isSessionReused()) tlsResumed++;
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `https://localhost:${(server.address() as AddressInfo).port}`;

  const child = spawn(process.execPath, ['--import', 'tsx', __filename], {
    // The client reports through its output; the result file is this process's.
    env: { ...process.env, BENCH_EGRESS_BASE: base, NODE_EXTRA_CA_CERTS: certs.caFile, EGRESS_ALLOW_CIDRS: '127.0.0.1/32', BENCH_RESULT_FILE: '' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  watchPeakRss('egress client', child.pid);
  const results: PartResult[] = [];
  for await (const line of createInterface({ input: child.stdout })) {
    const msg = JSON.parse(line) as PartResult | { mark: string };
    if ('mark' in msg) {
      tlsConnections = 0;
      tlsResumed = 0;
      child.stdin.write('ok\n');
      if (msg.mark === 'end') child.stdin.end();
      continue;
    }
    const r = { ...msg, tls_connections: tlsConnections, tls_resumed: tlsResumed, load: +loadavg()[0]!.toFixed(2) };
    results.push(r);
    console.log(JSON.stringify(r));
  }
  const code = await new Promise<number | null>((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', r)));
  server.closeAllConnections();
  server.close();
  certs.remove();
  if (code !== 0) throw new Error(`client process exited with ${code}`);

  console.log(`\nNode ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}; runs: ${RUNS}`);
  console.log('part | run | req/s | p50 ms | p99 ms | client CPU ms/req | TLS connections (resumed) | failed | load');
  for (const r of results) {
    console.log(`${r.part} | ${r.run} | ${r.per_s} | ${r.p50_ms} | ${r.p99_ms} | ${r.cpu_ms_per_request} | ${r.tls_connections} (${r.tls_resumed}) | ${r.failed} | ${r.load}`);
  }
  const parts = [...new Set(results.map((r) => r.part))];
  console.log('\nmedian of the runs:');
  for (const part of parts) {
    const of = results.filter((r) => r.part === part);
    const med = (f: (r: PartResult) => number) =>
      pct(
        of.map(f).sort((a, b) => a - b),
        50,
      );
    console.log(`${part}: ${med((r) => r.per_s)} req/s, p50 ${med((r) => r.p50_ms)} ms, p99 ${med((r) => r.p99_ms)} ms, ${med((r) => r.cpu_ms_per_request)} ms CPU/req`);
  }
  if (results.some((r) => r.failed > 0)) throw new Error('some requests failed');
}

const childBase = process.env.BENCH_EGRESS_BASE;
(childBase ? client(childBase) : main()).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
