/**
 * Kept-alive delivery connections (docs/notifications.md, "How it is sent"), against a
 * real HTTPS receiver that counts its TLS connections:
 *
 * - the webhook poster in its own process (support/poster-probe.ts) with "DNS" the
 *   test controls: a second delivery to an endpoint reuses its connection, another
 *   endpoint gets its own; a NEW connection is vetted again — after the name moves
 *   outside EGRESS_ALLOW_CIDRS the open connection still serves (it was vetted when it
 *   was opened) but the next new one is refused without connecting; TLS sessions are
 *   resumed; a request on a kept-alive connection that the server closes before
 *   answering is sent once more on a new connection; close() closes the connections;
 * - the running system: two sequential deliveries come over one TLS connection (the
 *   challenge over its own), and SIGTERM closes the kept-alive connections and exits
 *   promptly.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import { ROOT } from '../support/process';
import { backends, exitOf, firstLogEvent } from '../support/system';
import { sleep, type EventDriver } from './support/harness';
import { webhookSuite } from './support/suite';

const ALL = [WebhookEventType.BOOKING_CONFIRMED, WebhookEventType.BOOKING_CANCELLED, WebhookEventType.USER_ERASED];

const suite = webhookSuite('kept-alive connections');

/** Resolves once the receiver has no open connection left, or fails after `timeoutMs`. */
async function allClosed(timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (suite.receiver.openConnections > 0) {
    if (Date.now() > deadline) throw new Error(`still ${suite.receiver.openConnections} open connection(s) after ${timeoutMs} ms`);
    await sleep(20);
  }
}

/** Delivers one booking.confirmed to a new endpoint of a new workspace; returns the receiver path. */
async function deliverOnce(d: EventDriver, bookings = 1): Promise<string> {
  const ws = await d.newWorkspace();
  const path = `/kept/${ws}`;
  await suite.clients.notifications.putEndpoint({ workspaceId: ws, url: `${suite.receiver.baseUrl}${path}`, events: ALL });
  for (let i = 1; i <= bookings; i++) {
    await d.confirmBooking(ws, { guestId: `g-${ws}-${i}`, guestName: 'Ada Lovelace' });
    await suite.receiver.waitFor(() => suite.receiver.at(path, 'delivery').length >= i, 20_000, `delivery ${i}`);
  }
  return path;
}

