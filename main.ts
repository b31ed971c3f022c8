/**
 * Entry point of the image and of `npm start`: the composition root, the one file that
 * knows both the services (services/) and the gateway (gateway/), so neither imports
 * the other's start-up.
 *
 *   node … main.ts [all|gateway|identity|catalog|calendar|notifications|migrate|after-restore [--force]]
 *
 * `all` (the default) runs the gateway and the four internal services in one process
 * — with no environment set, on the embedded PostgreSQL (PGlite under DATA_DIR) and
 * the in-process bus. Kubernetes runs one role per Deployment from the same image,
 * and `migrate` (run all migrations, print one JSON line, exit) as a Helm hook Job;
 * `after-restore` once after a database restore (run-after-restore.ts), with the operator
 * credential as bin/psync finds it.
 */
import { runMigrationsOnly, runProcess } from './services/kit/runtime';
import { runAfterRestore } from './services/kit/runtime';
import type { ServiceModule } from './services/kit/runtime';
import { identityModule } from './services/identity/module';
import { catalogModule } from './services/catalog/module';
import { calendarModule } from './services/calendar/module';
import { notificationsModule } from './services/notifications/module';
import { startGateway } from './gateway/server';
import { resolveOperatorCredential } from './bin/cli/credentials';

const modules: Record<string, ServiceModule> = {
  identity: identityModule,
  catalog: catalogModule,
  calendar: calendarModule,
  notifications: notificationsModule,
};

const role = process.argv[2] ?? 'all';

if (role === 'all') {
  void runProcess({ name: 'psync', services: Object.values(modules), gateway: startGateway, loopbackByDefault: true });
} else if (role === 'gateway') {
  void runProcess({ name: 'gateway', services: [], gateway: startGateway });
} else if (role === 'migrate') {
  void runMigrationsOnly(Object.values(modules));
} else if (role === 'after-restore') {
  const args = process.argv.slice(3);
  const unknown = args.filter((a) => a !== '--force');
  if (unknown.length > 0) {
    process.stderr.write(`after-restore: unknown argument ${unknown[0]} (expected only --force)\n`);
    process.exit(2);
  }
  void runAfterRestore(Object.values(modules), { presentedCredential: () => resolveOperatorCredential().token, force: args.includes('--force') });
} else if (modules[role]) {
  void runProcess({ name: role, services: [modules[role]] });
} else {
  process.stderr.write(`unknown role "${role}": expected all, gateway, migrate, after-restore, ${Object.keys(modules).join(', ')}\n`);
  process.exit(2);
}
