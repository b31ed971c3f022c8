/**
 * What an internal service contributes to a process. Each service directory exports
 * one ServiceModule (services/<name>/module.ts); the process runner (run-process.ts)
 * hosts any subset of them: all four in the all-in-one process, one per Kubernetes
 * Deployment.
 */
import type { ConnectRouter } from '@connectrpc/connect';
import type { Config } from './config';
import type { Sql } from '../db';
import type { Clock, ServiceName } from '../base';
import type { EventBus } from '../events';
import type { Logger } from '../base';
import type { InternalClients } from '../rpc';
import type { MigrationSource } from '../db';
import type { OutboxEncoder, OutboxRelay } from '../events';
import type { Shutdown } from './shutdown';

/** Base URLs of the internal services, as this process reaches them. */
export type ServiceUrls = Record<ServiceName, string>;

/** Everything a service needs at run time, built once per service by the runner. */
export interface ServiceContext {
  config: Config;
  log: Logger;
  /** postgres.js instance of this service (the shared one in embedded mode). */
  sql: Sql;
  /**
   * The same database with `synchronous_commit = off` (database.ts
   * `asyncCommitSqlFor`): only for writes whose loss in a crash is harmless.
   */
  asyncCommitSql: Sql;
  /** The service's PostgreSQL schema (= its name). */
  schema: ServiceName;
  /**
   * True on the embedded database (PGlite: neither DATABASE_URL nor any
   * `<SERVICE>_DATABASE_URL` set, database.ts): the one-machine default,
   * where a service may generate a missing secret key under DATA_DIR/keys
   * (local-keys.ts). False on a real PostgreSQL, where keys must be configured.
   */
  embedded: boolean;
  bus: EventBus;
  /** Relays this service's outbox to the bus; `nudge()` after committing an event. */
  outbox: OutboxRelay;
  clients: InternalClients;
  urls: ServiceUrls;
  shutdown: Shutdown;
  /**
   * Time and timers of the service's own rules (token lifetimes, periodic jobs, sweeps,
   * windows kept in memory): the system clock in a running process, a fake one in a
   * test that drives time (services/kit/base/clock.ts).
   */
  clock: Clock;
}

export interface ServiceModule {
  /** Short name; also the PostgreSQL schema. */
  name: ServiceName;
  /** Fully-qualified protobuf service names it serves (health-check names). */
  protoServices: string[];
  /** Its forward-only migrations (the kit's outbox tables are added by the runner). */
  migrations: MigrationSource;
  /** Turns its outbox rows into bus messages when it writes plain rows (outbox-relay.ts `OutboxEncoder`). */
  outboxEncoder?: OutboxEncoder;
  /**
   * What the service does once after its database was restored from a backup, before
   * the system starts on it (`main.ts after-restore`, run-after-restore.ts); answers
   * what it did, for the command's JSON line.
   */
  afterRestore?(ctx: RestoreContext): Promise<Record<string, unknown>>;
  /** The durable bus consumers its processes pull from: after-restore refuses while one is pulled (after-restore-guard.ts). */
  busConsumers?: readonly string[];
  /** Registers the RPC implementations. */
  routes(router: ConnectRouter, ctx: ServiceContext): void;
  /** Starts background workers (consumers, pipelines); stop them via ctx.shutdown. */
  start?(ctx: ServiceContext): Promise<void>;
}

/** What a service's afterRestore gets: its database, the bus and a logger. */
export interface RestoreContext {
  sql: Sql;
  bus: EventBus;
  log: Logger;
}
