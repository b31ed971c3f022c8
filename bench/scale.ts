/**
 * Scale (docs/performance.md "Scale"): the partner operations on a database holding
 * 100,000 properties in 1,000 workspaces and over a million blocks, against the same
 * operations on a small database, side by side.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:scale
 *
 * Two scratch databases on DATABASE_URL's server (created and dropped), each with its own
 * system (`main.ts all`, tsc-compiled; NATS_URL passed through when set):
 *
 *   small: the measured sandbox workspace W alone — 100 properties (each published, with
 *          its listing and one processed photo) and 1,000 blocks over its 100 listings;
 *   large: W the same, plus BENCH_SCALE_WORKSPACES − 2 (998) workspaces of the same shape
 *          and one large partner H with 100 properties and 100,000 blocks: 100,000
 *          properties and listings, 1,099,000 blocks with their claims.
 *
 * The data is bulk-loaded with SQL (generate_series, straight into the identity,
 * catalog and calendar schemas as the services write them and within every
 * constraint), then VACUUM ANALYZE. W is created through the API on both (its key and
 * token are real). Then, per round (BENCH_ROUNDS, 3), each operation on small and on
 * large, the side going first alternating, one request at a time for BENCH_SECONDS (8):
 *
 *   - property upsert: `PUT /v1/properties/{id}` over W's 100 properties, a new name each
 *     time (the property update, its republication and its listing event), photo unchanged;
 *   - listing lookup: `CatalogService.GetListing` over gRPC (what the calendar asks to
 *     check a listing's owner), a random listing of a random workspace of the database;
 *   - `PUT /v1/blocks/{uid}`: fresh uids over W's listings, 1–14 nights;
 *   - `GET /v1/blocks`: page 1 of W's 1,000 blocks (and, reported beside it, page 10
 *     and a `from` page).
 *
 * Reported per operation: its cost — the CPU it takes, in the system process and in
 * PostgreSQL (from /proc), per operation — on each side and the large/small ratio
 * (median of the rounds' ratios; target ≤ 1.2), and the p50 latencies beside it (a
 * shared machine moves those far more than the CPU figures).
 * Then the cost model of deep pages (OFFSET paging): EXPLAIN (ANALYZE, BUFFERS) of
 * ListBlocks' statement on H at pages 1 to 2,000 of 50, and a least-squares line
 * time = a + b × offset through them.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Environment } from '../gen/psync/common/v1/environment_pb';
import { blockPageQuery } from '../services/calendar/blocks-list';
import { createSql, type Sql } from '../services/kit/db';
import { createBenchDatabase, type BenchDatabase, fullSystemEnv } from './support/bench-system';
import { benchRuntime, buildForBench } from './support/compiled-build';
import { startFull, type Build, type Server } from './support/gateway-servers';
import { machineLine } from './support/machine';
import { accessToken, operatorClients, propertyBody, type Operator } from './support/partners';
import { cpuMsOf } from './support/proc-cpu';
import { benchName, recordMetric } from './support/results';
import { runWrk, wrkVersion, type LoadResult, putBlocksScript } from './support/wrk';

const ROOT = resolve(__dirname, '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? '8');
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? '3'));
const WORKSPACES = Math.max(2, Number(process.env.BENCH_SCALE_WORKSPACES ?? '1000'));
const PROPERTIES_PER_WORKSPACE = 100;
const BLOCKS_PER_WORKSPACE = 1000;
const LARGE_PARTNER_BLOCKS = Number(process.env.BENCH_LARGE_PARTNER_BLOCKS ?? '100000');
const TARGET_RATIO = 1.2;
const PHOTO_URL = 'https://photos.example.com/seed/cover.jpg';

type Side = 'small' | 'large';
type Op = 'property_upsert' | 'listing_lookup' | 'put_block' | 'get_blocks' | 'get_blocks_page10' | 'get_blocks_from';
const OPS: { op: Op; label: string; target: boolean }[] = [
  { op: 'property_upsert', label: 'PUT /v1/properties/{id} (changed name)', target: true },
  { op: 'listing_lookup', label: 'CatalogService.GetListing (gRPC)', target: true },
  { op: 'put_block', label: 'PUT /v1/blocks/{uid} (new)', target: true },
  { op: 'get_blocks', label: 'GET /v1/blocks (page 1 of 50)', target: true },
  { op: 'get_blocks_page10', label: 'GET /v1/blocks?page=10', target: false },
  { op: 'get_blocks_from', label: 'GET /v1/blocks?from=… (page 1)', target: false },
];

const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  const m = Math.floor(v.length / 2);
  return v.length === 0 ? NaN : v.length % 2 ? v[m]! : (v[m - 1]! + v[m]!) / 2;
};
const msText = (n: number) => `${n < 10 ? n.toFixed(2) : n.toFixed(1)} ms`;

/**
 * Bulk-loads `workspaces` (ids) with PROPERTIES_PER_WORKSPACE published properties each
 * (listing, one processed photo sharing one stored blob) and `blocks` blocks per
 * workspace over its listings (dates spread over two years, 1–14 nights; partner blocks
 * may overlap), with their claims.
 */
