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
import { connect } from 'nats';
import { freePort } from './system';

export interface PlainNats {
  /** nats://127.0.0.1:port */
  url: string;
  stop(): Promise<void>;
}

export async function startPlainNats(): Promise<PlainNats> {
  const dir = mkdtempSync(join(tmpdir(), 'psync-plain-nats-'));
  const port = await freePort();
  const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', join(dir, 'store')], { stdio: ['ignore', 'ignore', 'pipe'] });
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
      await (await connect({ servers: url, reconnect: false })).close();
      return { url, stop };
    } catch (err) {
      if (Date.now() > deadline || child.exitCode !== null) {
        await stop();
        throw new Error(`nats-server did not start: ${String(err)}\n${stderr}`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
