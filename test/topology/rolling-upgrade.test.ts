/**
 * Rolling upgrade: the previous release (deploy/previous-release, checked out from git
 * history) serves the public contract on this change's migrated schema, and old and new
 * processes run side by side on one PostgreSQL and one NATS JetStream, each finishing the
 * other's work when it leaves (docs/operations.md "Upgrades"; docs/architecture.md
 * "Every release runs beside the previous one").
 *
 * As `helm upgrade` does it on a database at the previous release (the previous release's
 * own `migrate` on an empty database): this change's migrations run first (`main.ts
 * migrate`, the hook Job, which skips the baselines: the schema holds what they replace)
 * while nothing of the new release serves, its repeatable SQL files
 * (services/kit/db/sql-functions.ts) recorded at their versions, which the old release's
 * own start-up migration leaves in place; then the old release alone serves
 * the contract smoke (token, property, blocks, webhook registration with its challenge, a
 * signed booking delivery, an erasure acknowledged). Then the new release starts beside
 * the old one and both serve partner traffic while bookings are committed through both;
 * the old one leaves (SIGTERM, as its pods are replaced) with deliveries of events it
 * committed still pending, and the new one delivers them. Then the reverse, as a rollback
 * does: the old release starts beside the new one, the new one leaves, and the old one
 * delivers the new one's events and lists every block the new one wrote.
 *
 * The hand-over is made deterministic: the receiver answers the hand-over partner's
 * deliveries 503 (Retry-After: 1) while the leaving process lives, so none can be
 * acknowledged before it exits; every one is then acknowledged by the process that stays.
 *
 * Figures (`rolling-upgrade`): every public answer by status, through both gateways;
 * lost = bookings committed but never acknowledged by the partner, plus blocks answered
 * 200 that the last process does not list; duplicated = event ids the partner
 * acknowledged more than once. Everything runs on a private PostgreSQL and nats-server on
 * free loopback ports, removed in afterAll. Beside it, on a second database of that
 * server: a schema this change's migrate made from its baselines is one the previous
 * release's migrate finds fully migrated (a new install, then a rollback).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSql } from '../../services/kit/db';
import { currentFunctionFiles, currentMigrations } from '../../tools/migration-manifest';
import { validProperty } from '../gateway/fixtures';
import { jsonRequest, send, type Received as Answer, type SentRequest } from '../gateway/http-client';
import { Partners, type Partner } from '../gateway/partners';
import { SystemClients, webhookEnv } from '../notifications/support/harness';
import { echoAndAccept, Receiver, verifyDelivery, type Handler, type Received } from '../notifications/support/receiver';
import { hasNatsServer, startPrivateNats, type PrivateNats } from '../support/private-nats';
import { privatePostgresUnavailable, startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres';
import { entryOf, randomKey, runCommand, runMain, startSystem, stopAllSystems, uniqueBusPrefix, type RunningSystem } from '../support/system';
import { ROOT } from '../support/process';
import { createCertificates, type Certificates } from '../support/tls';
import { FIGURES_DIR, recordFigures, non503Errors } from './support/figures';
import { checkOutPreviousRelease, type PreviousReleaseCheckout } from './support/previous-release';
import { sleep } from '../support/eventually';

jest.setTimeout(600_000);

const unavailable = privatePostgresUnavailable() ?? (hasNatsServer() ? undefined : 'no nats-server binary');
const describeWithServers = unavailable ? describe.skip : describe;
if (unavailable) test.skip(`private PostgreSQL and nats-server unavailable: ${unavailable}`, () => undefined);

/** Seconds of traffic on both releases before the hand-over. */
const SIDE_BY_SIDE_MS = 8000;
/** Bookings committed by the leaving process for the hand-over partner. */
const HANDOVER_BOOKINGS = 5;

/** This release's repeatable SQL files, `<schema>:<id>` → `version checksum` (the kit's are in every schema). */
function thisRelease(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of currentFunctionFiles()) {
    const prefix = f.id.split('/')[0]!;
    for (const schema of prefix === 'kit' ? ['identity', 'catalog', 'calendar', 'notifications'] : [prefix]) out[`${schema}:${f.id}`] = `${f.version} ${f.checksum}`;
  }
  return out;
}

