/**
 * Catalog benchmark (docs/performance.md "Catalog"):
 *
 *   npm run bench:catalog                                   # embedded default (PGlite, in-process bus)
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test NATS_URL=nats://127.0.0.1:4222 npm run bench:catalog
 *
 * Starts the whole system (`main.ts all`, via test/support/system.ts: a
 * scratch database on DATABASE_URL's server, dropped afterwards) with a local HTTPS
 * photo host whose CA is given as NODE_EXTRA_CA_CERTS, then measures
 *   1. photos processed per second: BENCH_PROPERTIES properties x BENCH_PHOTOS photos,
 *      every URL new, fetched over HTTPS through the egress guard, decoded and stored
 *      as WebP (PHOTO_CONCURRENCY = BENCH_PHOTO_CONCURRENCY), from the first push to
 *      the last photo settled;
 *   2. UpsertProperty per second of a complete property whose photos are unchanged,
 *      over the internal gRPC API with BENCH_CONCURRENCY calls in flight for
 *      BENCH_SECONDS: (a) identical re-pushes, (b) pushes that change the name (a
 *      write, a republish and a listing.updated event each);
 *   3. the same push through the public gateway (PUT /v1/properties/{id}, autocannon,
 *      BENCH_CONNECTIONS connections), when the gateway route answers.
 * Prints a Markdown summary for docs/performance.md ("Catalog").
 */
import { cpus, totalmem } from 'node:os';
import { create, toJson } from '@bufbuild/protobuf';
import { PropertySchema, UpsertPropertyRequestSchema } from '../gen/psync/catalog/v1/catalog_pb';
import { clientsFor, completeProperty, missingNames, newWorkspace, type Clients } from '../test/catalog/support/catalog';
import { startPhotoServer } from '../test/catalog/support/photo-server';
import { createCertificates } from '../test/support/tls';
import { startSystem, stopAllSystems } from '../test/support/system';
import sharp from 'sharp';
import { benchName, watchPeakRss } from './support/results';

/** The part of autocannon's API used here (the package ships no type declarations). */
declare namespace autocannon {
  export interface Options {
    url: string;
    connections?: number;
    duration?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
  }
  export interface Result {
    requests: { average: number; total: number };
    latency: { p50: number; p99: number };
    non2xx: number;
    errors: number;
  }
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon = require('autocannon') as (opts: autocannon.Options, cb: (err: Error | null, res: autocannon.Result) => void) => unknown;

const num = (name: string, def: number) => Number(process.env[name] ?? String(def));
const PROPERTIES = num('BENCH_PROPERTIES', 40);
const PHOTOS = num('BENCH_PHOTOS', 6);
const PHOTO_CONCURRENCY = num('BENCH_PHOTO_CONCURRENCY', 8);
const CONCURRENCY = num('BENCH_CONCURRENCY', 16);
const CONNECTIONS = num('BENCH_CONNECTIONS', 16);
const SECONDS = num('BENCH_SECONDS', 15);
const DISTINCT_IMAGES = 24;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** Runs `call` with `concurrency` in flight for `seconds`; calls/s and latency percentiles. */
async function load(seconds: number, concurrency: number, call: (i: number) => Promise<unknown>): Promise<string> {
  const latencies: number[] = [];
  const end = Date.now() + seconds * 1000;
  let n = 0;
  let errors = 0;
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        const i = n++;
        const s = performance.now();
        try {
          await call(i);
        } catch {
          errors++;
        }
        latencies.push(performance.now() - s);
      }
    }),
  );
  const elapsed = (Date.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  return `${Math.round(latencies.length / elapsed)} upserts/s, p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, ${latencies.length} calls, ${errors} errors`;
}

function cannon(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((res, rej) => {
    autocannon(opts, (err, result) => (err ? rej(err) : res(result)));
  });
}