async function seed(sql: Sql, workspaces: string[], blocks: number): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`insert into identity.workspaces (workspace_id, name, environment)
             select w, 'seeded', 'sandbox' from unnest(${workspaces}::uuid[]) w on conflict do nothing`;
    await tx`insert into catalog.workspaces (workspace_id, environment)
             select w, 'sandbox' from unnest(${workspaces}::uuid[]) w on conflict do nothing`;
    await tx`insert into catalog.photo_blobs (sha256, content_type, width, height, bytes)
             values (${'0'.repeat(64)}, 'image/webp', 1600, 1067, '\\x00'::bytea) on conflict do nothing`;
    // Listing ids as the catalog mints them: lst_ and 24 characters of [a-z2-7].
    await tx`
      insert into catalog.properties (id, workspace_id, provider_id, environment, name, description, property_type,
        address_line1, address_city, address_country, latitude, longitude, max_guests, bedrooms, beds, bathrooms,
        base_rate_value, base_rate_currency, check_in_time, check_out_time, status, amenities, content_hash,
        publishable, missing, listing_id)
      select gen_random_uuid(), w, 'prop-' || g, 'sandbox', 'Seeded ' || g, 'Two rooms over the old harbour.', 'apartment',
             '1 Quai des Arts', 'Marseille', 'FR', 43.2965, 5.3698, 4, 2, 2, 1, '120.00', 'EUR', '15:00', '11:00', 'listed',
             '{wifi,kitchen,heating}', md5(w::text || g), true, '{}',
             'lst_' || translate(substr(md5(w::text || ':' || g), 1, 24), '0189', 'wxyz')
      from unnest(${workspaces}::uuid[]) w cross join generate_series(0, ${PROPERTIES_PER_WORKSPACE - 1}::int) g`;
    await tx`
      insert into catalog.photos (property_id, url, position, ordinal, state, blob_sha256, source_content_type,
        source_width, source_height, source_bytes, finished_at)
      select id, ${PHOTO_URL}, 0, 0, 'processed', ${'0'.repeat(64)}, 'image/jpeg', 1600, 1067, 276000, now()
      from catalog.properties where workspace_id = any(${workspaces}::uuid[])`;
    await tx`
      insert into catalog.listings (listing_id, workspace_id, environment, origin, property_id)
      select listing_id, workspace_id, 'sandbox', 'partner', id from catalog.properties where workspace_id = any(${workspaces}::uuid[])`;
    await tx`
      with l as (
        select workspace_id, array_agg(listing_id order by listing_id) as ls
        from catalog.listings where workspace_id = any(${workspaces}::uuid[]) group by workspace_id
      ), b as (
        insert into calendar.blocks (workspace_id, external_uid, listing_id, check_in, check_out, reason)
        select l.workspace_id::text, 'seed-' || g, l.ls[1 + g % cardinality(l.ls)],
               date '2031-01-01' + (g::bigint * 2654435761 % 730)::int,
               date '2031-01-01' + (g::bigint * 2654435761 % 730)::int + 1 + (g % 14),
               'reserved'
        from l cross join generate_series(1, ${blocks}::int) g
        returning id, listing_id, check_in, check_out
      )
      insert into calendar.claims (listing_id, holder_kind, holder_id, nights)
      select listing_id, 'block', id::text, daterange(check_in, check_out) from b`;
  });
}

