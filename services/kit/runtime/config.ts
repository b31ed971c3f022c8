/**
 * Typed, validated configuration read from the environment.
 *
 * Every variable a process reads is declared once in `settings` below with its
 * default, its parser (config-parsers.ts) and a one-line description (README.md's
 * configuration table mirrors it). `loadConfig()` validates everything at start-up,
 * each value and then the rules between them; a bad value raises a ConfigError
 * (config-error.ts) whose message is one clear line, and the entry points exit
 * non-zero with it (see exitOnConfigError).
 */
import { MAX_TOKEN_TTL_SECONDS, RATE_WINDOW_SECONDS } from '../base';
import { ConfigError } from '../base';
import { base64Key, bool, byteSize, callers, cidrs, credential, credsFile, delays, duration, int, logLevel, natsUrl, postgresUrl, text, url, type Parser } from './config-parsers';
import type { AcceptedCaller } from '../rpc';
import { natsServers } from '../events';
import { DEFAULT_STREAM_MAX_AGE_MS } from '../events';

/** True when the package `name` can be loaded from here (development dependencies are absent from the image). */
function resolvable(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
}

/** Default retry schedule for webhook deliveries: exponential, about a day in total. */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = [30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 28800];

interface Setting<T> {
  env: string;
  default: T;
  parse: Parser<T>;
  doc: string;
}

const setting = <T>(env: string, def: T, parse: Parser<T>, doc: string): Setting<T> => ({ env, default: def, parse, doc });

