/**
 * Photo memory benchmark (docs/performance.md "Photo memory"):
 *
 *   npm run bench:photos                                    # embedded default (PGlite, in-process bus)
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test NATS_URL=nats://127.0.0.1:4222 npm run bench:photos
 *
 * Starts the whole system (`main.ts all`, test/support/system.ts) with a
 * local HTTPS photo host (throwaway CA as NODE_EXTRA_CA_CERTS, EGRESS_ALLOW_CIDRS =
 * 127.0.0.0/8), processes one photo to warm up, measures the idle RSS of the system's
 * process, then pushes BENCH_PROPERTIES properties at once, together holding
 *   - BENCH_BOMBS decompression bombs, alternately a 10000 x 10000 progressive JPEG
 *     (~0.9 MB on the wire, ~330 MB to decode) and a 20000 x 20000 one-colour PNG
 *     (~1.2 MB, 1.2 GB decoded);
 *   - BENCH_HEAVY heavy photos that are within the bounds and must be decoded: a
 *     7000 x 7000 progressive JPEG, a 7000 x 7000 interlaced PNG (both decoded whole,
 *     ~170 MB each) and a 10000 x 10000 baseline JPEG (100 MP, streamed), in turn;
 *   - BENCH_NORMAL ordinary photos (1600 x 1067 JPEG with grain, ~0.4 MB), each
 *     property's cover;
 * and samples the process's VmRSS (/proc/<pid>/status) every 20 ms until every photo
 * is settled; the kernel's own peak (VmHWM, reset after the warm-up) is read too.
 * Reports idle RSS, peak RSS, peak - idle, the time, and checks that the ordinary and
 * heavy photos are ready, the bombs rejected `too_large`, and every URL fetched once.
 * Generated images are cached under $TMPDIR/psync-photo-bombs.
 *
 * Knobs: BENCH_PROPERTIES (30), BENCH_BOMBS (30), BENCH_HEAVY (6), BENCH_NORMAL (30),
 * BENCH_PHOTO_CONCURRENCY (unset: the default PHOTO_CONCURRENCY, 4).
 * Target: peak < idle + 400 MB with the ordinary photos finishing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import sharp from 'sharp';
import { PhotoState } from '../gen/psync/catalog/v1/catalog_pb';
import { clientsFor, completeProperty, missingNames, newWorkspace, rejections, type Clients } from '../test/catalog/support/catalog';
import { cachedImage, flatImage } from '../test/catalog/support/photo-bombs';
import { startPhotoServer } from '../test/catalog/support/photo-server';
import { startSystem, stopAllSystems } from '../test/support/system';
import { createCertificates } from '../test/support/tls';
import { benchName, watchPeakRss } from './support/results';

const num = (name: string, def: number) => Number(process.env[name] ?? String(def));
const PROPERTIES = num('BENCH_PROPERTIES', 30);
const BOMBS = num('BENCH_BOMBS', 30);
const HEAVY = num('BENCH_HEAVY', 6);
const NORMAL = num('BENCH_NORMAL', 30);
const PHOTO_CONCURRENCY = process.env.BENCH_PHOTO_CONCURRENCY;
const TARGET_MB = 400;
const MB = 1e6;

/** VmRSS and VmHWM of a process, in bytes. */
function memoryOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** An ordinary photo: a 1600 x 1067 gradient with film grain, as a camera JPEG would be sized. */
async function ordinaryPhoto(i: number): Promise<Buffer> {
  const grain = await sharp({
    create: { width: 1600, height: 1067, channels: 3, background: { r: (i * 41) % 256, g: 128, b: (i * 89) % 256 }, noise: { type: 'gaussian', mean: 128, sigma: 18 } },
  })
    .png()
    .toBuffer();
  return sharp(grain)
    .modulate({ hue: (i * 29) % 360 })
    .jpeg({ quality: 85 })
    .toBuffer();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (bytes: number) => `${Math.round(bytes / MB)} MB`;

async function main(): Promise<void> {
  benchName('photos');
  const t0 = Date.now();
  const bombJpeg = await cachedImage('bomb-10000-progressive.jpg', () => flatImage('progressive-jpeg', 10000, 10000));
  const bombPng = await cachedImage('bomb-20000.png', () => flatImage('png', 20000, 20000));
  const heavy = [
    { name: '7000 x 7000 progressive JPEG', type: 'image/jpeg', body: await cachedImage('heavy-7000-progressive.jpg', () => flatImage('progressive-jpeg', 7000, 7000, 2)) },
    { name: '7000 x 7000 interlaced PNG', type: 'image/png', body: await cachedImage('heavy-7000-interlaced.png', () => flatImage('interlaced-png', 7000, 7000, 3)) },
    { name: '10000 x 10000 baseline JPEG', type: 'image/jpeg', body: await cachedImage('heavy-10000-baseline.jpg', () => flatImage('baseline-jpeg', 10000, 10000, 4)) },
  ];
  const ordinary: Buffer[] = [];
  for (let i = 0; i < Math.min(NORMAL + 1, 12); i++) ordinary.push(await cachedImage(`ordinary-${i}.jpg`, () => ordinaryPhoto(i)));
  process.stderr.write(`images ready in ${Date.now() - t0} ms\n`);

  const pki = await createCertificates();
  const host = await startPhotoServer(pki);
  const route = (path: string, body: Buffer, type: string) => {
    host.route(path, { kind: 'bytes', body, contentType: type });
    return `${host.base}${path}`;
  };
  const bombUrls = Array.from({ length: BOMBS }, (_, i) => (i % 2 === 0 ? route(`/bomb/${i}.jpg`, bombJpeg, 'image/jpeg') : route(`/bomb/${i}.png`, bombPng, 'image/png')));
  const heavyUrls = Array.from({ length: HEAVY }, (_, i) => route(`/heavy/${i}`, heavy[i % heavy.length]!.body, heavy[i % heavy.length]!.type));
  const normalUrls = Array.from({ length: NORMAL }, (_, i) => route(`/normal/${i}.jpg`, ordinary[i % ordinary.length]!, 'image/jpeg'));
  const warmUrl = route('/warm.jpg', ordinary[ordinary.length - 1]!, 'image/jpeg');

  // Properties: the ordinary photos first (covers), then bombs and heavy photos spread over them.
  const photosOf: string[][] = Array.from({ length: PROPERTIES }, () => []);
  normalUrls.forEach((u, i) => photosOf[i % PROPERTIES]!.push(u));
  [...bombUrls, ...heavyUrls].forEach((u, i) => photosOf[i % PROPERTIES]!.push(u));
  if (photosOf.some((p) => p.length > 30)) throw new Error('more than 30 photos on a property: raise BENCH_PROPERTIES');

  const system = await startSystem({
    env: {
      EGRESS_ALLOW_CIDRS: '127.0.0.0/8',
      NODE_EXTRA_CA_CERTS: pki.caFile,
      RATE_LIMIT_PER_HOUR: '1000000',
      ...(PHOTO_CONCURRENCY ? { PHOTO_CONCURRENCY } : {}),
    },
    timeoutMs: 120000,
  });
  watchPeakRss('system', system.child.pid);
  const pid = system.child.pid!;
  let c: Clients | undefined;
  const out: string[] = [];
  let failures = 0;
  try {
    c = clientsFor(system.internalUrl);
    const catalog = c.catalog;
    const ws = await newWorkspace(c.identity);
    const settled = async (id: string) => {
      for (;;) {
        const r = await catalog.getProperty({ workspaceId: ws, providerId: id });
        if (!missingNames(r.missing).includes('photos_processing')) return r;
        await sleep(100);
      }
    };

    // Warm-up: sharp and libvips loaded, one photo through the whole path.
    await catalog.upsertProperty({ workspaceId: ws, providerId: 'warm', property: completeProperty([warmUrl]) });
    await settled('warm');
    await sleep(2000);
    const idleSamples: number[] = [];
    for (let i = 0; i < 20; i++) {
      idleSamples.push(memoryOf(pid).rss);
      await sleep(50);
    }
    idleSamples.sort((a, b) => a - b);
    const idle = idleSamples[idleSamples.length >> 1]!;
    let hwmReset = true;
    try {
      writeFileSync(`/proc/${pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
    } catch {
      hwmReset = false;
    }

    let peak = idle;
    let samples = 0;
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, memoryOf(pid).rss);
        samples++;
      } catch {
        // the process is gone: reported below
      }
    }, 20);

    const start = Date.now();
    await Promise.all(photosOf.map((urls, p) => catalog.upsertProperty({ workspaceId: ws, providerId: `prop-${p}`, property: completeProperty(urls) })));
    const results = await Promise.all(photosOf.map((_, p) => settled(`prop-${p}`)));
    const seconds = (Date.now() - start) / 1000;
    clearInterval(sampler);
    const end = memoryOf(pid);
    if (hwmReset) peak = Math.max(peak, end.hwm);

    const photos = results.flatMap((r) => r.photos);
    const rejected = new Map(results.flatMap(rejections).map((r) => [r.url, r.reason]));
    const ready = (urls: string[]) => urls.filter((u) => photos.find((p) => p.url === u)?.state === PhotoState.PROCESSED).length;
    const bombsTooLarge = bombUrls.filter((u) => rejected.get(u) === 'too_large').length;
    const fetchedOnce = [...bombUrls, ...heavyUrls, ...normalUrls].every((u) => host.hits(new URL(u).pathname) === 1);
    const publishable = results.filter((r) => r.publishable).length;
    const check = (ok: boolean, what: string) => {
      if (!ok) failures++;
      return `${ok ? 'ok' : 'FAILED'}: ${what}`;
    };

    const cpu = cpus()[0]?.model ?? 'unknown CPU';
    const db = process.env.DATABASE_URL ? 'PostgreSQL server (scratch database)' : 'embedded PGlite';
    const bus = process.env.NATS_URL ? 'NATS JetStream' : 'in-process bus';
    out.push(
      `Machine: ${cpus().length} x ${cpu}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}; ${db}, ${bus}; ` +
        `PHOTO_CONCURRENCY=${PHOTO_CONCURRENCY ?? '4 (default)'}; everything on one host.`,
      '',
      `Load: ${PROPERTIES} properties pushed at once with ${NORMAL} ordinary photos (1600 x 1067 JPEG, ~${Math.round(ordinary[0]!.length / 1024)} KB), ` +
        `${BOMBS} bombs (10000 x 10000 progressive JPEG of ${Math.round(bombJpeg.length / 1024)} KB and 20000 x 20000 PNG of ${Math.round(bombPng.length / 1024)} KB, alternately) ` +
        `and ${HEAVY} heavy photos within the bounds (${heavy.map((h) => `${h.name} of ${Math.round(h.body.length / 1024)} KB`).join(', ')}, in turn), over HTTPS.`,
      '',
      `- idle RSS (after one photo, median of 20 samples): **${fmt(idle)}**`,
      `- peak RSS while processing (${samples} samples every 20 ms${hwmReset ? ', and VmHWM' : ''}): **${fmt(peak)}**`,
      `- peak - idle: **${fmt(peak - idle)}** (target < ${TARGET_MB} MB: ${peak - idle < TARGET_MB * MB ? 'met' : 'NOT met'})`,
      `- RSS when every photo was settled: ${fmt(end.rss)}`,
      `- time from the pushes to the last photo settled: **${seconds.toFixed(1)} s**`,
      check(ready(normalUrls) === NORMAL, `ordinary photos ready: ${ready(normalUrls)}/${NORMAL}`),
      check(ready(heavyUrls) === HEAVY, `heavy photos within the bounds ready: ${ready(heavyUrls)}/${HEAVY}`),
      check(bombsTooLarge === BOMBS, `bombs rejected too_large: ${bombsTooLarge}/${BOMBS}`),
      check(fetchedOnce, `every URL fetched exactly once (no re-claims): ${fetchedOnce}`),
      check(publishable === PROPERTIES, `properties publishable: ${publishable}/${PROPERTIES}`),
      check(system.child.exitCode === null && system.child.signalCode === null, 'the system process is still running'),
    );
  } finally {
    c?.close();
    await stopAllSystems();
    await host.close();
    pki.remove();
  }
  process.stdout.write(`\n${out.join('\n')}\n`);
  if (failures > 0) process.exitCode = 1;
}

main().catch((err) => {
  process.stderr.write(`bench:photos failed: ${(err as Error).stack ?? String(err)}\n`);
  void stopAllSystems().finally(() => process.exit(1));
});
