/**
 * The process runner: hosts a set of internal services (and optionally the public
 * gateway) in one Node.js process.
 *
 * Start-up order, chosen so probes tell the truth at every moment:
 *   config → logger → DATA_DIR made private (private-dir.ts) → telemetry (tracing, /metrics on METRICS_PORT) → database + bus (logged: which backends) → internal server
 *   (health NOT_SERVING) → migrations (advisory-locked) → outbox relays and workers →
 *   health SERVING → gateway → the `listening` line.
 * SIGTERM reverses it: health NOT_SERVING, gateway and internal server drain,
 * workers stop, bus and database close, telemetry flushes last, exit 0.
 */
import type { ConnectRouter } from '@connectrpc/connect';
import { loadConfig, Config, settings } from './config';
import { logEvent, exitOnConfigError, ConfigError } from '../base';
import pino from 'pino';
import { createLogger, Logger } from '../base';
import { openDatabase, usesPostgresServer, Database } from '../db';
import type { EventBus } from '../events';
import { connectNatsBus } from '../events';
import { takeDrainedMarker, writeDrainedMarker } from '../events';
import { createMemoryBus } from '../events';
import { HealthState } from '../rpc';
import { serverTracingInterceptor, startInternalServer } from '../rpc';
import { InProcessServices } from '../rpc';
import { InternalClients } from '../rpc';
import { KIT_MIGRATIONS } from '../db';
import { runMigrations } from '../db';
import { provisionServiceRoles } from '../db';
import { OutboxHousekeeping } from '../events';
import { OutboxRelay } from '../events';
import { Shutdown } from './shutdown';
import { securePrivateDataDir, systemClock } from '../base';
import { startTelemetry } from '../telemetry';
import type { ServiceContext, ServiceModule, ServiceUrls } from './service-module';
import { AdminService } from '../../../gen/psync/admin/v1/admin_pb';
import { IdentityService } from '../../../gen/psync/identity/v1/identity_pb';
import { authInterceptor, ClientVerifier, CredentialRegistry } from '../rpc';
import { acceptedCallers, internalTls } from './internal-credentials';
import { requestGuardInterceptor } from '../rpc';
import { validationInterceptor } from '../rpc';
import { errorInterceptor } from '../rpc';
import { bindingPort, checkDatabaseReachable, exitOnStartupError, OneShotRefusal, reasonOf, StartupError, urlWithoutSecrets } from './startup-failure';

export interface RunOptions {
  /** Services hosted by this process. */
  services: ServiceModule[];
  /** Starts the public gateway too; receives the internal URLs to call. */
  gateway?: (deps: GatewayDeps) => Promise<{ url: string; close(graceMs: number): Promise<void> }>;
  /** Process name in logs. */
  name: string;
  /**
   * Bind the internal port and the metrics port to 127.0.0.1 unless INTERNAL_HOST /
   * METRICS_HOST say otherwise (role `all`: the all-in-one is a one-machine install;
   * its gateway calls in process, and its metrics are scraped on the machine). Only
   * the gateway's PORT follows HOST.
   */
  loopbackByDefault?: boolean;
}

/** What the gateway receives from the runner. */
export interface GatewayDeps {
  config: Config;
  log: Logger;
  clients: InternalClients;
  urls: ServiceUrls;
}

/**
 * Opens the bus the configuration points at and logs which one. `processName` (psync,
 * identity, catalog, calendar, notifications) names the connection's NATS inboxes.
 */
export async function openBus(config: Config, log: Logger, processName?: string): Promise<EventBus> {
  if (config.natsUrl) {
    try {
      return await connectNatsBus({
        url: config.natsUrl,
        credsFile: config.natsCreds,
        inboxOwner: processName,
        prefix: config.busPrefix,
        stream: { replicas: config.natsStreamReplicas, maxAgeMs: config.natsStreamMaxAgeMs, maxBytes: config.natsStreamMaxBytes },
        log,
      });
    } catch (err) {
      throw new StartupError(`cannot use the NATS server at NATS_URL (${urlWithoutSecrets(config.natsUrl)}): ${reasonOf(err)}`, { cause: err });
    }
  }
  log.info({ event: logEvent('bus.opened'), backend: 'memory' }, 'bus: in-process (embedded default)');
  return createMemoryBus({ log });
}

/**
 * Runs every hosted service's migrations (kit tables first); used at start-up and by
 * Admin/Migrate. With DATABASE_URL and per-service URLs both set, the administrator
 * first creates or checks those services' roles (database-roles.ts); each service's
 * migrations run over its own URL, so its role owns what they create.
 */