/** Every configuration variable, its default and meaning. Keep README.md's table in step. */
export const settings = {
  port: setting('PORT', 8080, int(0, 65535), 'public gateway port (base path /v1)'),
  internalPort: setting('INTERNAL_PORT', 8081, int(0, 65535), 'internal Connect/gRPC port (h2c)'),
  healthPort: setting<number | undefined>(
    'HEALTH_PORT',
    undefined,
    int(1, 65535),
    'an extra clear-text (h2c) port serving only grpc.health.v1.Health, for Kubernetes gRPC probes when the internal port speaks TLS; unset: none',
  ),
  metricsPort: setting('METRICS_PORT', 9464, int(0, 65535), 'Prometheus metrics port (/metrics) of every process'),
  host: setting('HOST', '0.0.0.0', text, 'address the servers bind to'),
  metricsHost: setting<string | undefined>('METRICS_HOST', undefined, text, 'address the metrics port binds to; default 127.0.0.1 with role all (the all-in-one), HOST otherwise'),
  internalHost: setting<string | undefined>(
    'INTERNAL_HOST',
    undefined,
    text,
    'address the internal port binds to; default 127.0.0.1 with role all (the all-in-one), HOST otherwise',
  ),
  internalToken: setting<string | undefined>(
    'INTERNAL_TOKEN',
    undefined,
    credential,
    "this process's own credential, sent as authorization: Bearer on its calls to services in other processes",
  ),
  internalCallers: setting<AcceptedCaller[]>(
    'INTERNAL_CALLERS',
    [],
    callers,
    'credentials the internal API accepts, as role:sha256hex entries (hashes only; current and previous during a rotation)',
  ),
  internalAuthCacheSeconds: setting(
    'INTERNAL_AUTH_CACHE_SECONDS',
    30,
    int(0, 3600),
    'how long a verified (or refused) marketplace client credential is remembered; a revocation takes effect within it',
  ),
  operatorToken: setting<string | undefined>(
    'OPERATOR_TOKEN',
    undefined,
    credential,
    'the operator credential the internal API accepts (bin/psync sends it as PSYNC_TOKEN); unset and no operator entry in INTERNAL_CALLERS: generated under DATA_DIR/keys/operator.token',
  ),
  operatorTokenPrevious: setting<string | undefined>('OPERATOR_TOKEN_PREVIOUS', undefined, credential, 'the previous OPERATOR_TOKEN, still accepted during a rotation'),
  internalTlsCert: setting<string | undefined>(
    'INTERNAL_TLS_CERT',
    undefined,
    text,
    'PEM certificate file of the internal port (TLS on when set with INTERNAL_TLS_KEY); also the client certificate on calls to other services',
  ),
  internalTlsKey: setting<string | undefined>('INTERNAL_TLS_KEY', undefined, text, 'PEM private key file of INTERNAL_TLS_CERT'),
  internalTlsCa: setting<string | undefined>(
    'INTERNAL_TLS_CA',
    undefined,
    text,
    'PEM CA bundle file trusted for https:// internal URLs (and for client certificates when INTERNAL_TLS_REQUIRE_CLIENT_CERT is true)',
  ),
  internalTlsRequireClientCert: setting(
    'INTERNAL_TLS_REQUIRE_CLIENT_CERT',
    false,
    bool,
    'mutual TLS: refuse internal connections without a client certificate signed by INTERNAL_TLS_CA',
  ),
  dataDir: setting('DATA_DIR', './.data', text, 'embedded PostgreSQL files and local keys when DATABASE_URL is unset'),
  databaseUrl: setting<string | undefined>('DATABASE_URL', undefined, postgresUrl, 'real PostgreSQL server'),
  identityDatabaseUrl: setting<string | undefined>('IDENTITY_DATABASE_URL', undefined, postgresUrl, "the identity service's own PostgreSQL role (default DATABASE_URL)"),
  catalogDatabaseUrl: setting<string | undefined>('CATALOG_DATABASE_URL', undefined, postgresUrl, "the catalog service's own PostgreSQL role (default DATABASE_URL)"),
  calendarDatabaseUrl: setting<string | undefined>('CALENDAR_DATABASE_URL', undefined, postgresUrl, "the calendar service's own PostgreSQL role (default DATABASE_URL)"),
  notificationsDatabaseUrl: setting<string | undefined>(
    'NOTIFICATIONS_DATABASE_URL',
    undefined,
    postgresUrl,
    "the notifications service's own PostgreSQL role (default DATABASE_URL)",
  ),
  databasePoolSize: setting('DATABASE_POOL_SIZE', 10, int(1, 100), 'connections per service to a real PostgreSQL'),
  natsUrl: setting<string | undefined>(
    'NATS_URL',
    undefined,
    natsUrl,
    'real NATS server with JetStream; comma-separated URLs; nats://user:password@host:4222 authenticates with a user and password',
  ),
  natsCreds: setting<string | undefined>(
    'NATS_CREDS',
    undefined,
    credsFile,
    'path of a NATS .creds file (user JWT and nkey seed) to authenticate with instead of URL credentials; re-read at every reconnect',
  ),
  busPrefix: setting(
    'BUS_PREFIX',
    'psync',
    (raw, name) => {
      if (!/^[a-z][a-z0-9_]{0,30}$/.test(raw)) throw new ConfigError(`${name} must match ^[a-z][a-z0-9_]{0,30}$`);
      return raw;
    },
    'subject prefix and stream name of domain events on NATS',
  ),
  natsStreamReplicas: setting(
    'NATS_STREAM_REPLICAS',
    1,
    int(1, 5),
    'copies of the JetStream stream (and of its durable consumers) on a NATS cluster: 3 survives the loss of one node in three; more than 1 needs a clustered server; an existing stream is brought to it at start-up',
  ),
  natsStreamMaxAgeMs: setting(
    'NATS_STREAM_MAX_AGE',
    DEFAULT_STREAM_MAX_AGE_MS,
    duration(60_000, 3650 * 86_400_000),
    'how long the stream keeps an event (7d, 72h, 30m …; at least 1m): longer than any durable consumer may be down (docs/operations.md, "Stream retention"); an existing stream is brought to it at start-up',
  ),
  natsStreamMaxBytes: setting(
    'NATS_STREAM_MAX_BYTES',
    -1,
    byteSize(1_048_576),
    'largest size of the stream (10GiB, 500MB, bytes …; at least 1MiB), the oldest events discarded beyond it; unset: unlimited (-1); an existing stream is brought to it at start-up',
  ),
  rateLimitPerHour: setting('RATE_LIMIT_PER_HOUR', 600, int(1, 1_000_000), `contract requests per API key per ${RATE_WINDOW_SECONDS} s`),
  tokenTtlSeconds: setting(
    'TOKEN_TTL_SECONDS',
    900,
    (raw, name) => {
      const n = int(1, Number.MAX_SAFE_INTEGER)(raw, name);
      if (n > MAX_TOKEN_TTL_SECONDS) throw new ConfigError(`${name} must be at most ${MAX_TOKEN_TTL_SECONDS} (the spec caps token lifetime at one hour), got ${n}`);
      return n;
    },
    `access-token lifetime in seconds, at most ${MAX_TOKEN_TTL_SECONDS}`,
  ),
  tokenSigningKey: setting<Buffer | undefined>(
    'TOKEN_SIGNING_KEY',
    undefined,
    base64Key(32),
    'HMAC key signing access tokens (base64, >= 32 bytes); embedded default: generated under DATA_DIR/keys; unset with a real PostgreSQL (DATABASE_URL or a per-service URL): the token endpoint is not configured',
  ),
  tokenSigningKeyPrevious: setting<Buffer | undefined>(
    'TOKEN_SIGNING_KEY_PREVIOUS',
    undefined,
    base64Key(32),
    'previous token-signing key during a rotation (base64, >= 32 bytes): tokens signed with it still verify, none are issued with it; remove after TOKEN_TTL_SECONDS',
  ),
  tokenRateLimitPerHour: setting('TOKEN_RATE_LIMIT_PER_HOUR', 60, int(1, 1_000_000), `token exchanges per API key per ${RATE_WINDOW_SECONDS} s`),
  tokenFailuresPerAddress: setting(
    'TOKEN_FAILURES_PER_ADDRESS',
    30,
    int(1, 1_000_000),
    'failed token exchanges one client address may make per TOKEN_FAILURE_WINDOW_SECONDS before its exchanges are answered 429 without a lookup',
  ),
  tokenFailuresPerKey: setting(
    'TOKEN_FAILURES_PER_KEY',
    10,
    int(1, 1_000_000),
    'failed token exchanges per presented key id per TOKEN_FAILURE_WINDOW_SECONDS before further failures are answered 429 (the right key still gets its token)',
  ),
  tokenFailureWindowSeconds: setting('TOKEN_FAILURE_WINDOW_SECONDS', 600, int(1, 86400), 'window of the failed token exchange counts'),
  trustProxyHops: setting(
    'TRUST_PROXY_HOPS',
    0,
    int(0, 10),
    'reverse proxies in front of the gateway whose X-Forwarded-For entries name the client (0: the socket address is the client; 1 behind an ingress)',
  ),
  webhookRetrySchedule: setting('WEBHOOK_RETRY_SCHEDULE', DEFAULT_WEBHOOK_RETRY_SCHEDULE, delays, 'delays in seconds between delivery attempts'),
  secretsEncryptionKey: setting<Buffer | undefined>(
    'SECRETS_ENCRYPTION_KEY',
    undefined,
    base64Key(32),
    'key encrypting webhook signing secrets at rest (base64, >= 32 bytes); embedded default: generated under DATA_DIR/keys; unset with a real PostgreSQL: webhook registration is not configured',
  ),
  secretsEncryptionKeyPrevious: setting<Buffer | undefined>(
    'SECRETS_ENCRYPTION_KEY_PREVIOUS',
    undefined,
    base64Key(32),
    'previous secrets-encryption key during a rotation (base64, >= 32 bytes): secrets under it still decrypt and are re-encrypted under SECRETS_ENCRYPTION_KEY at notifications start-up',
  ),
  deletionEscalationSeconds: setting('DELETION_ESCALATION_SECONDS', 604800, int(1, 31_536_000), 'unacknowledged deletion requests escalate to operators after this many seconds'),
  egressAllowCidrs: setting<string[]>('EGRESS_ALLOW_CIDRS', [], cidrs, 'CIDRs exempt from the non-public address refusal (test/dev only)'),
  photoConcurrency: setting(
    'PHOTO_CONCURRENCY',
    4,
    int(1, 64),
    'photos fetched and processed at once per catalog process in each lane: fast, and slow (photos running over 2 s, slow workspaces; docs/catalog.md "Fair scheduling")',
  ),
  photoWorkspaceConcurrency: setting(
    'PHOTO_WORKSPACE_CONCURRENCY',
    2,
    int(1, 64),
    'photos of one workspace in flight at once per catalog process; below PHOTO_CONCURRENCY, the rest of the fast lane stays free for other workspaces (docs/catalog.md "Fair scheduling")',
  ),
  photoFetchTimeoutMs: setting('PHOTO_FETCH_TIMEOUT_MS', 30000, int(1000, 600000), 'deadline of one photo fetch (connect at most 5 s, silence at most 10 s within it)'),
  photoLeaseSeconds: setting('PHOTO_LEASE_SECONDS', 60, int(2, 3600), 'a claimed photo returns to the queue this long after its worker stops renewing the claim (crash)'),
  holdTtlSeconds: setting('HOLD_TTL_SECONDS', 900, int(1, 86400), 'default lifetime of a marketplace hold when PlaceHold gives none (docs/calendar.md)'),
  calendarEventRetentionDays: setting(
    'CALENDAR_EVENT_RETENTION_DAYS',
    30,
    int(1, 3650),
    'days the calendar keeps events WatchEvents can replay; older ones are pruned and a cursor before them fails OUT_OF_RANGE (docs/calendar.md)',
  ),
  docsUrl: setting('DOCS_URL', 'https://docs.partner-sync.example/v1', url(['https', 'http']), 'base of problem type URIs'),
  logLevel: setting('LOG_LEVEL', 'info', logLevel, 'pino log level'),
  logFormat: setting<'json' | 'pretty'>(
    'LOG_FORMAT',
    'json',
    (raw, name) => {
      if (raw !== 'json' && raw !== 'pretty') throw new ConfigError(`${name} must be json or pretty, got "${raw}"`);
      if (raw === 'pretty' && !resolvable('pino-pretty')) {
        throw new ConfigError(`${name}=pretty needs pino-pretty, a development dependency the image leaves out: keep json and read the lines through \`npx pino-pretty\``);
      }
      return raw;
    },
    'json: one JSON object per line (the default, for log collectors); pretty: human-readable lines (pino-pretty, a development dependency: a checkout after npm ci, not the image)',
  ),
  identityUrl: setting('IDENTITY_URL', '', (raw, name) => url(['http', 'https'])(raw, name), 'identity service base URL (default: this process)'),
  catalogUrl: setting('CATALOG_URL', '', (raw, name) => url(['http', 'https'])(raw, name), 'catalog service base URL (default: this process)'),
  calendarUrl: setting('CALENDAR_URL', '', (raw, name) => url(['http', 'https'])(raw, name), 'calendar service base URL (default: this process)'),
  notificationsUrl: setting('NOTIFICATIONS_URL', '', (raw, name) => url(['http', 'https'])(raw, name), 'notifications service base URL (default: this process)'),
  shutdownGraceMs: setting('SHUTDOWN_GRACE_MS', 10000, int(0, 600000), 'how long SIGTERM waits for in-flight work'),
} as const;

