/**
 * `main.ts after-restore`: what must happen once after the database was restored from
 * a backup and before the system starts on it (docs/operations.md "Backup and
 * restore"), as one command instead of hand-typed SQL and NATS calls. Each hosted
 * service that needs a step has an `afterRestore` (service-module.ts): the calendar
 * moves its event log past the gap the restore left, notifications deletes its durable
 * consumer so it reads the stream again from the oldest event. Prints one JSON line
 * (`{"restored": true, "services": {<name>: <what it did>}}`) and exits 0; logs go to
 * stderr. Running it twice does no harm.
 */
import { openBus, runOneShot } from './run-process';
import type { ServiceModule } from './service-module';

export function runAfterRestore(services: ServiceModule[]): Promise<void> {
  return runOneShot('after-restore', services, 'after-restore failed', async ({ config, log, db }) => {
    const bus = await openBus(config, log, 'after-restore');
    const done: Record<string, Record<string, unknown>> = {};
    try {
      for (const m of services) {
        if (!m.afterRestore) continue;
        done[m.name] = await m.afterRestore({ sql: db.sqlFor(m.name), bus, log: log.child({ component: m.name }) });
        log.info({ service: m.name, ...done[m.name] }, 'after-restore: done');
      }
    } finally {
      await bus.close();
    }
    return { restored: true, services: done };
  });
}