export async function migrateAll(db: Database, services: ServiceModule[], log: Logger): Promise<string[]> {
  const roles = db.roles;
  const own = roles ? services.flatMap((m) => (roles.serviceUrls.has(m.name) ? [{ service: m.name, url: roles.serviceUrls.get(m.name)! }] : [])) : [];
  if (roles && own.length > 0) await provisionServiceRoles(roles.admin, own, log);
  for (const m of services) {
    try {
      await runMigrations(db.sqlFor(m.name), { schema: m.name, sources: [KIT_MIGRATIONS, m.migrations], log });
    } catch (err) {
      // 42501: a service role alone cannot create its schema or the extensions; the administrator's run does.
      const e = err as { code?: string; cause?: { code?: string } };
      if (!roles && db.kind === 'postgresql' && (e.code ?? e.cause?.code) === '42501') {
        throw new Error(
          `${m.name}: insufficient privilege to migrate (${(err as Error).message}); run \`main.ts migrate\` once with DATABASE_URL (an administrator) and the per-service URLs set`,
          { cause: err },
        );
      }
      throw err;
    }
  }
  return services.map((m) => m.name);
}

/** Base URLs of the four services: configured ones, else this process's internal server. */
export function serviceUrls(config: Config, localUrl: string | undefined): ServiceUrls {
  const pick = (configured: string, name: string) => {
    const u = configured || localUrl;
    if (!u) throw new Error(`${name.toUpperCase()}_URL must be set when the ${name} service runs in another process`);
    return u;
  };
  return {
    identity: pick(config.identityUrl, 'identity'),
    catalog: pick(config.catalogUrl, 'catalog'),
    calendar: pick(config.calendarUrl, 'calendar'),
    notifications: pick(config.notificationsUrl, 'notifications'),
  };
}

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    exitOnConfigError(err);
  }
}

/**
 * Starts the process; resolves once everything listens. A start-up failure exits 1
 * with one line on stderr: naming the variable to change when the cause is known (a
 * port in use, the database or NATS unreachable: startup-failure.ts), else the error's
 * message, its stack going to the log.
 */
export async function runProcess(opts: RunOptions): Promise<void> {
  const config = configOrExit();
  const log = createLogger({ level: config.logLevel, name: opts.name, format: config.logFormat });
  try {
    await start(opts, config, log);
  } catch (err) {
    if (err instanceof ConfigError) exitOnConfigError(err);
    if (err instanceof StartupError) exitOnStartupError(err);
    log.fatal({ err }, 'start-up failed');
    process.stderr.write(`start-up failed: ${reasonOf(err)} (the log has the details)\n`);
    process.exit(1);
  }
}

/**
 * A one-shot role (`migrate`, `after-restore`): its configuration, logs on stderr (stdout
 * carries only its one JSON line), a private DATA_DIR, `precheck` (before the database
 * opens; a OneShotRefusal it throws is printed as one line), the database, then `work`;
 * prints what `work` answers as one JSON line and exits 0, or logs `failure` and exits 1
 * (a start-up failure says what to fix, as the long-running roles do).
 */
export async function runOneShot(
  name: string,
  services: ServiceModule[],
  failure: string,
  work: (c: { config: Config; log: Logger; db: Database }) => Promise<Record<string, unknown>>,
  precheck?: (c: { config: Config; log: Logger }) => Promise<void>,
): Promise<void> {
  const config = configOrExit();
  const log = createLogger({ level: config.logLevel, name, format: config.logFormat }, pino.destination(2));
  try {
    secureDataDir(config, log);
    await precheck?.({ config, log });
    const db = await openDatabaseOrExplain(
      config,
      log,
      services.map((m) => m.name),
    );
    let result: Record<string, unknown>;
    try {
      result = await work({ config, log, db });
    } finally {
      await db.close();
    }
    process.stdout.write(`${JSON.stringify(result)}\n`);
    process.exit(0);
  } catch (err) {
    if (err instanceof StartupError) exitOnStartupError(err);
    if (err instanceof OneShotRefusal) {
      process.stderr.write(`${name} refused: ${err.message}\n`);
      process.exit(1);
    }
    log.fatal({ err }, failure);
    process.exit(1);
  }
}

/** `main.ts migrate` (the Helm hook Job): every hosted schema's pending migrations, then `{"migrated":true,"schemas":[…]}`. */
export function runMigrationsOnly(services: ServiceModule[]): Promise<void> {
  return runOneShot('migrate', services, 'migration failed', async ({ db, log }) => ({ migrated: true, schemas: await migrateAll(db, services, log) }));
}