export type Config = { [K in keyof typeof settings]: (typeof settings)[K]['default'] };

/**
 * Reads and validates every setting from `env`. Empty strings count as unset.
 * Throws ConfigError with a one-line message on the first bad value.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const out: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(settings) as [keyof Config, Setting<unknown>][]) {
    const raw = env[s.env];
    out[key] = raw === undefined || raw === '' ? s.default : s.parse(raw, s.env);
  }
  const config = out as Config;
  if (config.tokenSigningKeyPrevious && config.tokenSigningKey?.equals(config.tokenSigningKeyPrevious)) {
    throw new ConfigError('TOKEN_SIGNING_KEY_PREVIOUS must differ from TOKEN_SIGNING_KEY (set it to the old key while rotating, then remove it)');
  }
  if (config.tokenSigningKeyPrevious && !config.tokenSigningKey) {
    throw new ConfigError('TOKEN_SIGNING_KEY_PREVIOUS needs TOKEN_SIGNING_KEY (the new key) to be set');
  }
  if (config.secretsEncryptionKeyPrevious && config.secretsEncryptionKey?.equals(config.secretsEncryptionKeyPrevious)) {
    throw new ConfigError('SECRETS_ENCRYPTION_KEY_PREVIOUS must differ from SECRETS_ENCRYPTION_KEY (set it to the old key while rotating, then remove it)');
  }
  if (config.secretsEncryptionKeyPrevious && !config.secretsEncryptionKey) {
    throw new ConfigError('SECRETS_ENCRYPTION_KEY_PREVIOUS needs SECRETS_ENCRYPTION_KEY (the new key) to be set');
  }
  if (config.operatorTokenPrevious && config.operatorTokenPrevious === config.operatorToken) {
    throw new ConfigError('OPERATOR_TOKEN_PREVIOUS must differ from OPERATOR_TOKEN (set it to the old token while rotating, then remove it)');
  }
  if (config.operatorTokenPrevious && !config.operatorToken) {
    throw new ConfigError('OPERATOR_TOKEN_PREVIOUS needs OPERATOR_TOKEN (the new token) to be set');
  }
  if (config.natsCreds && !config.natsUrl) {
    throw new ConfigError('NATS_CREDS needs NATS_URL (without NATS_URL the bus is in-process and needs no credentials)');
  }
  if (config.natsCreds && config.natsUrl && natsServers(config.natsUrl).user !== undefined) {
    throw new ConfigError('NATS_CREDS and credentials in NATS_URL exclude each other: use one');
  }
  if (Boolean(config.internalTlsCert) !== Boolean(config.internalTlsKey)) {
    throw new ConfigError('INTERNAL_TLS_CERT and INTERNAL_TLS_KEY must be set together');
  }
  if (config.internalTlsRequireClientCert && !(config.internalTlsCa && config.internalTlsCert)) {
    throw new ConfigError('INTERNAL_TLS_REQUIRE_CLIENT_CERT needs INTERNAL_TLS_CERT, INTERNAL_TLS_KEY and INTERNAL_TLS_CA');
  }
  return config;
}