async function vacuum(sql: Sql): Promise<void> {
  for (const t of ['identity.workspaces', 'catalog.workspaces', 'catalog.properties', 'catalog.photos', 'catalog.listings', 'calendar.blocks', 'calendar.claims']) {
    await sql.unsafe(`vacuum analyze ${t}`);
  }
}

/** CPU ms so far of the system's PostgreSQL backends (the database's non-bench sessions). */
async function backendCpu(sql: Sql): Promise<Map<number, number>> {
  const rows = await sql<{ pid: number }[]>`
    select pid from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend' and application_name not like 'bench%'`;
  return new Map(rows.map((r) => [r.pid, cpuMsOf(r.pid)]));
}

function cpuBetween(a: Map<number, number>, b: Map<number, number>): number {
  let s = 0;
  for (const [pid, ms] of b) s += ms - (a.get(pid) ?? 0);
  return s;
}

interface SideState {
  side: Side;
  db: BenchDatabase;
  sql: Sql;
  system: Server & { internal: string };
  op: Operator;
  ws: string;
  token: string;
  listings: string[];
  /** Listings of the whole database, for lookups: [workspace, listing]. */
  lookup: [string, string][];
  scripts: { property: string; block: string };
}

function luaScripts(dir: string, side: Side, listings: string[]): { property: string; block: string } {
  const prefix = `${side}-${randomBytes(3).toString('hex')}`;
  const body = JSON.stringify(propertyBody('NAME', [PHOTO_URL]));
  const [before, after] = body.split('NAME') as [string, string];
  const property = join(dir, `property-${side}.lua`);
  writeFileSync(
    property,
    `local n = 0
wrk.method = "PUT"
wrk.headers["Content-Type"] = "application/json"
request = function()
  n = n + 1
  return wrk.format(nil, "/v1/properties/prop-" .. (n % ${PROPERTIES_PER_WORKSPACE}), nil, ${JSON.stringify(before)} .. "Loft ${prefix} " .. n .. ${JSON.stringify(after)})
end
`,
  );
  const block = join(dir, `block-${side}.lua`);
  writeFileSync(block, putBlocksScript(listings, prefix, 1924992000, 14));
  return { property, block };
}

/** One operation on one side for SECONDS: latencies (ms) and PostgreSQL CPU per operation. */
async function measure(s: SideState, op: Op): Promise<{ p50: number; p99: number; n: number; failures: number; pgMs: number; nodeMs: number }> {
  const pg0 = await backendCpu(s.sql);
  const node0 = cpuMsOf(s.system.child.pid);
  let r: LoadResult;
  if (op === 'listing_lookup') {
    const lat: number[] = [];
    let failures = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < SECONDS * 1000) {
      const [ws, listingId] = s.lookup[Math.floor(Math.random() * s.lookup.length)]!;
      const began = performance.now();
      try {
        await s.op.catalog.getListing({ workspaceId: ws, listingId });
      } catch {
        failures++;
      }
      lat.push(performance.now() - began);
    }
    lat.sort((a, b) => a - b);
    r = {
      requests: { average: lat.length / SECONDS, total: lat.length },
      latency: { p50: lat[Math.floor(lat.length / 2)]!, p99: lat[Math.floor(lat.length * 0.99)]!, average: 0, max: lat.at(-1)! },
      non2xx: failures,
      errors: 0,
      timeouts: 0,
    };
  } else {
    const auth = { authorization: `Bearer ${s.token}` };
    const url = s.system.url;
    r =
      op === 'property_upsert'
        ? await runWrk(`${url}/`, auth, 1, SECONDS, s.scripts.property)
        : op === 'put_block'
          ? await runWrk(`${url}/`, auth, 1, SECONDS, s.scripts.block)
          : await runWrk(`${url}/v1/blocks${op === 'get_blocks_page10' ? '?page=10' : op === 'get_blocks_from' ? '?from=2032-01-01' : ''}`, auth, 1, SECONDS);
  }
  const n = Math.max(1, r.requests.total);
  const pgMs = cpuBetween(pg0, await backendCpu(s.sql)) / n;
  const nodeMs = (cpuMsOf(s.system.child.pid) - node0) / n;
  return { p50: r.latency.p50, p99: r.latency.p99, n: r.requests.total, failures: r.non2xx + r.errors + r.timeouts, pgMs, nodeMs };
}

/** EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) of ListBlocks' statement, median of `runs`. */
async function explainPage(sql: Sql, ws: string, page: number, runs = 7): Promise<{ ms: number; buffers: number }> {
  const times: number[] = [];
  let buffers = 0;
  for (let i = 0; i < runs; i++) {
    const q = blockPageQuery(sql, { workspaceId: ws, from: null, to: null, limit: 51, offset: (page - 1) * 50 });
    const [row] = await sql<
      { 'QUERY PLAN': { Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number }; 'Execution Time': number }[] }[]
    >`explain (analyze, buffers, timing off, format json) ${q}`;
    const plan = row!['QUERY PLAN'][0]!;
    times.push(plan['Execution Time']);
    buffers = plan.Plan['Shared Hit Blocks'] + plan.Plan['Shared Read Blocks'];
  }
  return { ms: median(times), buffers };
}

async function main(): Promise<void> {
  benchName('scale');
  const wrk = wrkVersion();
  if (!wrk) throw new Error('wrk is required (apt-get install -y wrk): it drives the partner requests');
  const runtime = benchRuntime();
  const build: Build = { runtime, dist: runtime === 'compiled' ? buildForBench(ROOT) : undefined };
  const dir = mkdtempSync(join(tmpdir(), 'psync-bench-scale-'));
  const loadStart = loadavg();
  const sides: SideState[] = [];
  const dbs: BenchDatabase[] = [];
  const servers: Server[] = [];
  const sqls: Sql[] = [];
  const operators: Operator[] = [];
  try {
    for (const side of ['small', 'large'] as const) {
      const db = await createBenchDatabase(`psync_bench_scale_${side}`);
      dbs.push(db);
      const system = await startFull(build, fullSystemEnv(db.url, 'benchscale'));
      servers.push(system);
      const sql = createSql(db.url, { max: 2, applicationName: 'bench-scale' });
      sqls.push(sql);
      const op = operatorClients(system.internal);
      operators.push(op);
      const ws = (await op.identity.createWorkspace({ name: `bench-scale-${side}`, environment: Environment.SANDBOX })).workspace!.workspaceId;
      const t0 = performance.now();
      await seed(sql, [ws], BLOCKS_PER_WORKSPACE);
      if (side === 'large') {
        const others = Array.from({ length: WORKSPACES - 2 }, () => randomUUID());
        for (let i = 0; i < others.length; i += 100) await seed(sql, others.slice(i, i + 100), BLOCKS_PER_WORKSPACE);
        await seed(sql, [randomUUID()], LARGE_PARTNER_BLOCKS);
      }
      await vacuum(sql);
      const [counts] = await sql<{ properties: number; blocks: number; workspaces: number }[]>`
        select (select count(*) from catalog.properties)::int as properties, (select count(*) from calendar.blocks)::int as blocks,
               (select count(*) from catalog.workspaces)::int as workspaces`;
      process.stdout.write(
        `${side}: ${counts!.workspaces} workspaces, ${counts!.properties} properties, ${counts!.blocks} blocks, loaded in ${((performance.now() - t0) / 1000).toFixed(0)} s\n`,
      );
      const listings = (await sql<{ listing_id: string }[]>`select listing_id from catalog.listings where workspace_id = ${ws} order by listing_id`).map((r) => r.listing_id);
      const lookup = (await sql<{ w: string; l: string }[]>`select workspace_id::text as w, listing_id as l from catalog.listings`).map((r) => [r.w, r.l] as [string, string]);
      sides.push({ side, db, sql, system, op, ws, token: await accessToken(op, system.url, ws), listings, lookup, scripts: luaScripts(dir, side, listings) });
    }

    // Warm-up: each operation once briefly on each side (caches, JIT, the calendar's listing cache).
    for (const s of sides) {
      const check = await fetch(`${s.system.url}/v1/properties/prop-0`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(propertyBody('Warm-up', [PHOTO_URL])),
      });
      const text = await check.text();
      if (check.status !== 200 || !text.includes('"publishable":true')) throw new Error(`${s.side}: PUT /v1/properties answered ${check.status} ${text}`);
    }

    const results = new Map<string, { side: Side; round: number; p50: number; p99: number; n: number; failures: number; pgMs: number; nodeMs: number }[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, { op }] of OPS.entries()) {
        const order = (round + i) % 2 === 0 ? sides : [...sides].reverse();
        for (const s of order) {
          const r = await measure(s, op);
          const list = results.get(op) ?? [];
          list.push({ side: s.side, round, ...r });
          results.set(op, list);
          process.stdout.write(
            `${op.padEnd(18)} ${s.side.padEnd(5)} round ${round + 1}: p50 ${msText(r.p50)}, p99 ${msText(r.p99)}, ${r.n} ops, ${r.failures} failed; CPU/op system ${r.nodeMs.toFixed(3)} ms, postgres ${r.pgMs.toFixed(3)} ms; load ${loadavg()[0]!.toFixed(1)}\n`,
          );
        }
      }
    }

    // Deep pages on the large partner (OFFSET paging).
    const large = sides.find((s) => s.side === 'large')!;
    const [{ h } = { h: '' }] = await large.sql<{ h: string }[]>`select workspace_id as h from calendar.blocks group by workspace_id order by count(*) desc limit 1`;
    const pages = [1, 10, 100, 500, 1000, 2000].filter((p) => (p - 1) * 50 < LARGE_PARTNER_BLOCKS);
    const deep: { page: number; offset: number; ms: number; buffers: number }[] = [];
    for (const page of pages) deep.push({ page, offset: (page - 1) * 50, ...(await explainPage(large.sql, h, page)) });
    const n = deep.length;
    const mx = deep.reduce((a, d) => a + d.offset, 0) / n;
    const my = deep.reduce((a, d) => a + d.ms, 0) / n;
    const slope =
      deep.reduce((a, d) => a + (d.offset - mx) * (d.ms - my), 0) /
      Math.max(
        1e-9,
        deep.reduce((a, d) => a + (d.offset - mx) ** 2, 0),
      );
    const intercept = my - slope * mx;
    const buffersPerThousand = ((deep.at(-1)!.buffers - deep[0]!.buffers) / Math.max(1, deep.at(-1)!.offset)) * 1000;

    const loadEnd = loadavg();
    const lines: string[] = [];
    lines.push(
      `Command: \`${process.env.DATABASE_URL ? 'DATABASE_URL=… ' : ''}npm run bench:scale\` (BENCH_SECONDS=${SECONDS}, BENCH_ROUNDS=${ROUNDS}, BENCH_SCALE_WORKSPACES=${WORKSPACES}, ${runtime}); wrk ${wrk}, one connection.`,
      `${machineLine()}; load average at the start ${loadStart.map((x) => x.toFixed(2)).join(' ')}, at the end ${loadEnd.map((x) => x.toFixed(2)).join(' ')}.`,
      `Large database: ${WORKSPACES} workspaces, ${WORKSPACES * PROPERTIES_PER_WORKSPACE} properties and listings, ${(WORKSPACES - 1) * BLOCKS_PER_WORKSPACE + LARGE_PARTNER_BLOCKS} blocks; small: the measured workspace alone (${PROPERTIES_PER_WORKSPACE} properties, ${BLOCKS_PER_WORKSPACE} blocks).`,
      '',
      '| operation (one at a time) | CPU / op small: system + PostgreSQL | large | **cost large / small** (median of rounds) | p50 small → large | p50 large / small | failed |',
      '|---|---:|---:|---:|---:|---:|---:|',
    );
    for (const { op, label, target } of OPS) {
      const rs = results.get(op) ?? [];
      const of = (side: Side) => rs.filter((r) => r.side === side);
      const small = of('small');
      const big = of('large');
      // Cost = the CPU an operation takes, system process and PostgreSQL: what the size
      // of the database could change, and the measure a shared machine disturbs least.
      const cost = (r: (typeof rs)[number]) => r.nodeMs + r.pgMs;
      const perRound = (f: (r: (typeof rs)[number]) => number) =>
        big.map((b) => f(b) / f(small.find((x) => x.round === b.round) ?? { ...b, p50: NaN, nodeMs: NaN, pgMs: NaN })).filter((x) => !Number.isNaN(x));
      const ratios = perRound(cost);
      const ratio = median(ratios);
      const p50Ratio = median(perRound((r) => r.p50));
      const med = (xs: typeof rs, k: 'p50' | 'pgMs' | 'nodeMs') => median(xs.map((x) => x[k]));
      const range = `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`;
      lines.push(
        `| ${label} | ${med(small, 'nodeMs').toFixed(2)} + ${med(small, 'pgMs').toFixed(3)} ms | ${med(big, 'nodeMs').toFixed(2)} + ${med(big, 'pgMs').toFixed(3)} ms | ${target ? '**' : ''}${ratio.toFixed(2)}×${target ? '**' : ''} (${range}) | ${msText(med(small, 'p50'))} → ${msText(med(big, 'p50'))} | ${p50Ratio.toFixed(2)}× | ${rs.reduce((a, r) => a + r.failures, 0)} |`,
      );
      recordMetric({ id: `scale.${op}.ratio`, label: `${label}: CPU per operation, large / small database`, value: ratio, unit: '×', note: `${ROUNDS} rounds, range ${range}` });
      recordMetric({ id: `scale.${op}.small`, label: `${label}: CPU per operation (system + PostgreSQL), small database`, value: median(small.map(cost)), unit: 'ms' });
      recordMetric({ id: `scale.${op}.large`, label: `${label}: CPU per operation (system + PostgreSQL), large database`, value: median(big.map(cost)), unit: 'ms' });
      recordMetric({ id: `scale.${op}.p50_ratio`, label: `${label}: p50 large / small database`, value: p50Ratio, unit: '×' });
      recordMetric({ id: `scale.${op}.pg_small`, label: `${label}: PostgreSQL CPU per operation, small database`, value: med(small, 'pgMs'), unit: 'ms' });
      recordMetric({ id: `scale.${op}.pg_large`, label: `${label}: PostgreSQL CPU per operation, large database`, value: med(big, 'pgMs'), unit: 'ms' });
    }
    lines.push('', `Target: large / small ≤ ${TARGET_RATIO}× for property upsert, listing lookup, PUT /v1/blocks and GET /v1/blocks.`, '');
    lines.push(`Deep pages of the large partner (${LARGE_PARTNER_BLOCKS} blocks, no filter; ListBlocks' statement in the database, median of 7):`, '');
    lines.push('| page (of 50) | offset | execution | buffers |', '|---:|---:|---:|---:|');
    for (const d of deep) lines.push(`| ${d.page} | ${d.offset} | ${d.ms.toFixed(2)} ms | ${d.buffers} |`);
    lines.push(
      '',
      `Cost model: time ≈ ${intercept.toFixed(2)} ms + ${(slope * 1000).toFixed(2)} ms per 1,000 rows skipped (offset = (page − 1) × page_size); about ${buffersPerThousand.toFixed(0)} buffers per 1,000 rows skipped.`,
    );
    recordMetric({ id: 'scale.deep_page.ms_per_1000_rows', label: 'deep pages: execution time per 1,000 rows skipped', value: slope * 1000, unit: 'ms' });
    recordMetric({ id: 'scale.deep_page.base_ms', label: 'deep pages: fixed part of a page', value: intercept, unit: 'ms' });
    process.stdout.write(`\n${lines.join('\n')}\n`);
  } finally {
    for (const op of operators) op.close();
    for (const sql of sqls) await sql.end({ timeout: 5 });
    for (const server of servers) await server.stop();
    for (const db of dbs) await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:scale: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
