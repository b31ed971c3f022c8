/**
 * A process: the configuration, the internal credentials it accepts, the service modules
 * it hosts (run-process.ts), start-up failures, shutdown and the after-restore run.
 *
 * This file is the module's whole public surface: code outside services/kit/runtime/ imports
 * from here, never from a file inside (eslint.config.mjs, docs/architecture.md "Modules").
 */
export { type Config, DEFAULT_WEBHOOK_RETRY_SCHEDULE, loadConfig, settings } from './config';
export { internalTls } from './internal-credentials';
export { runAfterRestore } from './run-after-restore';
export { type GatewayDeps, migrateAll, runMigrationsOnly, runProcess } from './run-process';
export { type ServiceContext, type ServiceModule, type ServiceUrls } from './service-module';
export { urlWithoutSecrets } from './startup-failure';
