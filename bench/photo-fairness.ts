/**
 * Photo fairness benchmark (docs/performance.md "Photo fairness", docs/catalog.md
 * "Fair scheduling"):
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test NATS_URL=nats://127.0.0.1:4222 npm run bench:photo-fairness
 *   npm run bench:photo-fairness                            # embedded default (PGlite, in-process bus)
 *
 * Two kinds of run, each on a fresh system (`main.ts all`, test/support/system.ts:
 * a scratch database and bus prefix) with the default photo settings and a local HTTPS
 * photo host (throwaway CA as NODE_EXTRA_CA_CERTS, EGRESS_ALLOW_CIDRS = 127.0.0.0/8),
 * alternated BENCH_REPEATS (2) times (clean, contended, clean, contended …) so that a
 * change in the machine's load falls on both alike:
 *
 *   clean:     a healthy tenant pushes BENCH_ROUNDS (5) properties, one after another,
 *              each with BENCH_HEALTHY_PHOTOS (6) new 1600 x 1067 JPEGs;
 *   contended: first BENCH_SLOW_TENANTS (1) other tenant(s) push a property with
 *              BENCH_SLOW_PHOTOS (30) photos on a slow host (headers at once, then a
 *              byte a second, never finished: each fetch runs into the whole
 *              PHOTO_FETCH_TIMEOUT_MS and ends `unreachable`: the worst a host can do); once
 *              their first fetches are open, the healthy tenant pushes as in `clean`.
 *
 * Each round's figure is the healthy property's time to publishable: from the push to
 * the first GetProperty (polled every 20 ms) that answers `publishable`. Reported: each
 * run, then over all runs of a kind the median and the worst round, the ratio contended / clean of the medians
 * (target ≤ 1.5), the slow tenants' fetches open at once at most (must stay within
 * PHOTO_WORKSPACE_CONCURRENCY each) and how many of their photos were still pending at
 * the end (the backlog was queued throughout), the machine and the load average.
 */
import { cpus, loadavg } from 'node:os';
import { clientsFor, completeProperty, newWorkspace, pid, type Clients } from '../test/catalog/support/catalog';
import { makeImage, startPhotoServer, type PhotoServer } from '../test/catalog/support/photo-server';
import { startSystem, stopAllSystems } from '../test/support/system';
import { createCertificates } from '../test/support/tls';
import { PhotoState } from '../gen/psync/catalog/v1/catalog_pb';
import { settings } from '../services/kit/runtime';
import { machineLine } from './support/machine';
import { benchName, recordMetric, watchPeakRss } from './support/results';

const num = (name: string, def: number) => Number(process.env[name] ?? String(def));
const ROUNDS = num('BENCH_ROUNDS', 5);
const REPEATS = num('BENCH_REPEATS', 2);
const HEALTHY_PHOTOS = num('BENCH_HEALTHY_PHOTOS', 6);
const SLOW_PHOTOS = num('BENCH_SLOW_PHOTOS', 30);
const SLOW_TENANTS = num('BENCH_SLOW_TENANTS', 1);
const TARGET_RATIO = 1.5;
const POLL_MS = 20;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

interface RunResult {
  run: 'clean' | 'contended';
  rounds_ms: number[];
  median_ms: number;
  max_ms: number;
  /** Per slow tenant: its fetches open at once at most, and its photos still pending at the end. */
  slow_tenants: { max_open_fetches: number; pending_at_end: number }[];
  load: [number, number];
}

