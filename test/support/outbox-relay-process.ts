/**
 * An OutboxRelay in its own process, for the crash test (test/kit/outbox-crash.test.ts):
 * the test SIGKILLs it mid-way and starts it again.
 *
 * Environment: OUTBOX_DATABASE_URL, NATS_URL, BUS_PREFIX, OUTBOX_SCHEMA,
 * PUBLISH_DELAY_MS (artificial delay per publish, to make batches slow enough to kill).
 * stdout: `ready` once relaying, then `attempt <event id>` before every publish.
 * SIGTERM stops cleanly.
 */
import pino from 'pino';
import type { EventBus } from '../../services/kit/events';
import { connectNatsBus } from '../../services/kit/events';
import { createSql } from '../../services/kit/db';
import { OutboxRelay } from '../../services/kit/events';

function env(name: string): string {
  const v = process.env[name];
  if (!v) {
    process.stderr.write(`outbox-relay-process: ${name} is required\n`);
    process.exit(2);
  }
  return v;
}

async function main(): Promise<void> {
  const log = pino({ level: process.env.LOG_LEVEL ?? 'warn' }, pino.destination(2));
  const sql = createSql(env('OUTBOX_DATABASE_URL'), { max: 2, applicationName: 'outbox-relay-process' });
  const nats = await connectNatsBus({ url: env('NATS_URL'), prefix: env('BUS_PREFIX'), log });
  const delayMs = Number(process.env.PUBLISH_DELAY_MS ?? '0');

  const slow: EventBus = {
    kind: nats.kind,
    subscribe: (o) => nats.subscribe(o),
    ping: () => nats.ping(),
    close: () => nats.close(),
    forgetConsumer: (d) => nats.forgetConsumer(d),
    async publish(event) {
      process.stdout.write(`attempt ${event.id}\n`);
      // timing under test: a slow bus, as the test configured it.
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      await nats.publish(event);
    },
  };

  const relay = new OutboxRelay({ sql, schema: env('OUTBOX_SCHEMA'), bus: slow, log, batchSize: 5, pollMs: 50 });
  relay.start();
  process.stdout.write('ready\n');

  process.once('SIGTERM', () => {
    void (async () => {
      await relay.stop();
      await nats.close();
      await sql.end({ timeout: 5 });
      process.exit(0);
    })();
  });
}

main().catch((err) => {
  process.stderr.write(`outbox-relay-process: ${err?.stack ?? err}\n`);
  process.exit(1);
});
