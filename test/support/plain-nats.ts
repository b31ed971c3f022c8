/**
 * A private nats-server with JetStream and no authorization at all, as the chart's
 * default anonymous `nats.url` reaches one: anyone on the network may publish. Started
 * on a free loopback port with its own store directory; never the machine's shared
 * server. (private-nats.ts starts one with per-role users instead.)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { freePort } from './system';

export interface PlainNats {
  /** nats://127.0.0.1:port */
  url: string;
  stop(): Promise<void>;
}

/** A nats-server started here: its port, its URL (no credentials) and how to stop it (its directory removed too). */
export interface SpawnedNats {
  port: number;
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts `nats-server -a 127.0.0.1 -p <free> -js -sd <dir>/store` plus `extraArgs` (a
 * config file, say) and resolves once a client signed in as `signIn` connects; the
 * directory `dir` belongs to it and is removed by stop().
 */
export async function spawnNatsServer(dir: string, extraArgs: string[] = [], signIn: { user?: string; pass?: string } = {}): Promise<SpawnedNats> {
  const port = await freePort();
  const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', join(dir, 'store'), ...extraArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => void (stderr += b.toString()));
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const url = `nats://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await (await connect({ servers: url, reconnect: false, ...signIn })).close();
      return { port, url, stop };
    } catch (err) {
      if (Date.now() > deadline || child.exitCode !== null) {
        await stop();
        throw new Error(`nats-server did not start: ${String(err)}\n${stderr}`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** A private nats-server without authorization. */
export async function startPlainNats(): Promise<PlainNats> {
  const { url, stop } = await spawnNatsServer(mkdtempSync(join(tmpdir(), 'psync-plain-nats-')));
  return { url, stop };
}