/** A synthetic photograph: sky gradient, sun, hills, houses, grain. */
async function photoLike(i: number): Promise<Buffer> {
  const houses = Array.from(
    { length: 40 },
    (_, k) =>
      `<rect x="${(k * 97 + i * 13) % 1550}" y="${600 + ((k * 53) % 300)}" width="${20 + (k % 30)}" height="${40 + ((k * 7) % 60)}" fill="rgb(${(k * 41) % 255},${(k * 67) % 255},${(k * 23) % 255})"/>`,
  ).join('');
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="1600" height="1067">
    <defs><linearGradient id="sky" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="rgb(${90 + ((i * 7) % 60)},150,220)"/><stop offset="1" stop-color="rgb(240,${200 + (i % 40)},180)"/></linearGradient>
    <radialGradient id="sun"><stop offset="0" stop-color="#fff8d0"/><stop offset="1" stop-color="#ffb040" stop-opacity="0"/></radialGradient></defs>
    <rect width="1600" height="1067" fill="url(#sky)"/><circle cx="${300 + ((i * 37) % 900)}" cy="260" r="220" fill="url(#sun)"/>
    <path d="M0 700 Q 400 ${520 + (i % 80)} 800 680 T 1600 650 V1067 H0 Z" fill="#3a6b35"/>
    <path d="M0 820 Q 500 760 900 860 T 1600 800 V1067 H0 Z" fill="#2b4f2a"/>${houses}</svg>`;
  const base = await sharp(Buffer.from(svg)).png().toBuffer();
  const grain = await sharp({ create: { width: 1600, height: 1067, channels: 3, background: { r: 0, g: 0, b: 0 }, noise: { type: 'gaussian', mean: 128, sigma: 12 } } })
    .png()
    .toBuffer();
  return sharp(base)
    .composite([{ input: grain, blend: 'overlay' }])
    .jpeg({ quality: 85 })
    .toBuffer();
}

async function main(): Promise<void> {
  benchName('catalog');
  const out: string[] = [];
  const pki = await createCertificates();
  const host = await startPhotoServer(pki);
  // Photo-like images: 1600 x 1067 JPEG, a landscape drawn in SVG with film-grain noise
  // (a few hundred KB each; pure noise would make every encoder look slow).
  const images: Buffer[] = [];
  for (let i = 0; i < DISTINCT_IMAGES; i++) images.push(await photoLike(i));
  const avgKb = Math.round(images.reduce((a, b) => a + b.length, 0) / images.length / 1024);
  const urlsOf = (p: number) =>
    Array.from({ length: PHOTOS }, (_, k) => {
      const path = `/bench/${p}/${k}.jpg`;
      host.route(path, { kind: 'bytes', body: images[(p * PHOTOS + k) % DISTINCT_IMAGES]!, contentType: 'image/jpeg' });
      return `${host.base}${path}`;
    });

  const system = await startSystem({
    env: {
      EGRESS_ALLOW_CIDRS: '127.0.0.0/8',
      NODE_EXTRA_CA_CERTS: pki.caFile,
      PHOTO_CONCURRENCY: String(PHOTO_CONCURRENCY),
      RATE_LIMIT_PER_HOUR: '1000000',
    },
    timeoutMs: 120000,
  });
  watchPeakRss('system', system.child.pid);
  let c: Clients | undefined;
  try {
    c = clientsFor(system.internalUrl);
    const catalog = c.catalog;
    const ws = await newWorkspace(c.identity);
    const properties = Array.from({ length: PROPERTIES }, (_, p) => ({ id: `bench-${p}`, property: completeProperty(urlsOf(p)) }));

    // 1. Photos processed per second.
    const t0 = Date.now();
    await Promise.all(properties.map((p) => catalog.upsertProperty({ workspaceId: ws, providerId: p.id, property: p.property })));
    const pushedMs = Date.now() - t0;
    const pending = new Set(properties.map((p) => p.id));
    while (pending.size > 0) {
      for (const id of [...pending]) {
        const r = await catalog.getProperty({ workspaceId: ws, providerId: id });
        if (!missingNames(r.missing).includes('photos_processing')) {
          if (!r.publishable) throw new Error(`${id} not publishable: ${missingNames(r.missing).join(',')} ${JSON.stringify(r.photosRejected)}`);
          pending.delete(id);
        }
      }
      if (pending.size > 0) await new Promise((r) => setTimeout(r, 100));
    }
    const photoSeconds = (Date.now() - t0) / 1000;
    const total = PROPERTIES * PHOTOS;
    out.push(
      `- photos processed: ${total} new HTTPS photos (1600x1067 photo-like JPEG, about ${avgKb} KB each) on ${PROPERTIES} properties, ` +
        `PHOTO_CONCURRENCY=${PHOTO_CONCURRENCY}: ${photoSeconds.toFixed(1)} s from the first push to the last photo settled = ` +
        `**${(total / photoSeconds).toFixed(1)} photos/s** (the ${PROPERTIES} pushes themselves took ${pushedMs} ms; fetches seen by the host: ${host.totalHits()})`,
    );

    // 2. Upserts of complete properties with unchanged photos (internal gRPC).
    const hitsBefore = host.totalHits();
    await load(3, CONCURRENCY, (i) => catalog.upsertProperty({ workspaceId: ws, providerId: properties[i % PROPERTIES]!.id, property: properties[i % PROPERTIES]!.property }));
    const same = await load(SECONDS, CONCURRENCY, (i) => {
      const p = properties[i % PROPERTIES]!;
      return catalog.upsertProperty({ workspaceId: ws, providerId: p.id, property: p.property });
    });
    out.push(`- UpsertProperty (gRPC), identical complete property, photos unchanged, ${CONCURRENCY} in flight, ${SECONDS} s: **${same}**`);
    const renamed = await load(SECONDS, CONCURRENCY, (i) => {
      const p = properties[i % PROPERTIES]!;
      const property = create(PropertySchema, { ...p.property, name: `Harbour loft ${i}` });
      return catalog.upsertProperty({ workspaceId: ws, providerId: p.id, property });
    });
    out.push(
      `- UpsertProperty (gRPC), name changed each time (write + republish + listing.updated event), photos unchanged, ${CONCURRENCY} in flight, ${SECONDS} s: **${renamed}**`,
    );
    if (host.totalHits() !== hitsBefore) throw new Error(`unchanged photos were fetched again: ${host.totalHits() - hitsBefore} fetches`);
    out.push(`- photo fetches during the upsert runs: 0 (unchanged URLs are never fetched again)`);

    // 3. Through the public gateway, when the route is there.
    try {
      const key = await c.identity.issueKey({ workspaceId: ws });
      const tokenRes = await fetch(`${system.gatewayUrl}/v1/token`, { method: 'POST', headers: { authorization: `Bearer ${key.apiKey}` } });
      if (tokenRes.status !== 200) throw new Error(`POST /v1/token answered ${tokenRes.status}`);
      const token = ((await tokenRes.json()) as { access_token: string }).access_token;
      const p = properties[0]!;
      const json = toJson(UpsertPropertyRequestSchema, create(UpsertPropertyRequestSchema, { property: p.property }), { useProtoFieldName: true, alwaysEmitImplicit: true }) as {
        property: Record<string, unknown>;
      };
      const body = JSON.stringify({ ...json.property, status: 'listed' });
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const probe = await fetch(`${system.gatewayUrl}/v1/properties/${p.id}`, { method: 'PUT', headers, body });
      if (probe.status !== 200) throw new Error(`PUT /v1/properties answered ${probe.status}: ${await probe.text()}`);
      await cannon({ url: `${system.gatewayUrl}/v1/properties/${p.id}`, method: 'PUT', headers, body, connections: CONNECTIONS, duration: 3 });
      const r = await cannon({ url: `${system.gatewayUrl}/v1/properties/${p.id}`, method: 'PUT', headers, body, connections: CONNECTIONS, duration: SECONDS });
      out.push(
        `- PUT /v1/properties/{id} through the gateway (token check, rate-limit count, JSON Schema, gRPC to the catalog), identical complete property, ` +
          `${CONNECTIONS} connections, ${SECONDS} s: **${Math.round(r.requests.average)} req/s**, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, non-2xx ${r.non2xx}, errors ${r.errors}`,
      );
    } catch (err) {
      out.push(`- gateway run skipped: ${(err as Error).message}`);
    }
  } finally {
    c?.close();
    await stopAllSystems();
    await host.close();
  }

  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const db = process.env.DATABASE_URL ? 'PostgreSQL server (scratch database)' : 'embedded PGlite';
  const bus = process.env.NATS_URL ? 'NATS JetStream' : 'in-process bus';
  process.stdout.write(
    `\nMachine: ${cpus().length} x ${cpu}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}; ${db}, ${bus}; everything on one host.\n\n${out.join('\n')}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`bench:catalog failed: ${(err as Error).stack ?? String(err)}\n`);
  void stopAllSystems().finally(() => process.exit(1));
});