/** What the database records as applied: migration ids, and repeatable files as thisRelease() lists them. */
async function recorded(): Promise<{ migrations: Set<string>; functions: Record<string, string> }> {
  const sql = createSql(env.DATABASE_URL!, { max: 1 });
  try {
    const schemas = await sql<{ nspname: string }[]>`select nspname from pg_namespace where nspname in ('identity', 'catalog', 'calendar', 'notifications')`;
    const migrations = new Set<string>();
    const functions: Record<string, string> = {};
    for (const { nspname } of schemas) {
      for (const r of await sql<{ id: string }[]>`select id from ${sql(`${nspname}.schema_migrations`)}`) migrations.add(r.id);
      const rows = await sql<{ id: string; version: number; checksum: string }[]>`select id, version, checksum from ${sql(`${nspname}.schema_functions`)}`;
      for (const r of rows) functions[`${nspname}:${r.id}`] = `${r.version} ${r.checksum}`;
    }
    return { migrations, functions };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

let checkout: PreviousReleaseCheckout | undefined;
let pg: PrivatePostgres | undefined;
let nats: PrivateNats | undefined;
let certs: Certificates | undefined;
let receiver: Receiver | undefined;
/** The environment every process of either release gets: one database, one bus, one set of keys. */
let env: Record<string, string>;

/** Every public answer, by status ('0': no answer, the exchange failed). */
const statuses: Record<string, number> = {};
/** Public answers by what served them (`old`, `new`, `old gateway + new services`, …). */
const answeredBy: Record<string, number> = {};
/** Event ids the partner acknowledged (answered 2xx), with how often and when first. */
const acknowledged = new Map<string, { count: number; at: number }>();
/** Receiver paths answering deliveries 503 for now. */
const refusing = new Set<string>();
/** Bookings committed (ConfirmBooking answered), by reference: which release committed them. */
const committed = new Map<string, 'old' | 'new'>();
/** Block uids answered 200 on a PUT and never deleted, per workspace. */
const keptBlocks = new Map<string, Set<string>>();
/** Every partner enrolled, through either release. */
const everyone: Enrolled[] = [];
/** Every process started, with what it runs (their output is kept in LOG_DIR afterwards). */
const started: { release: string; system: RunningSystem; stopping: boolean }[] = [];
const LOG_DIR = join(FIGURES_DIR, 'rolling-upgrade');

/** Starts a process of the check and remembers it; its exit before `stopProcess` is reported. */
async function startProcess(release: string, opts: Parameters<typeof startSystem>[0]): Promise<RunningSystem> {
  const system = await startSystem({ ...opts, timeoutMs: 120_000 });
  const entry = { release, system, stopping: false };
  started.push(entry);
  system.child.once('exit', (code, signal) => {
    if (!entry.stopping)
      process.stderr.write(`rolling-upgrade: ${release} (pid ${system.child.pid}) exited unasked: ${code ?? signal}\n${system.stderr().slice(-20).join('\n')}\n`);
  });
  return system;
}

async function stopProcess(system: RunningSystem): Promise<number | null> {
  const entry = started.find((e) => e.system === system);
  if (entry) entry.stopping = true;
  return system.stop();
}

/** The partner's receiver: echoes challenges, refuses while its path is in `refusing`, records acknowledgements. */
const partnerReceiver: Handler = (req) => {
  if (req.json?.event_type === 'endpoint.challenge') return echoAndAccept(req);
  if (refusing.has(req.path)) return { status: 503, headers: { 'retry-after': '1' }, body: '' };
  const id = req.json?.event_id as string | undefined;
  if (id) {
    const a = acknowledged.get(id);
    acknowledged.set(id, { count: (a?.count ?? 0) + 1, at: a?.at ?? Date.now() });
  }
  return { status: 200, body: '{"ok":true}', headers: { 'content-type': 'application/json' } };
};

/** A process with a public gateway, of one release. */
interface Gateway {
  /** What it runs, e.g. `old` or `new gateway + old services`. */
  release: string;
  system: RunningSystem;
}

/** One release's all-in-one process and its clients. */
interface Side extends Gateway {
  release: 'old' | 'new';
  clients: SystemClients;
  partners: Partners;
}

async function start(release: 'old' | 'new'): Promise<Side> {
  const root = release === 'old' ? checkout!.dir : ROOT;
  const system = await startProcess(release, { env, root });
  // The process runs the code of its release: its working directory is that release's checkout.
  expect(realpathSync(`/proc/${system.child.pid}/cwd`)).toBe(realpathSync(root));
  return { release, system, clients: new SystemClients(system.internalUrl), partners: new Partners(system) };
}

async function leave(side: Side): Promise<number | null> {
  side.clients.close();
  side.partners.close();
  return stopProcess(side.system);
}

/**
 * A gateway of release `gatewayOf` in front of the services of `services` (as when the
 * gateway Deployment and the service Deployments roll at different moments).
 */
async function crossGateway(gatewayOf: 'old' | 'new', services: Side): Promise<Gateway> {
  const url = services.system.internalUrl;
  const release = `${gatewayOf} gateway + ${services.release} services`;
  const system = await startProcess(release, {
    role: 'gateway',
    root: gatewayOf === 'old' ? checkout!.dir : ROOT,
    env: { ...env, INTERNAL_PORT: '0', IDENTITY_URL: url, CATALOG_URL: url, CALENDAR_URL: url, NOTIFICATIONS_URL: url },
  });
  return { release, system };
}

/** Sends `req` to `side`'s gateway and counts the answer. */
async function call(side: Gateway, req: SentRequest): Promise<Answer> {
  const r = await send(side.system.gatewayUrl, req).catch((err: Error) => ({ status: 0, headers: {}, text: `no response: ${err.message}`, json: undefined }));
  statuses[String(r.status)] = (statuses[String(r.status)] ?? 0) + 1;
  answeredBy[side.release] = (answeredBy[side.release] ?? 0) + 1;
  return r;
}

/** A partner enrolled through `side`: workspace, key, token, a listing, a webhook endpoint on its own receiver path. */
interface Enrolled {
  partner: Partner;
  listingId: string;
  path: string;
  secret: string;
}

async function enrol(side: Side): Promise<Enrolled> {
  const partner = await side.partners.partner('sandbox');
  const listingId = (await side.clients.catalog.createListing({ workspaceId: partner.workspaceId })).listing!.listingId;
  const path = `/partner/${partner.workspaceId}`;
  receiver!.on(path, partnerReceiver);
  const r = await call(side, jsonRequest('PUT', '/v1/webhooks/endpoint', { url: `${receiver!.baseUrl}${path}`, events: ['booking.confirmed', 'user.erased'] }, partner.auth));
  expect([r.status, r.json?.status]).toEqual([200, 'active']);
  keptBlocks.set(partner.workspaceId, new Set());
  const e = { partner, listingId, path, secret: r.json.signing_secret as string };
  everyone.push(e);
  return e;
}

let nextStay = 0;
/** Commits a booking of two nights on `e`'s listing through `side`'s calendar (as the marketplace does). */
async function book(side: Side, e: Enrolled, guestId = `guest-${randomBytes(4).toString('hex')}`): Promise<string> {
  const start = new Date(Date.UTC(2031, 0, 1) + nextStay++ * 3 * 86_400_000);
  const day = (d: Date) => d.toISOString().slice(0, 10);
  const res = await side.clients.calendar.confirmBooking({
    listingId: e.listingId,
    checkIn: day(start),
    checkOut: day(new Date(start.getTime() + 2 * 86_400_000)),
    guestId,
    guestName: 'Ada Lovelace',
    partySize: 2,
    amountPaid: { value: '123.45', currency: 'EUR' },
    requiresPayment: false,
  });
  const ref = res.booking!.bookingReference;
  committed.set(ref, side.release);
  return ref;
}

/** The partner's booking.confirmed deliveries of `ref` (every attempt the receiver saw). */
const deliveriesOf = (ref: string): Received[] => receiver!.received.filter((r) => r.json?.event_type === 'booking.confirmed' && r.json.data?.booking_reference === ref);

/** The event id the partner acknowledged for booking `ref`, if any. */
function acknowledgedEvent(ref: string): string | undefined {
  return deliveriesOf(ref)
    .map((r) => r.json.event_id as string)
    .find((id) => acknowledged.has(id));
}

/** Partner traffic through `side`'s gateway until `running()` turns false: blocks kept and deleted, listings, property upserts, token exchanges. */
async function partnerTraffic(side: Gateway, e: Enrolled, running: () => boolean): Promise<void> {
  const tag = `${side.release.replace(/\W+/g, '-')}-${randomBytes(3).toString('hex')}`;
  for (let i = 0; running(); i++) {
    const uid = `${tag}-${i}`;
    const put = await call(side, jsonRequest('PUT', `/v1/blocks/${uid}`, { listing_id: e.listingId, check_in: '2027-03-01', check_out: '2027-03-04' }, e.partner.auth));
    if (put.status === 200) keptBlocks.get(e.partner.workspaceId)!.add(uid);
    await call(side, { method: 'GET', path: '/v1/blocks?page_size=20', headers: e.partner.auth });
    await call(side, jsonRequest('PUT', `/v1/properties/${tag}`, validProperty(), e.partner.auth));
    await call(side, jsonRequest('PUT', `/v1/blocks/${uid}-gone`, { listing_id: e.listingId, check_in: '2027-05-01', check_out: '2027-05-02' }, e.partner.auth));
    await call(side, { method: 'DELETE', path: `/v1/blocks/${uid}-gone`, headers: e.partner.auth });
    if (i % 5 === 0) await call(side, { method: 'POST', path: '/v1/token', headers: { Authorization: `Bearer ${e.partner.apiKey}` } });
  }
}

/** Every block uid `side` lists for `e` (all pages). */
async function listedBlocks(side: Side, e: Enrolled): Promise<Set<string>> {
  const uids = new Set<string>();
  for (let page = 1; ; page++) {
    const r = await call(side, { method: 'GET', path: `/v1/blocks?page=${page}&page_size=200`, headers: e.partner.auth });
    expect(r.status).toBe(200);
    for (const item of r.json.items as { external_uid: string }[]) uids.add(item.external_uid);
    if (!r.json.has_more) return uids;
  }
}

interface HandOver {
  /** Seconds from the leaving process's SIGTERM until the staying one had delivered all its pending events. */
  seconds: number;
  /** Events committed by the leaving process and acknowledged only after it exited. */
  deliveredByStaying: number;
}

/**
 * Both sides serve partner traffic and commit bookings, and so do a gateway of each
 * release in front of the other release's services; then `leaving` commits the
 * hand-over partner's bookings (refused by the receiver while it lives), stops taking
 * traffic, gets SIGTERM and exits; `staying` must deliver them. Traffic goes on through
 * `staying` meanwhile.
 */
async function handOver(leaving: Side, staying: Side, enrolled: { leaving: Enrolled; staying: Enrolled; handover: Enrolled }): Promise<HandOver> {
  const crossed = await Promise.all([crossGateway(staying.release, leaving), crossGateway(leaving.release, staying)]);
  let leavingRuns = true;
  let stayingRuns = true;
  /** Bookings refused or failed (none expected), with the release asked. */
  const bookingFailures: string[] = [];
  const traffic = [
    partnerTraffic(leaving, enrolled.leaving, () => leavingRuns),
    ...crossed.map((g) => partnerTraffic(g, enrolled.staying, () => leavingRuns)),
    partnerTraffic(staying, enrolled.staying, () => stayingRuns),
    partnerTraffic(staying, enrolled.leaving, () => stayingRuns),
  ];
  // The booking in flight on the leaving process, if any: it is answered before that process is stopped.
  let onLeaving: Promise<unknown> = Promise.resolve();
  const bookings = (async () => {
    for (let i = 0; stayingRuns; i++) {
      const side = i % 2 === 0 || !leavingRuns ? staying : leaving;
      const booked = book(side, i % 2 === 0 ? enrolled.staying : enrolled.leaving);
      if (side === leaving) onLeaving = booked.catch(() => undefined);
      try {
        await booked;
      } catch (err) {
        bookingFailures.push(`${side.release} (pid ${side.system.child.pid}, exit ${side.system.child.exitCode ?? side.system.child.signalCode}): ${String(err)}`);
        return;
      }
      await sleep(200);
    }
  })();
  try {
    await sleep(SIDE_BY_SIDE_MS);

    refusing.add(enrolled.handover.path);
    const handed: string[] = [];
    for (let i = 0; i < HANDOVER_BOOKINGS; i++) handed.push(await book(leaving, enrolled.handover));
    // Its events are on their way (an attempt was refused) before the leaving process goes.
    await receiver!.waitFor(() => handed.some((ref) => deliveriesOf(ref).length > 0), 30_000, 'a first attempt at a hand-over delivery');
    leavingRuns = false;
    await Promise.all([...traffic.slice(0, 1 + crossed.length), onLeaving]);
    for (const g of crossed) expect(await stopProcess(g.system)).toBe(0);
    const stopped = Date.now();
    expect(await leave(leaving)).toBe(0);
    const exited = Date.now();
    refusing.delete(enrolled.handover.path);
    await receiver!.waitFor(() => handed.every((ref) => acknowledgedEvent(ref) !== undefined), 60_000, 'the hand-over deliveries');
    const seconds = (Date.now() - stopped) / 1000;
    await sleep(2000);
    stayingRuns = false;
    await Promise.all([...traffic, bookings]);

    const deliveredByStaying = handed.filter((ref) => acknowledged.get(acknowledgedEvent(ref)!)!.at >= exited).length;
    expect(deliveredByStaying).toBe(HANDOVER_BOOKINGS);
    return { seconds, deliveredByStaying };
  } finally {
    // Also when something failed: no loop outlives the hand-over.
    leavingRuns = false;
    stayingRuns = false;
    await Promise.allSettled([...traffic, bookings]);
    expect(bookingFailures).toEqual([]);
  }
}

describeWithServers('rolling upgrade: the previous release beside this one on one schema', () => {
  let old: Side | undefined;
  let current: Side | undefined;
  let first: Enrolled;
  let upgrade: HandOver;
  let rollback: HandOver;

  beforeAll(async () => {
    checkout = checkOutPreviousRelease();
    pg = await startPrivatePostgres();
    const prefix = uniqueBusPrefix();
    nats = await startPrivateNats(prefix);
    certs = await createCertificates();
    receiver = new Receiver(certs);
    await receiver.listen();
    env = {
      ...webhookEnv(certs, { WEBHOOK_RETRY_SCHEDULE: '1,1,2,2,2,2,2,2,2,2' }),
      DATABASE_URL: pg.url,
      NATS_URL: nats.urlFor('psync'),
      BUS_PREFIX: prefix,
      TOKEN_SIGNING_KEY: randomKey(),
      SECRETS_ENCRYPTION_KEY: randomKey(),
      RATE_LIMIT_PER_HOUR: '1000000',
      TOKEN_RATE_LIMIT_PER_HOUR: '1000000',
      // Several processes on one machine: each its own metrics port.
      METRICS_PORT: '0',
    };
  }, 600_000);

  afterAll(async () => {
    for (const s of [old, current]) {
      s?.clients.close();
      s?.partners.close();
    }
    for (const e of started) e.stopping = true;
    await stopAllSystems();
    // Each process's output, for a failure's post-mortem (CI keeps .tmp/).
    mkdirSync(LOG_DIR, { recursive: true });
    // log text on purpose: kept whole for a person
    started.forEach((e, i) => writeFileSync(join(LOG_DIR, `${i + 1}-${e.release.replace(/\W+/g, '-')}.log`), [...e.system.logs(), '--- stderr', ...e.system.stderr()].join('\n')));
    await receiver?.close();
    certs?.remove();
    await nats?.stop();
    await pg?.destroy();
    checkout?.remove();
  });

  /** The previous release's `migrate` (its own entry point, from its checkout) on `databaseUrl`. */
  const previousMigrate = (databaseUrl: string) =>
    runCommand(process.execPath, [...entryOf(checkout!.dir), 'migrate'], { ...process.env, ...env, DATABASE_URL: databaseUrl }, 120_000, { cwd: checkout!.dir });

  test("a new database: this change's migrate runs the baselines; the previous release's then finds every migration it knows applied", async () => {
    const admin = createSql(pg!.url, { max: 1 });
    try {
      await admin`create database baseline_first`;
    } finally {
      await admin.end({ timeout: 5 });
    }
    const url = new URL(pg!.url);
    url.pathname = '/baseline_first';
    const fresh = await runMain(['migrate'], { ...process.env, ...env, DATABASE_URL: url.toString() }, 120_000);
    expect([fresh.code, fresh.stdout]).toEqual([0, expect.stringContaining('"migrated":true')]);
    expect(fresh.stderr).toContain('"migration":"calendar/baseline"');
    const previous = await previousMigrate(url.toString());
    expect([previous.code, previous.stdout]).toEqual([0, expect.stringContaining('"migrated":true')]);
    expect(`${previous.stdout}${previous.stderr}`).not.toContain('migration applied');
  });

  test('the database is at the previous release: its own migrate on the empty database', async () => {
    const res = await previousMigrate(env.DATABASE_URL!);
    expect([res.code, res.stdout]).toEqual([0, expect.stringContaining('"migrated":true')]);
  });

  test("this change's migrations run next, as the pre-upgrade hook Job does: the baselines skipped", async () => {
    const res = await runMain(['migrate'], { ...process.env, ...env }, 120_000);
    expect(`${res.stdout}${res.stderr}`).not.toContain('/baseline"');
    expect([res.code, res.stdout]).toEqual([0, expect.stringContaining('"migrated":true')]);
    const { migrations, functions } = await recorded();
    expect(currentMigrations().filter((m) => !migrations.has(m.id))).toEqual([]);
    expect(functions).toEqual(thisRelease());
  });

  test('the previous release serves the contract smoke on the migrated schema', async () => {
    old = await start('old');
    first = await enrol(old);
    const auth = first.partner.auth;
    expect((await call(old, { method: 'POST', path: '/v1/token', headers: { Authorization: `Bearer ${first.partner.apiKey}` } })).status).toBe(200);
    expect((await call(old, jsonRequest('PUT', '/v1/properties/smoke-1', validProperty(), auth))).status).toBe(200);
    const block = { listing_id: first.listingId, check_in: '2027-03-01', check_out: '2027-03-04', reason: 'maintenance' };
    expect((await call(old, jsonRequest('PUT', '/v1/blocks/smoke-block', block, auth))).status).toBe(200);
    const listed = await call(old, { method: 'GET', path: '/v1/blocks', headers: auth });
    expect(listed.status).toBe(200);
    expect(listed.json.items).toEqual([expect.objectContaining({ external_uid: 'smoke-block', listing_id: first.listingId, nights: 3 })]);
    expect((await call(old, { method: 'DELETE', path: '/v1/blocks/smoke-block', headers: auth })).status).toBe(204);
    expect((await call(old, { method: 'GET', path: '/v1/blocks', headers: auth })).json.items).toEqual([]);
    // The endpoint was registered through the old gateway (enrol): its challenge was echoed.
    expect(receiver!.at(first.path, 'challenge')).toHaveLength(1);

    // A booking, delivered and signed; the guest's erasure, delivered and acknowledged.
    const guestId = `guest-${randomBytes(4).toString('hex')}`;
    const ref = await book(old, first, guestId);
    const [delivery] = await receiver!.waitFor(() => deliveriesOf(ref).length > 0 && deliveriesOf(ref), 30_000, 'the booking delivery');
    expect(verifyDelivery(delivery!, first.secret)).toEqual({ ok: true, matched: 'signature' });
    await old.clients.calendar.eraseGuest({ guestId });
    const erased = () => receiver!.at(first.path, 'delivery').filter((r) => r.json?.event_type === 'user.erased' && r.json.data.booking_references.includes(ref));
    const [erasure] = await receiver!.waitFor(() => erased().length > 0 && erased(), 30_000, 'the erasure delivery');
    expect(verifyDelivery(erasure!, first.secret).ok).toBe(true);
    const ack = await call(old, jsonRequest('POST', `/v1/deletion-requests/${erasure!.json.event_id}/acknowledge`, {}, auth));
    expect([ack.status, ack.json?.event_id]).toEqual([200, erasure!.json.event_id]);
    // The old release migrated at start-up too: this release's repeatable SQL stayed (sql-functions.ts).
    expect((await recorded()).functions).toEqual(thisRelease());
  });

  test('upgrade: the new release starts beside the old one, the old one leaves, the new one delivers what the old one committed', async () => {
    current = await start('new');
    const enrolled = { leaving: first, staying: await enrol(current), handover: await enrol(old!) };
    upgrade = await handOver(old!, current, enrolled);
    old = undefined;
  });

  test('rollback: the old release starts beside the new one, the new one leaves, the old one delivers and lists what the new one wrote', async () => {
    old = await start('old');
    const staying = await enrol(old);
    const enrolled = { leaving: await enrol(current!), staying, handover: await enrol(current!) };
    rollback = await handOver(current!, old, enrolled);
    current = undefined;

    // Every booking either release committed was acknowledged by its partner, once.
    await receiver!.waitFor(() => [...committed.keys()].every((ref) => acknowledgedEvent(ref) !== undefined), 60_000, 'every booking delivered').catch(() => undefined);
    const undelivered = [...committed.keys()].filter((ref) => acknowledgedEvent(ref) === undefined);
    const duplicated = [...acknowledged.entries()].filter(([, a]) => a.count > 1).map(([id]) => id);
    // Every block answered 200 and never deleted is listed by the old release, whichever release wrote it.
    let lostBlocks = 0;
    for (const e of everyone) {
      const listed = await listedBlocks(old, e);
      lostBlocks += [...keptBlocks.get(e.partner.workspaceId)!].filter((uid) => !listed.has(uid)).length;
    }
    const answered = Object.values(statuses).reduce((a, b) => a + b, 0);
    const byRelease = (r: 'old' | 'new') => [...committed.values()].filter((v) => v === r).length;
    recordFigures({
      fault: 'rolling-upgrade',
      load: `previous release ${checkout!.commit.slice(0, 7)} beside this one on one PostgreSQL and one NATS: contract smoke through the old gateway on the new schema, then two hand-overs (old→new, new→old), each after ${SIDE_BY_SIDE_MS / 1000} s of partner traffic through both releases' gateways and a gateway of each release in front of the other's services (5 loops of block put/list/delete, property upsert, token) and a booking every 0.2 s through both calendars`,
      lost: undelivered.length + lostBlocks,
      duplicated: duplicated.length,
      doubleSold: 0,
      statuses,
      recoverySeconds: 0,
      extra: {
        answered,
        ...Object.fromEntries(Object.entries(answeredBy).map(([k, v]) => [`answered_by_${k.replace(/\W+/g, '_')}`, v])),
        bookings_committed_by_old: byRelease('old'),
        bookings_committed_by_new: byRelease('new'),
        blocks_kept: [...keptBlocks.values()].reduce((n, s) => n + s.size, 0),
        old_events_delivered_by_new: upgrade.deliveredByStaying,
        new_events_delivered_by_old: rollback.deliveredByStaying,
        handover_old_to_new_s: upgrade.seconds.toFixed(1),
        handover_new_to_old_s: rollback.seconds.toFixed(1),
        previous_release_prepared_s: checkout!.preparedSeconds.toFixed(1),
        shared_node_modules: checkout!.sharedModules ? 'yes' : 'no',
      },
    });
    expect(undelivered).toEqual([]);
    expect(duplicated).toEqual([]);
    expect(lostBlocks).toBe(0);
    expect(non503Errors(statuses)).toBe(0);
    expect(answered).toBeGreaterThan(100);
    // Every pairing served: each release alone, and each release's gateway in front of the other's services.
    expect(Object.keys(answeredBy).sort()).toEqual(['new', 'new gateway + old services', 'old', 'old gateway + new services']);
  });
});
