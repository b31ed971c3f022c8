/**
 * On a three-node JetStream cluster (three private nats-servers on loopback, with
 * cluster routes): a stream an older release created with one replica, and its durable
 * consumer, are brought to NATS_STREAM_REPLICAS=3 in place at start-up, keeping their
 * events and the consumer's position; and a durable consumer whose leader node is
 * killed gets new events again within seconds. Needs the `nats-server` binary (Debian's 2.9
 * works); skipped without it. Never touches the machine's shared server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { nanos, type NatsConnection } from '@nats-io/nats-core';
import { AckPolicy, DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import pino from 'pino';
import { connectNatsBus } from '../../services/kit/events';
import { isUnavailableFailure } from '../../services/kit/rpc';
import { INTAKE_CONSUMER } from '../../services/notifications/intake';
import { hasNatsServer } from '../support/private-nats';
import { freePort, uniqueBusPrefix } from '../support/system';
import { firstLogEvent } from '../support/log-events';

let dir = '';
const servers: ChildProcess[] = [];
let url = '';
let nc: NatsConnection;

/** Starts three clustered nats-servers with JetStream; resolves once JetStream answers (a meta leader is elected). */
async function startCluster(): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), 'psync-nats-cluster-'));
  const clientPorts = [await freePort(), await freePort(), await freePort()];
  const routePorts = [await freePort(), await freePort(), await freePort()];
  const routes = routePorts.map((p) => `nats-route://127.0.0.1:${p}`).join(', ');
  clientPorts.forEach((port, i) => {
    const conf = join(dir, `n${i}.conf`);
    writeFileSync(
      conf,
      `listen: 127.0.0.1:${port}\nserver_name: n${i}\njetstream { store_dir: ${JSON.stringify(join(dir, `n${i}`))} }\n` +
        `cluster { name: psync-test, listen: 127.0.0.1:${routePorts[i]}, routes: [${routes}] }\n`,
    );
    servers.push(spawn('nats-server', ['-c', conf], { stdio: 'ignore' }));
  });
  url = clientPorts.map((p) => `nats://127.0.0.1:${p}`).join(',');
  for (let i = 0; ; i++) {
    try {
      nc ??= await connect({ servers: url.split(','), reconnect: true });
      await (await jetstreamManager(nc)).getAccountInfo();
      return;
    } catch (err) {
      if (i >= 100) throw new Error(`the NATS cluster did not start: ${String(err)}`, { cause: err });
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/**
 * A cluster answers a request with a time-out while it elects a leader (the JetStream
 * meta group, a stream's or consumer's group after its peers change); a client asks
 * again, as this does, for as long as an election can take on a loaded machine
 * (`withinMs`), never a fixed number of times.
 */
async function asking<T>(fn: () => Promise<T>, withinMs = 60_000): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline || !isUnavailableFailure(err)) throw err; // not answered in time, or no leader yet
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

(hasNatsServer() ? describe : describe.skip)('the stream on a three-node JetStream cluster', () => {
  beforeAll(startCluster, 60_000);

  afterAll(async () => {
    await nc?.close();
    await Promise.all(
      servers.map(
        (s) =>
          new Promise((r) => {
            if (s.exitCode !== null || s.signalCode !== null) return r(undefined);
            s.once('exit', r);
            s.kill('SIGTERM');
          }),
      ),
    );
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("an older release's R1 stream and consumer become R3 in place, keeping events and position", async () => {
    const prefix = uniqueBusPrefix();
    const name = prefix.toUpperCase();
    const jsm = await jetstreamManager(nc);
    await asking(() =>
      jsm.streams.add({
        name,
        subjects: [`${prefix}.>`],
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.Old,
        duplicate_window: nanos(120_000),
      }),
    );
    await asking(() =>
      jsm.consumers.add(name, { durable_name: INTAKE_CONSUMER, ack_policy: AckPolicy.Explicit, filter_subject: `${prefix}.a`, ack_wait: nanos(30_000), max_deliver: -1 }),
    );
    const js = jetstream(nc);
    for (let i = 0; i < 5; i++) await asking(() => js.publish(`${prefix}.a`, new Uint8Array([i]), { msgID: `${prefix}-${i}` }));

    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
    const bus = await asking(() => connectNatsBus({ url, prefix, log, stream: { replicas: 3, maxAgeMs: 7 * 86_400_000, maxBytes: -1 } }), 30_000);
    try {
      const handled: number[] = [];
      await asking(() => bus.subscribe({ durable: INTAKE_CONSUMER, subjects: ['a'], handler: async (e) => void handled.push(e.data[0]!) }));
      for (let i = 0; i < 100 && handled.length < 5; i++) await new Promise((r) => setTimeout(r, 100));
      expect(handled).toEqual([0, 1, 2, 3, 4]);

      // The new peers join within seconds of the update.
      const peers = async () =>
        asking(async () => [(await jsm.streams.info(name)).cluster?.replicas?.length, (await jsm.consumers.info(name, INTAKE_CONSUMER)).cluster?.replicas?.length]);
      for (let i = 0; i < 100 && (await peers()).some((n) => n !== 2); i++) await new Promise((r) => setTimeout(r, 200));
      expect(await peers()).toEqual([2, 2]); // and a leader each: three copies
      const stream = await asking(() => jsm.streams.info(name));
      expect(stream.config).toMatchObject({ num_replicas: 3, max_age: nanos(7 * 86_400_000) });
      expect(stream.state.messages).toBe(5);
      expect((await asking(() => jsm.consumers.info(name, INTAKE_CONSUMER))).config.num_replicas).toBe(3);
      expect(firstLogEvent(lines, 'bus.stream.updated')?.changes).toEqual(['num_replicas 1→3', 'max_age unlimited→7d']);
      // The consumer (created inheriting the stream's replicas) is R3 either way: the bus
      // updated it (and said so) or the server scaled it with its stream first.
      const consumerLine = firstLogEvent(lines, 'bus.consumer.updated');
      if (consumerLine) expect(consumerLine.num_replicas).toBe('1→3');
    } finally {
      await bus.close();
      await jsm.streams.delete(name).catch(() => false);
    }
  }, 120_000);

  // Runs last: it kills a node. The consumer's pull request dies with its leader, and
  // the bus notices (missed heartbeats) and pulls from the new leader within seconds
  // rather than after nats.js's default 30 s pull expiry. The bus is connected to
  // another node, so no reconnect hides the loss.
  test('a durable consumer whose leader node is lost gets new events within seconds', async () => {
    const prefix = uniqueBusPrefix();
    const name = prefix.toUpperCase();
    const jsm = await jetstreamManager(nc);
    const log = pino({ level: 'silent' });
    const stream = { replicas: 3, maxAgeMs: 86_400_000, maxBytes: -1 };
    const setup = await asking(() => connectNatsBus({ url, prefix, log, stream }), 30_000);
    await asking(() => setup.subscribe({ durable: INTAKE_CONSUMER, subjects: ['a'], handler: async () => undefined }));
    await setup.close();
    const leader = (await asking(() => jsm.consumers.info(name, INTAKE_CONSUMER))).cluster!.leader!;
    const victim = Number(leader.slice(1));
    const others = url
      .split(',')
      .filter((_, i) => i !== victim)
      .join(',');
    const bus = await asking(() => connectNatsBus({ url: others, prefix, log, stream }), 3);
    try {
      const handled = new Set<string>();
      await asking(() => bus.subscribe({ durable: INTAKE_CONSUMER, subjects: ['a'], handler: async (e) => void handled.add(e.id) }));
      const publish = async (id: string) => {
        for (let i = 0; ; i++) {
          try {
            return await bus.publish({ id, subject: 'a', data: new Uint8Array([1]) });
          } catch (err) {
            if (i >= 60) throw err;
            await new Promise((r) => setTimeout(r, 500));
          }
        }
      };
      const warm = randomUUID();
      await publish(warm);
      for (let i = 0; i < 100 && !handled.has(warm); i++) await new Promise((r) => setTimeout(r, 100));
      expect(handled.has(warm)).toBe(true);

      const killedAt = Date.now();
      const exited = new Promise((r) => servers[victim]!.once('exit', r));
      servers[victim]!.kill('SIGKILL');
      await exited;
      const ids = [randomUUID(), randomUUID(), randomUUID()];
      for (const id of ids) await publish(id);
      for (let i = 0; i < 600 && !ids.every((id) => handled.has(id)); i++) await new Promise((r) => setTimeout(r, 100));
      expect(ids.filter((id) => !handled.has(id))).toEqual([]);
      // An election takes a few seconds on nats-server 2.9; a pull expiring after 30 s takes over 30.
      expect((Date.now() - killedAt) / 1000).toBeLessThan(20);
    } finally {
      await bus.close();
      await jsm.streams.delete(name).catch(() => false);
      // Back with its store, for a retry of this test.
      if (servers[victim]!.signalCode !== null) servers[victim] = spawn('nats-server', ['-c', join(dir, `n${victim}.conf`)], { stdio: 'ignore' });
    }
  }, 120_000);
});