async function run(kind: RunResult['run'], host: PhotoServer, caFile: string, images: Buffer[]): Promise<RunResult> {
  const system = await startSystem({ env: { EGRESS_ALLOW_CIDRS: '127.0.0.0/8', NODE_EXTRA_CA_CERTS: caFile, RATE_LIMIT_PER_HOUR: '1000000' }, timeoutMs: 120000 });
  watchPeakRss(`system (${kind})`, system.child.pid);
  const c: Clients = clientsFor(system.internalUrl);
  const prefix = `/${kind}-${Date.now().toString(36)}`;
  try {
    const healthy = await newWorkspace(c.identity);
    let served = 0;
    const route = (path: string) => {
      host.route(`${prefix}${path}`, { kind: 'bytes', body: images[served++ % images.length]!, contentType: 'image/jpeg' });
      return `${host.base}${prefix}${path}`;
    };
    const timeToPublishable = async (ws: string, urls: string[]): Promise<number> => {
      const id = pid('healthy');
      const t0 = performance.now();
      await c.catalog.upsertProperty({ workspaceId: ws, providerId: id, property: completeProperty(urls) });
      for (;;) {
        const r = await c.catalog.getProperty({ workspaceId: ws, providerId: id });
        if (r.publishable) return performance.now() - t0;
        if (performance.now() - t0 > 600_000) throw new Error(`${id} not publishable after 600 s`);
        await sleep(POLL_MS);
      }
    };

    // Warm-up: sharp and libvips loaded, the claim statement prepared, one photo through the whole path.
    await timeToPublishable(healthy, [route('/warm.jpg')]);

    const slow: { ws: string; id: string; dir: string }[] = [];
    if (kind === 'contended') {
      const body = await makeImage(1600, 1067, 'jpeg', 90);
      for (let t = 0; t < SLOW_TENANTS; t++) {
        const ws = await newWorkspace(c.identity);
        const dir = `${prefix}/slow-${t}/`;
        const urls = Array.from({ length: SLOW_PHOTOS }, (_, i) => {
          host.route(`${dir}${i}.jpg`, { kind: 'trickle', body });
          return `${host.base}${dir}${i}.jpg`;
        });
        const id = pid('slow');
        await c.catalog.upsertProperty({ workspaceId: ws, providerId: id, property: completeProperty(urls) });
        slow.push({ ws, id, dir });
      }
      // Their fetches are open (the workers are taken) before the healthy tenant pushes.
      while (slow.some((s) => host.openNow(s.dir) === 0)) await sleep(POLL_MS);
    }

    const load0 = loadavg()[0]!;
    const rounds: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const urls = Array.from({ length: HEALTHY_PHOTOS }, (_, i) => route(`/r${r}/${i}.jpg`));
      rounds.push(Math.round(await timeToPublishable(healthy, urls)));
    }
    const slowTenants = [];
    for (const s of slow) {
      const p = await c.catalog.getProperty({ workspaceId: s.ws, providerId: s.id });
      slowTenants.push({ max_open_fetches: host.maxInFlight(s.dir), pending_at_end: p.photos.filter((ph) => ph.state === PhotoState.PENDING).length });
    }
    return {
      run: kind,
      rounds_ms: rounds,
      median_ms: median(rounds),
      max_ms: Math.max(...rounds),
      slow_tenants: slowTenants,
      load: [+load0.toFixed(2), +loadavg()[0]!.toFixed(2)],
    };
  } finally {
    c.close();
    await stopAllSystems();
  }
}

async function main(): Promise<void> {
  benchName('photo-fairness');
  const backend = process.env.DATABASE_URL ? `PostgreSQL${process.env.NATS_URL ? ' + NATS' : ''}` : 'embedded (PGlite, in-process bus)';
  const pki = await createCertificates();
  const host = await startPhotoServer(pki);
  try {
    const images: Buffer[] = [];
    for (let i = 0; i < 12; i++) images.push(await makeImage(1600, 1067, 'jpeg', 100 + i));
    console.log(
      JSON.stringify({
        machine: machineLine(),
        cpus: cpus().length,
        backend,
        rounds: ROUNDS,
        healthy_photos: HEALTHY_PHOTOS,
        slow_tenants: SLOW_TENANTS,
        slow_photos: SLOW_PHOTOS,
        load_at_start: loadavg().map((l) => +l.toFixed(2)),
      }),
    );
    const runs: RunResult[] = [];
    for (let i = 0; i < REPEATS; i++) {
      for (const kind of ['clean', 'contended'] as const) {
        const r = await run(kind, host, pki.caFile, images);
        console.log(JSON.stringify(r));
        runs.push(r);
      }
    }
    const roundsOf = (kind: RunResult['run']) => runs.filter((r) => r.run === kind).flatMap((r) => r.rounds_ms);
    const summary = (kind: RunResult['run']) => ({ median_ms: median(roundsOf(kind)), max_ms: Math.max(...roundsOf(kind)) });
    const clean = summary('clean');
    const contended = { ...summary('contended'), slow_tenants: runs.filter((r) => r.run === 'contended').flatMap((r) => r.slow_tenants) };
    const ratio = contended.median_ms / clean.median_ms;
    const load = `${Math.min(...runs.map((r) => r.load[0]))}–${Math.max(...runs.map((r) => r.load[1]))}`;
    const note = `${REPEATS} × ${ROUNDS} rounds of ${HEALTHY_PHOTOS} photos; ${SLOW_TENANTS} × ${SLOW_PHOTOS} slow photos queued; ${backend}; load ${load}`;
    recordMetric({ id: 'photo-fairness.clean_ms', label: 'healthy tenant: push → publishable, median, clean', value: clean.median_ms, unit: 'ms', note });
    recordMetric({ id: 'photo-fairness.contended_ms', label: 'healthy tenant: push → publishable, median, slow photos queued', value: contended.median_ms, unit: 'ms', note });
    recordMetric({ id: 'photo-fairness.ratio', label: 'contended / clean (medians)', value: +ratio.toFixed(2), unit: '×', note });
    const withinLimit = contended.slow_tenants.every((s) => s.max_open_fetches <= settings.photoWorkspaceConcurrency.default);
    console.log(
      JSON.stringify({
        clean,
        contended: { median_ms: contended.median_ms, max_ms: contended.max_ms },
        load,
        ratio_contended_over_clean: +ratio.toFixed(2),
        target_within_1_5x: ratio <= TARGET_RATIO,
        slow_tenants_within_default_workspace_limit: withinLimit,
        slow_backlog_queued_throughout: contended.slow_tenants.every((s) => s.pending_at_end > 0),
      }),
    );
  } finally {
    await host.close();
    pki.remove();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
