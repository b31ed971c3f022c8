/**
 * The system as Kubernetes runs it: identity, catalog, calendar and notifications each
 * in its own process on its own INTERNAL_PORT, each pointed at the others by URL and
 * sending its own credential (INTERNAL_TOKEN, set by startSystem from the role), and
 * the gateway alone in front. Needs DATABASE_URL and NATS_URL (a database and a bus
 * shared between processes); a scratch database and a unique bus prefix are created
 * here and removed by `stop()`.
 */
import { SERVICE_ROLES } from '../../services/kit/rpc';
import { createScratchDatabase, deleteBusStream, freePort, randomKey, startSystem, uniqueBusPrefix, type RunningSystem } from './system';

export type ServiceRole = (typeof SERVICE_ROLES)[number];

export interface SplitSystem {
  services: Record<ServiceRole, RunningSystem>;
  gateway: RunningSystem;
  /** Internal base URL of each service's process. */
  urls: Record<ServiceRole, string>;
  /** The environment every process shares (database, bus, keys, service URLs). */
  shared: Record<string, string>;
  stop(): Promise<void>;
}

/** True when the test environment has what a split system needs. */
export const canSplit = Boolean(process.env.DATABASE_URL && process.env.NATS_URL);

/** Environment added to one process only (e.g. its own NATS credentials), after the shared one. */
export type PerRoleEnv = Partial<Record<ServiceRole | 'gateway', Record<string, string>>>;

/**
 * Starts the four services (at once) and then the gateway; `env` is added to every
 * process, `perRole` to the one of that role. `scheme: 'https'` when `env` configures
 * internal TLS (INTERNAL_TLS_*).
 */
export async function startSplitSystem(env: Record<string, string> = {}, scheme: 'http' | 'https' = 'http', perRole: PerRoleEnv = {}): Promise<SplitSystem> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startSplitOnce(env, scheme, perRole);
    } catch (err) {
      // Another process took one of the ports chosen up front (freePort is a probe; the
      // process says "PORT … is already in use"): new ports.
      if (!(attempt < 3 && err instanceof Error && /EADDRINUSE|is already in use/.test(err.message))) throw err;
    }
  }
}

async function startSplitOnce(env: Record<string, string>, scheme: 'http' | 'https', perRole: PerRoleEnv): Promise<SplitSystem> {
  const db = await createScratchDatabase();
  const prefix = uniqueBusPrefix();
  const ports = Object.fromEntries(await Promise.all(SERVICE_ROLES.map(async (r) => [r, await freePort()] as const))) as Record<ServiceRole, number>;
  const urls = Object.fromEntries(SERVICE_ROLES.map((r) => [r, `${scheme}://127.0.0.1:${ports[r]}`])) as Record<ServiceRole, string>;
  const shared: Record<string, string> = {
    DATABASE_URL: db.url,
    BUS_PREFIX: prefix,
    TOKEN_SIGNING_KEY: randomKey(),
    SECRETS_ENCRYPTION_KEY: randomKey(),
    IDENTITY_URL: urls.identity,
    CATALOG_URL: urls.catalog,
    CALENDAR_URL: urls.calendar,
    NOTIFICATIONS_URL: urls.notifications,
    ...env,
  };
  const started: RunningSystem[] = [];
  const stop = async () => {
    await Promise.allSettled(started.map((s) => s.stop()));
    await db.drop();
    await deleteBusStream(prefix);
  };
  try {
    const services = await Promise.all(
      SERVICE_ROLES.map(async (role) => {
        const s = await startSystem({ role, env: { ...shared, INTERNAL_PORT: String(ports[role]), ...perRole[role] } });
        started.push(s);
        return [role, s] as const;
      }),
    );
    const gateway = await startSystem({ role: 'gateway', env: { ...shared, INTERNAL_PORT: '0', ...perRole.gateway } });
    started.push(gateway);
    return { services: Object.fromEntries(services) as Record<ServiceRole, RunningSystem>, gateway, urls, shared, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