describe('the webhook poster keeps connections alive and vets every new one', () => {
  let dir: string;
  let probe: ChildProcess;
  let replies: AsyncIterator<string>;
  const dnsAnswers = (...addresses: string[]) => writeFileSync(join(dir, 'dns'), addresses.join('\n'));

  /** Sends one command to the probe and returns its JSON answer. */
  async function send(command: string): Promise<{ status?: number; error?: string; resolutions?: number; closed?: boolean }> {
    probe.stdin!.write(`${command}\n`);
    const next = await replies.next();
    if (next.done) throw new Error(`poster probe ended; stderr: ${stderr.join('')}`);
    return JSON.parse(next.value);
  }
  const post = (path: string, endpoint: string) => send(`post ${suite.receiver.baseUrl}${path} ${endpoint}`);
  const stderr: string[] = [];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'psync-probe-'));
    dnsAnswers('127.0.0.1');
    probe = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/notifications/support/poster-probe.ts')], {
      cwd: ROOT,
      env: { ...process.env, PROBE_DNS_FILE: join(dir, 'dns'), EGRESS_ALLOW_CIDRS: '127.0.0.1/32', NODE_EXTRA_CA_CERTS: suite.certs.caFile },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    probe.stderr!.on('data', (b: Buffer) => stderr.push(b.toString()));
    replies = createInterface({ input: probe.stdout! })[Symbol.asyncIterator]();
  });

  afterAll(async () => {
    if (probe.exitCode === null) probe.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('a second delivery to the same endpoint reuses its connection; another endpoint gets its own', async () => {
    const tls0 = suite.receiver.tlsConnections;
    const first = await post('/probe/a', 'ws-a');
    expect(first).toMatchObject({ status: 200 });
    const second = await post('/probe/a', 'ws-a');
    expect(second).toMatchObject({ status: 200 });
    const [a1, a2] = suite.receiver.at('/probe/a');
    expect(a2!.connection).toBe(a1!.connection);
    expect(suite.receiver.tlsConnections - tls0).toBe(1);
    // A reused connection needs no resolution: it was vetted when it was opened.
    expect(second.resolutions).toBe(first.resolutions);

    expect(await post('/probe/b', 'ws-b')).toMatchObject({ status: 200 });
    expect(suite.receiver.at('/probe/b')[0]!.connection).not.toBe(a1!.connection);
    expect(suite.receiver.tlsConnections - tls0).toBe(2);
  });

  test('a new connection to an endpoint resumes its TLS session', async () => {
    suite.receiver.closeIdleConnections();
    await allClosed();
    // timing under test: the pool hears the partner's close (a FIN on a kept-alive socket) only as it arrives.
    await sleep(200);
    const tls0 = suite.receiver.tlsConnections;
    expect(await post('/probe/b', 'ws-b')).toMatchObject({ status: 200 });
    const last = suite.receiver.at('/probe/b').at(-1)!;
    expect(last.connection).toBeGreaterThan(tls0);
    expect(last.resumed).toBe(true);
  });

  test('a new connection is vetted again: once the name resolves outside the allow-list it is refused, without connecting', async () => {
    expect(await post('/probe/a', 'ws-a')).toMatchObject({ status: 200 });
    const opened = suite.receiver.at('/probe/a').at(-1)!.connection;
    dnsAnswers('127.0.0.2'); // loopback, but outside EGRESS_ALLOW_CIDRS=127.0.0.1/32
    // The open connection was vetted and pinned when it was opened: it still serves.
    expect(await post('/probe/a', 'ws-a')).toMatchObject({ status: 200 });
    expect(suite.receiver.at('/probe/a').at(-1)!.connection).toBe(opened);

    // The partner's server drops idle connections (as a keep-alive time-out does).
    suite.receiver.closeIdleConnections();
    await allClosed();
    // timing under test: the pool hears the partner's close (a FIN on a kept-alive socket) only as it arrives.
    await sleep(200);

    const tls0 = suite.receiver.tlsConnections;
    const seen = suite.receiver.received.length;
    const refused = await post('/probe/a', 'ws-a');
    expect(refused).toMatchObject({ error: 'address_refused' });
    expect(suite.receiver.tlsConnections).toBe(tls0); // never connected
    expect(suite.receiver.received.length).toBe(seen);

    // Back to an allowed answer: a new connection, vetted again.
    dnsAnswers('127.0.0.1');
    const again = await post('/probe/a', 'ws-a');
    expect(again).toMatchObject({ status: 200 });
    expect(again.resolutions).toBeGreaterThan(refused.resolutions!);
    expect(suite.receiver.at('/probe/a').at(-1)!.connection).toBeGreaterThan(tls0);
  });

  test('a kept-alive connection closed under a request, before any answer: sent again once, on a new connection', async () => {
    let calls = 0;
    suite.receiver.on('/probe/drop', () => (++calls === 2 ? { status: 200, drop: true } : { status: 200 }));
    expect(await post('/probe/drop', 'ws-drop')).toMatchObject({ status: 200 });
    expect(await post('/probe/drop', 'ws-drop')).toMatchObject({ status: 200 });
    const [r1, r2, r3] = suite.receiver.at('/probe/drop');
    expect(r2!.connection).toBe(r1!.connection); // reused, then dropped without an answer
    expect(r3!.connection).not.toBe(r1!.connection); // the retry, on a new connection
    expect(calls).toBe(3);
  });

  test('close() closes the kept-alive connections; the process then ends on its own', async () => {
    expect(await post('/probe/a', 'ws-a')).toMatchObject({ status: 200 });
    expect(suite.receiver.openConnections).toBeGreaterThanOrEqual(1);
    expect(await send('close')).toEqual({ closed: true });
    await allClosed(); // closed by the poster, while the process still runs
    expect(probe.exitCode).toBeNull();
    const t0 = Date.now();
    probe.stdin!.end();
    expect(await exitOf(probe)).toBe(0);
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});

describe(`kept-alive delivery connections in the running system (${backends.database} + ${backends.bus})`, () => {
  suite.withEvents('two sequential deliveries to one endpoint come over one TLS connection; the challenge over its own', async (d) => {
    const path = await deliverOnce(d, 2);
    const [challenge] = suite.receiver.at(path, 'challenge');
    const [d1, d2] = suite.receiver.at(path, 'delivery');
    expect(d2!.connection).toBe(d1!.connection);
    expect(d1!.connection).not.toBe(challenge!.connection);
  });

  suite.withEvents('SIGTERM closes the kept-alive connections and the process exits promptly', async (d) => {
    await deliverOnce(d);
    expect(suite.receiver.openConnections).toBeGreaterThanOrEqual(1); // the delivery's, kept alive
    const t0 = Date.now();
    expect(await suite.system.stop('SIGTERM')).toBe(0);
    expect(Date.now() - t0).toBeLessThan(8000);
    await allClosed();
    const closed = firstLogEvent(suite.system.logs(), 'webhook.connections.closed');
    expect(closed?.connections).toBeGreaterThanOrEqual(1);
  });
});
