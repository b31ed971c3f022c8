/**
 * A private three-node NATS JetStream cluster on loopback for topology tests: one
 * `nats-server` per node with its own client port, cluster route port, monitoring port
 * (`http`) and store directory, all routes listed on every node. A node can be killed
 * (SIGKILL: its store stays, as after a crash) and started again on the same ports and
 * store. Never the machine's shared server; every node is killed when the Jest worker
 * exits, also when a test fails before its afterAll.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstreamManager } from '@nats-io/jetstream';
import { freePort } from '../../support/system';

export interface NatsNode {
  /** server_name, as JetStream names the stream's leader and replicas. */
  readonly name: string;
  readonly port: number;
  /** The monitoring endpoint's port (`/jsz`, `/varz`). */
  readonly monitorPort: number;
  readonly running: boolean;
  /** SIGKILLs the node and waits for its exit. */
  kill(): Promise<void>;
  /** Starts the node again (same ports, same store) and waits until it answers monitoring. */
  start(): Promise<void>;
}

export interface NatsCluster {
  nodes: NatsNode[];
  /** Every node's client URL, comma-separated (the NATS_URL the system is given). */
  url: string;
  node(name: string): NatsNode;
  /** Stops every node and removes the stores; safe to call twice. */
  stop(): Promise<void>;
}

const alive = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of alive) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

const exitOf = (c: ChildProcess): Promise<void> => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise((r) => c.once('exit', () => r())));

/** Starts three clustered nats-servers with JetStream and resolves once JetStream answers (a meta leader is elected). */
export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'psync-topology-nats-'));
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), route: await freePort(), monitor: await freePort() })));
  const routes = ports.map((p) => `nats-route://127.0.0.1:${p.route}`).join(', ');
  const nodes = ports.map((p, i) => {
    const name = `n${i + 1}`;
    const conf = join(dir, `${name}.conf`);
    writeFileSync(
      conf,
      `server_name: ${name}\nlisten: 127.0.0.1:${p.client}\nhttp: 127.0.0.1:${p.monitor}\n` +
        `jetstream { store_dir: ${JSON.stringify(join(dir, name))} }\n` +
        `cluster { name: psync-topology, listen: 127.0.0.1:${p.route}, routes: [${routes}] }\n`,
    );
    let child: ChildProcess | undefined;
    let log = '';
    const node: NatsNode = {
      name,
      port: p.client,
      monitorPort: p.monitor,
      get running() {
        return child !== undefined && child.exitCode === null && child.signalCode === null;
      },
      async kill() {
        if (!child || !node.running) return;
        const exited = exitOf(child);
        child.kill('SIGKILL');
        await exited;
      },
      async start() {
        if (node.running) return;
        log = '';
        child = spawn('nats-server', ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
        alive.add(child);
        const c = child;
        c.once('exit', () => alive.delete(c));
        c.stderr!.on('data', (b: Buffer) => void (log = (log + b.toString()).slice(-4000)));
        for (let t = 0; ; t++) {
          try {
            const res = await fetch(`http://127.0.0.1:${p.monitor}/healthz`);
            if (res.status < 500 || res.status === 503) return;
          } catch {
            // not listening yet
          }
          if (t > 150 || !node.running) throw new Error(`nats-server ${name} did not start:\n${log}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      },
    };
    return node;
  });
  const cluster: NatsCluster = {
    nodes,
    url: nodes.map((n) => `nats://127.0.0.1:${n.port}`).join(','),
    node: (name) => {
      const n = nodes.find((x) => x.name === name);
      if (!n) throw new Error(`no NATS node named ${name}`);
      return n;
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.kill()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(nodes.map((n) => n.start()));
    let nc: NatsConnection | undefined;
    for (let i = 0; ; i++) {
      try {
        nc ??= await connect({ servers: cluster.url.split(','), reconnect: true });
        await (await jetstreamManager(nc)).getAccountInfo();
        break;
      } catch (err) {
        if (i >= 150) throw new Error(`the NATS cluster did not elect a JetStream leader: ${String(err)}`, { cause: err });
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    await nc.close();
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
