/**
 * An event bus for one test file.
 *
 * - NATS_URL set (CI): the real NATS JetStream bus on a unique prefix `t<hex>`, so its
 *   stream `T<HEX>` is private to the test file; stop() deletes it.
 * - Otherwise: the in-process memory bus.
 */
import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import pino from 'pino';
import type { BusEvent, EventBus } from '../../services/kit/events';
import { createMemoryBus } from '../../services/kit/events';
import { connectNatsBus } from '../../services/kit/events';
import type { Logger } from '../../services/kit/base';

export interface TestBus {
  bus: EventBus;
  /** Subject prefix (also the lower-case stream name); meaningful only when `real`. */
  prefix: string;
  /** True on real NATS. */
  real: boolean;
  stop(): Promise<void>;
}

/**
 * `bus` with its `publish` replaced by a test's own (a fault, a delay or a record around
 * the real one, which it calls as `bus.publish`). `kind` is a getter, which a spread
 * does not copy.
 */
export function withPublish(bus: EventBus, publish: (e: BusEvent) => Promise<void>): EventBus {
  return { ...bus, kind: bus.kind, publish };
}

/** A logger that prints errors only (set LOG_LEVEL to see more). */
export function testLogger(): Logger {
  return pino({ level: process.env.LOG_LEVEL ?? 'error' });
}

export async function startTestBus(log: Logger = testLogger()): Promise<TestBus> {
  const prefix = `t${randomBytes(5).toString('hex')}`;
  const url = process.env.NATS_URL;
  if (!url) {
    const bus = createMemoryBus({ log });
    return { bus, prefix, real: false, stop: () => bus.close() };
  }
  const bus = await connectNatsBus({ url, prefix, log });
  return {
    bus,
    prefix,
    real: true,
    async stop() {
      await bus.close();
      const nc = await connect({ servers: url.split(',') });
      try {
        const jsm = await jetstreamManager(nc);
        await jsm.streams.delete(prefix.toUpperCase()).catch(() => false);
      } finally {
        await nc.close();
      }
    },
  };
}
