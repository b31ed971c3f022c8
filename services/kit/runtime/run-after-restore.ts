/**
 * `main.ts after-restore [--force]`: what must happen once after the database was
 * restored from a backup and before the system starts on it (docs/operations.md "Backup
 * and restore"), as one command instead of hand-typed SQL and NATS calls. Each hosted
 * service that needs a step has an `afterRestore` (service-module.ts): the calendar
 * moves its event log past the gap the restore left, notifications deletes its durable
 * consumer so it reads the stream again from the oldest event. Prints one JSON line
 * (`{"restored": true, "services": {<name>: <what it did>}}`) and exits 0; logs go to
 * stderr. Running it twice does no harm.
 *
 * Before the database opens it checks (after-restore-guard.ts) the operator credential
 * (PSYNC_TOKEN, as bin/psync sends it) and that no process of the release is serving;
 * it refuses with one line, exit 1. `--force` skips the second check with a warning,
 * except on the embedded database, which two processes must never open at once.
 */
import { checkOperatorCredential, servingProcesses } from './after-restore-guard';
import { logEvent } from '../base';
import { usesPostgresServer } from '../db';
import { openBus, runOneShot } from './run-process';
import type { ServiceModule } from './service-module';
import { OneShotRefusal } from './startup-failure';

export interface AfterRestoreOptions {
  /** The operator credential presented (bin/psync's: PSYNC_TOKEN, else the token file); throws when there is none. */
  presentedCredential: () => string;
  /** `--force`: run although processes of the release are serving. */
  force: boolean;
}

export function runAfterRestore(services: ServiceModule[], opts: AfterRestoreOptions): Promise<void> {
  return runOneShot(
    'after-restore',
    services,
    'after-restore failed',
    async ({ config, log, db }) => {
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
    },
    async ({ config, log }) => {
      checkOperatorCredential(config, opts.presentedCredential);
      const bus = await openBus(config, log, 'after-restore');
      let serving: string[];
      try {
        serving = await servingProcesses(config, services, bus);
      } finally {
        await bus.close();
      }
      if (serving.length === 0) return;
      const what = serving.join('; ');
      if (!opts.force) throw new OneShotRefusal(`the system is serving (${what}); stop every process of the release first, or pass --force`);
      if (!usesPostgresServer(config))
        throw new OneShotRefusal(`the system is serving (${what}) on the embedded database, which two processes must never open at once; stop it first (--force does not apply)`);
      log.warn(
        { event: logEvent('after_restore.forced'), serving },
        'after-restore --force: PROCEEDING WHILE THE SYSTEM IS SERVING; a running notifications recreates its consumer at its last position (undoing the rewind) and live writers race the event-seq move; restart every process afterwards',
      );
    },
  );
}
