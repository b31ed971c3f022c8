/**
 * An anonymous NATS connection off loopback is said at start (docs/operations.md "NATS
 * authentication"): one warning and psync_bus_anonymous 1. The decision itself (loopback
 * or not, credentials or none) is unit-tested in services/kit/events/nats-credentials.test.ts;
 * here a private nats-server without authorization listens on this machine's first
 * non-loopback address (skipped when there is none), and one on loopback shows 0.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { connect } from '@nats-io/transport-node';
import pino from 'pino';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { EventBus } from '../../services/kit/events';
import { connectNatsBus } from '../../services/kit/events';
import { bindMeterProvider } from '../../services/kit/telemetry';
import { eventually } from '../notifications/support/harness';
import { hasNatsServer } from '../support/private-nats';
import { freePort, uniqueBusPrefix } from '../support/system';
import { firstLogEvent } from '../support/log-events';

jest.setTimeout(60_000);

const address = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
const maybe = hasNatsServer() && address ? describe : describe.skip;

const dir = mkdtempSync(join(tmpdir(), 'psync-nats-anon-'));
const servers: ChildProcess[] = [];
const buses: EventBus[] = [];
const exporter = new PrometheusExporter({ preventServerStart: true });
let unbind: () => void;

/** A nats-server without authorization on `host`; resolves with its URL once it answers. */
async function plainNats(host: string): Promise<string> {
  const port = await freePort();
  servers.push(spawn('nats-server', ['-js', '-a', host, '-p', String(port), '-sd', join(dir, `${host}-${port}`)], { stdio: 'ignore' }));
  const url = `nats://${host}:${port}`;
  await eventually(
    async () => {
      await (await connect({ servers: url, reconnect: false })).close();
      return true;
    },
    10_000,
    `nats-server on ${url}`,
  );
  return url;
}

async function anonymousGauge(): Promise<number | undefined> {
  const { resourceMetrics } = await exporter.collect();
  const m = /^psync_bus_anonymous(?:\{[^}]*\})? (\S+)/m.exec(new PrometheusSerializer().serialize(resourceMetrics));
  return m ? Number(m[1]) : undefined;
}

function capture(lines: Record<string, unknown>[]) {
  return pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    }),
  );
}

maybe('anonymous NATS off loopback', () => {
  beforeAll(() => {
    unbind = bindMeterProvider(new MeterProvider({ readers: [exporter] }));
  });

  afterAll(async () => {
    await Promise.allSettled(buses.map((b) => b.close()));
    unbind?.();
    for (const s of servers) s.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });

  test(`on ${address ?? 'a non-loopback address'}: a warning naming the server and psync_bus_anonymous 1; on loopback: no warning, 0`, async () => {
    const remote = await plainNats(address!);
    const lines: Record<string, unknown>[] = [];
    buses.push(await connectNatsBus({ url: remote, prefix: uniqueBusPrefix(), log: capture(lines) }));
    const warning = firstLogEvent(lines, 'bus.nats.anonymous');
    expect(warning).toMatchObject({ level: 40, servers: [remote] });
    expect(await anonymousGauge()).toBe(1);

    const local = await plainNats('127.0.0.1');
    const quiet: Record<string, unknown>[] = [];
    buses.push(await connectNatsBus({ url: local, prefix: uniqueBusPrefix(), log: capture(quiet) }));
    expect(quiet.filter((l) => l.level === 40)).toEqual([]);
    expect(await anonymousGauge()).toBe(0);
  });
});
