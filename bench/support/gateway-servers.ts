/**
 * The servers the gateway benchmarks load (bench/gateway-auth.ts, bench/latency.ts,
 * bench/soak.ts): the whole system in one process (`main.ts all`), the split
 * system (one process per role, gRPC between them) and the baseline
 * (bench/support/bare-auth-server.ts), each started on free ports as compiled
 * JavaScript or through tsx (compiled-build.ts), watched for its peak RSS
 * (results.ts), with its CPU time from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isRole } from '../../services/kit/rpc';
import { TEST_TOKENS, testCallerEnv } from '../../test/support/credentials';
import { freePort } from '../../test/support/system';
import { entryArgs, type Runtime } from './compiled-build';
import { samplePeakRss, watchPeakRss } from './results';
import { cpuMsOf } from './proc-cpu';

const ROOT = resolve(__dirname, '..', '..');

/** How the processes run: compiled by tsc into `dist`, or through tsx. */
export interface Build {
  runtime: Runtime;
  dist?: string;
}

export interface Server {
  child: ChildProcess;
  /** Every process of this side (the split side has five); `child` is the one serving HTTP. */
  processes: ChildProcess[];
  url: string;
  /** Milliseconds since the process exited (performance.now()), once it has. */
  exitedAt?: number;
  /** CPU ms per second the process uses with no load (timers, outbox relays, workers): subtracted from every cell. */
  idleCpuPerSecond?: number;
  stop(): Promise<void>;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  samplePeakRss();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20000);
  await exited;
  clearTimeout(timer);
}

function tracked(label: string, child: ChildProcess, url: string, stderr: string[]): Server {
  watchPeakRss(label, child.pid);
  const server: Server = {
    child,
    processes: [child],
    url,
    async stop() {
      await Promise.all(server.processes.map(stopProcess));
    },
  };
  child.once('exit', (code, signal) => {
    server.exitedAt = performance.now();
    if (code !== 0 && signal !== 'SIGTERM' && code !== null) process.stderr.write(`${url}: exited ${code}\n${stderr.slice(-20).join('\n')}\n`);
  });
  return server;
}

function collect(child: ChildProcess, into: string[]): void {
  child.stderr?.setEncoding('utf8').on('data', (d: string) => into.push(...d.split('\n').filter(Boolean)));
}

/** `main.ts all` on `dbUrl`; resolves once /readyz answers 200. */
export async function startFull(build: Build, env: Record<string, string>, nodeArgs: string[] = []): Promise<Server & { internal: string }> {
  const port = await freePort();
  const internalPort = await freePort();
  const child = spawn(process.execPath, [...nodeArgs, ...entryArgs(build.runtime, ROOT, build.dist, 'main.ts'), 'all'], {
    cwd: ROOT,
    env: { ...process.env, ...testCallerEnv(), ...env, PORT: String(port), INTERNAL_PORT: String(internalPort), HOST: '127.0.0.1' },
    // Log lines are written (LOG_LEVEL) and thrown away by /dev/null, as a collector would take them.
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stderr: string[] = [];
  collect(child, stderr);
  const url = `http://127.0.0.1:${port}`;
  const server = tracked('system', child, url, stderr);
  for (let i = 0; i < 240; i++) {
    if (child.exitCode !== null) throw new Error(`the system exited during start-up:\n${stderr.slice(-20).join('\n')}`);
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) return Object.assign(server, { internal: `http://127.0.0.1:${internalPort}` });
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await server.stop();
  throw new Error('the system did not become ready');
}

/**
 * The Kubernetes shape on one machine: each internal service in its own process
 * (`main.ts identity|calendar|catalog|notifications`) and the gateway in a
 * fifth (`main.ts gateway`, *_URL pointing at them): every internal call
 * crosses h2c. Resolves once the gateway's /readyz answers 200.
 */
export async function startSplit(build: Build, env: Record<string, string>): Promise<Server> {
  const roles = ['identity', 'calendar', 'catalog', 'notifications'] as const;
  const stderr: string[] = [];
  const spawnRole = (role: string, extra: Record<string, string>) => {
    const child = spawn(process.execPath, [...entryArgs(build.runtime, ROOT, build.dist, 'main.ts'), role], {
      cwd: ROOT,
      env: { ...process.env, ...testCallerEnv(), ...(isRole(role) ? { INTERNAL_TOKEN: TEST_TOKENS[role] } : {}), ...env, ...extra, HOST: '127.0.0.1' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    collect(child, stderr);
    if (role !== 'gateway') watchPeakRss(`split ${role}`, child.pid);
    return child;
  };
  const urls: Record<string, string> = {};
  const services: ChildProcess[] = [];
  for (const role of roles) {
    const port = await freePort();
    urls[`${role.toUpperCase()}_URL`] = `http://127.0.0.1:${port}`;
    services.push(spawnRole(role, { INTERNAL_PORT: String(port) }));
  }
  const port = await freePort();
  const gateway = spawnRole('gateway', { ...urls, PORT: String(port), INTERNAL_PORT: '0' });
  const url = `http://127.0.0.1:${port}`;
  const server = tracked('split gateway', gateway, url, stderr);
  server.processes.push(...services);
  for (let i = 0; i < 240; i++) {
    const dead = server.processes.find((p) => p.exitCode !== null);
    if (dead) {
      await server.stop();
      throw new Error(`a process of the split system exited during start-up:\n${stderr.slice(-20).join('\n')}`);
    }
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) return server;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await server.stop();
  throw new Error('the split system did not become ready');
}

/** bench/support/bare-auth-server.ts; resolves with its URL once it listens. */
export async function startBare(build: Build, env: Record<string, string>, nodeArgs: string[] = []): Promise<Server> {
  const child = spawn(process.execPath, [...nodeArgs, ...entryArgs(build.runtime, ROOT, build.dist, 'bench/support/bare-auth-server.ts')], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  collect(child, stderr);
  const url = await new Promise<string>((res, rej) => {
    let buf = '';
    const onData = (d: string) => {
      buf += d;
      const line = buf.split('\n').find((l) => l.includes('listening'));
      if (line) {
        child.stdout?.off('data', onData);
        res((JSON.parse(line) as { listening: string }).listening);
      }
    };
    child.stdout?.setEncoding('utf8').on('data', onData);
    child.once('exit', (code) => rej(new Error(`the bare server exited (${code}):\n${stderr.join('\n')}`)));
  });
  child.stdout?.resume();
  return tracked('baseline', child, url, stderr);
}

/** CPU time (ms) all of a side's processes have used so far. */
export function serverCpuMs(server: Server): number {
  return server.processes.reduce((sum, p) => sum + cpuMsOf(p.pid), 0);
}

/** The CPU a server uses with no load, in ms per second (sampled for `seconds`). */
export async function idleCpu(server: Server, seconds = 3): Promise<number> {
  const c0 = serverCpuMs(server);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  return ((serverCpuMs(server) - c0) * 1000) / (performance.now() - t0);
}

/** CPU `server` used during [t0, t1] beyond its idle background, in ms. */
export function loadCpu(server: Server, cpuMs: number, t0: number, t1: number): number {
  return Math.max(0, cpuMs - ((server.idleCpuPerSecond ?? 0) * (t1 - t0)) / 1000);
}