/**
 * Opens the database and checks that it answers: an embedded database that cannot be
 * opened names DATA_DIR, an unreachable server the variable holding its URL.
 */
async function openDatabaseOrExplain(config: Config, log: Logger, hosted: string[]): Promise<Database> {
  let db: Database;
  try {
    db = await openDatabase(config, log, hosted);
  } catch (err) {
    if (usesPostgresServer(config)) throw err;
    throw new StartupError(`cannot open the embedded database under DATA_DIR (${config.dataDir}): ${reasonOf(err)}`, { cause: err });
  }
  try {
    await checkDatabaseReachable(db, config, hosted);
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
  return db;
}

/**
 * DATA_DIR and everything in it private (private-dir.ts), before anything reads or
 * writes there; a shared directory given as DATA_DIR stops start-up.
 */
function secureDataDir(config: Config, log: Logger): void {
  try {
    securePrivateDataDir(config.dataDir, log);
  } catch (err) {
    throw new StartupError(`DATA_DIR (${config.dataDir}) cannot be made private: ${reasonOf(err)}`, { cause: err });
  }
}

async function start(opts: RunOptions, config: Config, log: Logger): Promise<void> {
  secureDataDir(config, log);
  const shutdown = new Shutdown(log, config.shutdownGraceMs);
  shutdown.installSignalHandlers();
  // First up, registered first so it shuts down last: spans of the drain still export.
  // An explicitly set METRICS_PORT must be served; the default one may be taken by
  // another process on the machine (the process then runs without /metrics).
  const metricsPortRequired = Boolean(process.env[settings.metricsPort.env]);
  const telemetry = await bindingPort('METRICS_PORT', config.metricsPort, () =>
    startTelemetry({
      name: opts.name,
      host: config.metricsHost ?? (opts.loopbackByDefault ? '127.0.0.1' : config.host),
      metricsPort: config.metricsPort,
      metricsPortRequired,
      log,
    }),
  );
  shutdown.add('telemetry', () => telemetry.shutdown());
  if (config.egressAllowCidrs.length > 0) {
    log.warn({ cidrs: config.egressAllowCidrs }, 'EGRESS_ALLOW_CIDRS is set: outbound requests may reach these non-public ranges (test/development only)');
  }

  const tls = internalTls(config);
  const clients = new InternalClients([], 10000, { token: config.internalToken, tls: tls.client });
  shutdown.add('internal clients', () => clients.close());

  let db: Database | undefined;
  const health = new HealthState();
  let localUrl: string | undefined;

  if (opts.services.length > 0) {
    db = await openDatabaseOrExplain(
      config,
      log,
      opts.services.map((m) => m.name),
    );
    const database = db;
    shutdown.add('database', () => database.close());
    const bus = await openBus(config, log, opts.name);
    shutdown.add('bus', async () => {
      await bus.close();
      // Read after close: consumers have stopped, relays too (their hooks ran first).
      if (bus.drained?.()) writeDrainedMarker(config.dataDir, log);
    });
    health.addCheck(() => database.ping());
    health.addCheck(() => bus.ping());
    for (const m of opts.services) for (const s of m.protoServices) health.declare(s);

    const contexts: { module: ServiceModule; housekeeping: OutboxHousekeeping; ctx: ServiceContext }[] = [];
    // URLs are known only after the server binds (INTERNAL_PORT may be 0); contexts read them lazily.
    const urls = {} as ServiceUrls;
    for (const m of opts.services) {
      const sql = database.sqlFor(m.name);
      const outboxLog = log.child({ component: `${m.name}-outbox` });
      const outbox = new OutboxRelay({ sql, schema: m.name, bus, log: outboxLog, encode: m.outboxEncoder });
      contexts.push({
        module: m,
        housekeeping: new OutboxHousekeeping({ sql, schema: m.name, log: outboxLog }),
        ctx: {
          config,
          log: log.child({ component: m.name }),
          sql,
          asyncCommitSql: database.asyncCommitSqlFor(m.name),
          schema: m.name,
          embedded: database.kind === 'embedded',
          bus,
          outbox,
          clients: clients.as(m.name),
          urls,
          shutdown,
          clock: systemClock,
        },
      });
    }
    // Every registration is also recorded, so co-located callers (the gateway, a
    // service calling another) skip the network: in-process-transport.ts.
    const inProcess = new InProcessServices();
    // The process's own role when it asks identity about a presented marketplace
    // credential: its (first) hosted service.
    const selfRole = opts.services[0]!.name;
    const auth = authInterceptor({
      registry: new CredentialRegistry(acceptedCallers(config, log)),
      clients: new ClientVerifier(async (sha256) => {
        const res = await clients.as(selfRole).client(IdentityService, urls.identity).authenticateClient({ tokenSha256: sha256 });
        return { authenticated: res.authenticated, clientId: res.clientId, role: res.role };
      }, config.internalAuthCacheSeconds * 1000),
      log: log.child({ component: 'internal-auth' }),
    });
    // Inside the SERVER span, outside authentication: its identity look-ups are mapped too (errors.ts).
    const errors = errorInterceptor(log.child({ component: 'errors' }));
    // After authentication (an unauthenticated caller learns nothing about its payload): storable values, then the proto's rules.
    const interceptors = [errors, auth, requestGuardInterceptor, validationInterceptor];
    // What the internal server applies (it adds the tracing one first), for in-process calls too.
    const serverInterceptors = [serverTracingInterceptor, ...interceptors];
    const server = await bindingPort('INTERNAL_PORT', config.internalPort, () =>
      startInternalServer({
        host: config.internalHost ?? (opts.loopbackByDefault ? '127.0.0.1' : config.host),
        port: config.internalPort,
        log,
        health,
        tls: tls.server,
        interceptors,
        routes(networkRouter: ConnectRouter) {
          const router = inProcess.recording(networkRouter);
          router.service(AdminService, {
            async migrate() {
              const schemas = await migrateAll(database, opts.services, log);
              return { migrated: true, schemas };
            },
          });
          for (const { module, ctx } of contexts) module.routes(router, ctx);
        },
      }),
    );
    localUrl = server.url;
    clients.useInProcess(server.url, inProcess, serverInterceptors);
    Object.assign(urls, serviceUrls(config, localUrl));
    shutdown.add('internal server', () => server.close(config.shutdownGraceMs));
    if (config.healthPort) {
      // Kubelet gRPC probes speak clear text only: health (no data, no credential) gets its own port.
      const healthPort = config.healthPort;
      const healthServer = await bindingPort('HEALTH_PORT', healthPort, () =>
        startInternalServer({
          host: config.internalHost ?? (opts.loopbackByDefault ? '127.0.0.1' : config.host),
          port: healthPort,
          log,
          health,
          routes: () => undefined,
          purpose: 'health',
        }),
      );
      shutdown.add('health server', () => healthServer.close(config.shutdownGraceMs));
    }

    await migrateAll(database, opts.services, log);
    if (bus.drained && !takeDrainedMarker(config.dataDir)) {
      // The in-process bus lost whatever the last run left unhandled: bus-continuity.ts.
      for (const { module, housekeeping } of contexts) {
        const requeued = await housekeeping.requeuePublished();
        if (requeued > 0)
          log.warn(
            { event: logEvent('bus.memory.republished'), schema: module.name, events: requeued },
            'in-process bus: the previous run did not end drained; retained events are published again (consumers skip those already handled)',
          );
      }
    }
    for (const { module, housekeeping, ctx } of contexts) {
      ctx.outbox.start();
      shutdown.add(`${module.name} outbox relay`, () => ctx.outbox.stop());
      housekeeping.start();
      shutdown.add(`${module.name} outbox housekeeping`, () => housekeeping.stop());
      await module.start?.(ctx);
      for (const s of module.protoServices) health.setReady(s);
    }
    // Registered last so it runs first: probes fail before anything stops.
    shutdown.add('health', () => health.startShutdown());
  }

  const remote = Object.values(serviceUrls(config, localUrl)).filter((u) => u !== localUrl);
  if (remote.length > 0 && !config.internalToken) {
    log.warn({ urls: [...new Set(remote)] }, 'INTERNAL_TOKEN is unset: calls to services in other processes carry no credential and will be refused');
  }

  if (opts.gateway) {
    const urls = serviceUrls(config, localUrl);
    const startGateway = opts.gateway;
    const gw = await bindingPort('PORT', config.port, () => startGateway({ config, log: log.child({ component: 'gateway' }), clients: clients.as('gateway'), urls }));
    shutdown.add('gateway', () => gw.close(config.shutdownGraceMs));
    log.info({ event: logEvent('process.listening'), url: gw.url }, `listening on ${gw.url}`);
  } else {
    log.info({ event: logEvent('process.listening'), url: localUrl, internal_only: true }, `listening on ${localUrl} (internal services only)`);
  }
}
