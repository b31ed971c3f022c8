/**
 * NATS authentication and per-role permissions (docs/operations.md, "NATS
 * authentication") on a private nats-server started here with the documented
 * authorization block: the bus connects with the user and password of NATS_URL or a
 * `.creds` file (NATS_CREDS); only the calendar's user may publish the calendar's
 * events; only notifications' user may pull them; a connection without credentials is
 * refused. Needs the `nats-server` binary (Debian's 2.9 works); never touches the
 * machine's shared server.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { nkeys } from '@nats-io/nats-core';
import type { EventBus, ReceivedEvent } from '../../services/kit/events';
import { connectNatsBus, inboxPrefixOf } from '../../services/kit/events';
import { loadConfig } from '../../services/kit/runtime';
import { natsServers } from '../../services/kit/events';
import { CALENDAR_SUBJECTS, INTAKE_CONSUMER } from '../../services/notifications/intake';
import { testLogger } from '../support/bus';
import { startPrivateNats, type PrivateNats } from '../support/private-nats';
import { uniqueBusPrefix } from '../support/system';

const prefix = uniqueBusPrefix();
/** The calendar's key pair for its `.creds` file (the server knows its public key). */
const calendarKey = nkeys.createUser();
let nats: PrivateNats;
const buses: EventBus[] = [];

beforeAll(async () => {
  nats = await startPrivateNats(prefix, { calendar: calendarKey.getPublicKey() });
}, 30_000);

afterAll(async () => {
  await Promise.allSettled(buses.map((b) => b.close()));
  await nats?.stop();
});

async function bus(url: string, inboxOwner: string, credsFile?: string): Promise<EventBus> {
  const b = await connectNatsBus({ url, credsFile, inboxOwner, prefix, log: testLogger() });
  buses.push(b);
  return b;
}

const event = () => ({ id: randomUUID(), subject: CALENDAR_SUBJECTS.bookingConfirmed, data: new Uint8Array([1, 2, 3]) });

test('NATS_URL credentials are taken out of the URL (nats.js would read digits after "user:" as the port)', () => {
  expect(natsServers('nats://calendar:123@h1:4222,nats://calendar:123@h2:4223')).toEqual({ servers: ['nats://h1:4222', 'nats://h2:4223'], user: 'calendar', pass: '123' });
  expect(natsServers('nats://us%40er:p%2Fw@h:4222')).toEqual({ servers: ['nats://h:4222'], user: 'us@er', pass: 'p/w' });
  expect(natsServers('nats://h:4222')).toEqual({ servers: ['nats://h:4222'] });
  expect(() => loadConfig({ NATS_URL: 'nats://a:1@h1:4222,nats://b:2@h2:4222' })).toThrow(/same user and password/);
  expect(() => loadConfig({ NATS_CREDS: '/nonexistent.creds' })).toThrow(/NATS_CREDS/);
  const dir = mkdtempSync(join(tmpdir(), 'psync-creds-'));
  try {
    const bad = join(dir, 'bad.creds');
    writeFileSync(bad, 'not a creds file');
    expect(() => loadConfig({ NATS_URL: 'nats://h:4222', NATS_CREDS: bad })).toThrow(/not a NATS .creds file/);
    expect(() => loadConfig({ NATS_URL: 'nats://u:p@h:4222', NATS_CREDS: credsFile(dir, nkeys.createUser()) })).toThrow(/exclude each other/);
    expect(() => loadConfig({ NATS_CREDS: credsFile(dir, nkeys.createUser()) })).toThrow(/needs NATS_URL/);
    expect(loadConfig({ NATS_URL: 'nats://h:4222', NATS_CREDS: credsFile(dir, nkeys.createUser()) }).natsCreds).toMatch(/\.creds$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A `.creds` file in `dir` for the user key pair `kp` (the JWT block's content is what nsc would sign). */
function credsFile(dir: string, kp: ReturnType<typeof nkeys.createUser>): string {
  const file = join(dir, `${randomUUID()}.creds`);
  const seed = new TextDecoder().decode(kp.getSeed());
  writeFileSync(
    file,
    `-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.unsigned\n------END NATS USER JWT------\n\n` +
      `-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`,
  );
  return file;
}

test('the calendar publishes and notifications pulls with their own credentials, on inboxes of their own', async () => {
  const calendar = await bus(nats.urlFor('calendar'), 'calendar');
  const notifications = await bus(nats.urlFor('notifications'), 'notifications');
  const got: ReceivedEvent[] = [];
  const sub = await notifications.subscribe({ durable: INTAKE_CONSUMER, subjects: Object.values(CALENDAR_SUBJECTS), handler: async (e) => void got.push(e) });
  const e = event();
  await calendar.publish(e);
  for (let i = 0; got.length === 0 && i < 100; i++) await new Promise((r) => setTimeout(r, 50));
  expect(got.map((g) => g.id)).toEqual([e.id]);
  await sub.stop();
  await calendar.ping();
  await notifications.ping();
});

test('without credentials the server refuses the connection', async () => {
  await expect(connect({ servers: nats.url, reconnect: false })).rejects.toThrow(/Authorization Violation/i);
  await expect(connectNatsBus({ url: nats.url, prefix, log: testLogger() })).rejects.toThrow(/Authorization Violation/i);
});

test("another role's credentials cannot publish the calendar's events, pull them, or read another role's inboxes", async () => {
  const catalog = await bus(nats.urlFor('catalog'), 'catalog');
  await expect(catalog.publish(event())).rejects.toThrow();
  await expect(catalog.subscribe({ durable: `${INTAKE_CONSUMER}-x`, subjects: [CALENDAR_SUBJECTS.bookingConfirmed], handler: async () => {} })).rejects.toThrow();
  // Nor may notifications publish them (a compromised notifications cannot make events).
  const notifications = await bus(nats.urlFor('notifications'), 'notifications');
  await expect(notifications.publish(event())).rejects.toThrow();
  // A raw client of the catalog user subscribing to notifications' inbox: refused by the server.
  const nc = await connect({ servers: nats.url, user: 'catalog', pass: new URL(nats.urlFor('catalog')).password, inboxPrefix: inboxPrefixOf('catalog') });
  const errors: string[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === 'error') errors.push(String(s.error));
  })();
  nc.subscribe(`${inboxPrefixOf('notifications')}.>`);
  await nc.flush().catch(() => {});
  for (let i = 0; errors.length === 0 && i < 40; i++) await new Promise((r) => setTimeout(r, 50));
  await nc.close().catch(() => {});
  expect(errors.join(' ')).toMatch(/PERMISSIONS_VIOLATION|Permissions Violation/i);
});

test('NATS_CREDS: the bus signs in with the .creds file (its nkey seed), with the role the server gives that key', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'psync-creds-'));
  try {
    const calendar = await bus(nats.url, 'calendar', credsFile(dir, calendarKey));
    const notifications = await bus(nats.urlFor('notifications'), 'notifications');
    const got: ReceivedEvent[] = [];
    const sub = await notifications.subscribe({ durable: INTAKE_CONSUMER, subjects: Object.values(CALENDAR_SUBJECTS), handler: async (e) => void got.push(e) });
    const e = event();
    await calendar.publish(e);
    for (let i = 0; !got.some((g) => g.id === e.id) && i < 100; i++) await new Promise((r) => setTimeout(r, 50));
    expect(got.map((g) => g.id)).toContain(e.id);
    await sub.stop();
    // Another key's .creds file: refused.
    await expect(connectNatsBus({ url: nats.url, credsFile: credsFile(dir, nkeys.createUser()), prefix, log: testLogger() })).rejects.toThrow(/Authorization Violation/i);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
