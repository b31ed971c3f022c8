/**
 * The background loop every worker runs on (worker.ts), the timed jobs (periodic.ts) and
 * the lease queue the claiming workers take their rows from (lease-queue.ts).
 *
 * This file is the module's whole public surface: code outside services/kit/work/ imports
 * from here, never from a file inside (eslint.config.mjs, docs/architecture.md "Modules").
 */
export { BatchPruner, PeriodicJob } from './periodic';
export { backoffMs, type RoundResult, WakeSignal, Worker } from './worker';
export { type ClaimSpec, LeaseQueue, type LeaseQueueSpec, type LockRows, lockRows } from './lease-queue';
