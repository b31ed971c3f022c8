/**
 * Configuration: defaults, refusals with one clear line, and the process-level
 * behaviour (a bad value exits 1 with one line on stderr naming the variable).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE, loadConfig, settings } from './config';
import { DEFAULT_STREAM_MAX_AGE_MS } from '../events';
import { ConfigError } from '../base';
import { formatDuration } from '../base';
import { runMain } from '../../../test/support/system';

/** The ConfigError `env` raises (fails the test when none is raised). */
function refusal(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

/** Asserts `env` is refused with one line naming `variable`. */
function expectRefused(env: Record<string, string>, variable: string): string {
  const { message } = refusal(env);
  expect(message).toContain(variable);
  expect(message).not.toMatch(/[\r\n]/);
  return message;
}

describe('loadConfig defaults', () => {
  const config = loadConfig({});

  test('match the documented defaults', () => {
    expect(config).toMatchObject({
      port: 8080,
      internalPort: 8081,
      host: '0.0.0.0',
      dataDir: './.data',
      databasePoolSize: 10,
      busPrefix: 'psync',
      rateLimitPerHour: 600,
      tokenTtlSeconds: 900,
      webhookRetrySchedule: [30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 28800],
      egressAllowCidrs: [],
      docsUrl: 'https://docs.partner-sync.example/v1',
      logLevel: 'info',
      logFormat: 'json',
      identityUrl: '',
      catalogUrl: '',
      calendarUrl: '',
      notificationsUrl: '',
      shutdownGraceMs: 10000,
    });
    expect(config.databaseUrl).toBeUndefined();
    expect(config.natsUrl).toBeUndefined();
    expect(DEFAULT_WEBHOOK_RETRY_SCHEDULE).toHaveLength(11); // 12 attempts in all
  });

  test('the default retry schedule spans about 23.8 hours', () => {
    const total = DEFAULT_WEBHOOK_RETRY_SCHEDULE.reduce((a, b) => a + b, 0);
    expect(total / 3600).toBeCloseTo(23.8, 1);
  });

  test('empty strings count as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '', TOKEN_TTL_SECONDS: '', EGRESS_ALLOW_CIDRS: '' })).toMatchObject({
      port: 8080,
      tokenTtlSeconds: 900,
      egressAllowCidrs: [],
    });
  });

  test('every setting has a distinct variable name and a description', () => {
    const names = Object.values(settings).map((s) => s.env);
    expect(new Set(names).size).toBe(names.length);
    for (const s of Object.values(settings)) expect(s.doc.length).toBeGreaterThan(0);
  });
});

describe('loadConfig accepts good values', () => {
  test('parses numbers, URLs, lists', () => {
    const c = loadConfig({
      PORT: '9090',
      INTERNAL_PORT: '0',
      DATABASE_URL: 'postgresql://u:p@db.example:5433/psync',
      NATS_URL: 'nats://127.0.0.1:4222',
      TOKEN_TTL_SECONDS: '3600',
      WEBHOOK_RETRY_SCHEDULE: '1,1,2',
      EGRESS_ALLOW_CIDRS: '127.0.0.0/8, ::1/128,10.0.0.0/8',
      RATE_LIMIT_PER_HOUR: '5',
      LOG_LEVEL: 'silent',
      IDENTITY_URL: 'http://identity:8081',
    });
    expect(c).toMatchObject({
      port: 9090,
      internalPort: 0,
      databaseUrl: 'postgresql://u:p@db.example:5433/psync',
      natsUrl: 'nats://127.0.0.1:4222',
      tokenTtlSeconds: 3600,
      webhookRetrySchedule: [1, 1, 2],
      egressAllowCidrs: ['127.0.0.0/8', '::1/128', '10.0.0.0/8'],
      rateLimitPerHour: 5,
      logLevel: 'silent',
      identityUrl: 'http://identity:8081',
    });
  });
});

describe('loadConfig refuses bad values with one line naming the variable', () => {
  test('TOKEN_TTL_SECONDS over 3600', () => {
    const message = expectRefused({ TOKEN_TTL_SECONDS: '3601' }, 'TOKEN_TTL_SECONDS');
    expect(message).toContain('3600');
    expectRefused({ TOKEN_TTL_SECONDS: '7200' }, 'TOKEN_TTL_SECONDS');
  });

  test.each(['0', '-5', 'abc', '1.5'])('TOKEN_TTL_SECONDS=%s', (v) => {
    expectRefused({ TOKEN_TTL_SECONDS: v }, 'TOKEN_TTL_SECONDS');
  });

  test.each(['abc', '-1', '65536', '80.5', '8080x'])('PORT=%s', (v) => {
    expectRefused({ PORT: v }, 'PORT');
  });

  test('INTERNAL_PORT out of range', () => {
    expectRefused({ INTERNAL_PORT: '70000' }, 'INTERNAL_PORT');
  });

  test.each(['mysql://db/psync', 'http://db:5432/psync', 'not a url', 'db.example:5432'])('DATABASE_URL=%s', (v) => {
    expectRefused({ DATABASE_URL: v }, 'DATABASE_URL');
  });

  test('NATS_URL with another scheme', () => {
    expectRefused({ NATS_URL: 'http://127.0.0.1:4222' }, 'NATS_URL');
  });

  test.each(['foo', '10.0.0.0', '10.0.0.0/33', '10.0.0.0/8/1', '::1/129', '127.0.0.0/8,garbage', '300.0.0.0/8'])('EGRESS_ALLOW_CIDRS=%s', (v) => {
    expectRefused({ EGRESS_ALLOW_CIDRS: v }, 'EGRESS_ALLOW_CIDRS');
  });

  test.each(['a', '1,,2', '1,x', '-1,2', '1;2'])('WEBHOOK_RETRY_SCHEDULE=%s', (v) => {
    expectRefused({ WEBHOOK_RETRY_SCHEDULE: v }, 'WEBHOOK_RETRY_SCHEDULE');
  });

  test('LOG_LEVEL, BUS_PREFIX, DOCS_URL, *_URL', () => {
    expectRefused({ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL');
    expectRefused({ LOG_FORMAT: 'text' }, 'LOG_FORMAT');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expectRefused({ BUS_PREFIX: 'Bad.Prefix' }, 'BUS_PREFIX');
    expectRefused({ DOCS_URL: 'ftp://docs.example' }, 'DOCS_URL');
    expectRefused({ CATALOG_URL: 'catalog:8081' }, 'CATALOG_URL');
  });
});

describe('a process with a bad value', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'psync-config-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  test('main.ts with TOKEN_TTL_SECONDS=7200 exits 1 with one line on stderr naming it', async () => {
    const env: Record<string, string | undefined> = {
      ...process.env,
      TOKEN_TTL_SECONDS: '7200',
      PORT: '0',
      INTERNAL_PORT: '0',
      DATA_DIR: dataDir,
    };
    delete env.DATABASE_URL;
    delete env.NATS_URL;
    // Were the value accepted the system would start: runMain kills it after 30 s.
    const { code, stdout, stderr } = await runMain([], env, 30000);
    expect(code).toBe(1);
    const lines = stderr.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('TOKEN_TTL_SECONDS');
    expect(stderr.endsWith('\n')).toBe(true);
    expect(stdout).toBe('');
  });
});

describe('TOKEN_SIGNING_KEY_PREVIOUS', () => {
  const a = Buffer.alloc(32, 1).toString('base64');
  const b = Buffer.alloc(32, 2).toString('base64');

  test('is optional and parsed like TOKEN_SIGNING_KEY', () => {
    expect(loadConfig({}).tokenSigningKeyPrevious).toBeUndefined();
    const c = loadConfig({ TOKEN_SIGNING_KEY: a, TOKEN_SIGNING_KEY_PREVIOUS: b });
    expect(c.tokenSigningKeyPrevious?.equals(Buffer.alloc(32, 2))).toBe(true);
  });

  test('refuses a short key, the current key again, or a previous key without a current one', () => {
    expect(() => loadConfig({ TOKEN_SIGNING_KEY: a, TOKEN_SIGNING_KEY_PREVIOUS: Buffer.alloc(16).toString('base64') })).toThrow(/TOKEN_SIGNING_KEY_PREVIOUS/);
    expect(() => loadConfig({ TOKEN_SIGNING_KEY: a, TOKEN_SIGNING_KEY_PREVIOUS: a })).toThrow(ConfigError);
    expect(() => loadConfig({ TOKEN_SIGNING_KEY_PREVIOUS: b })).toThrow(/needs TOKEN_SIGNING_KEY/);
  });
});

describe('SECRETS_ENCRYPTION_KEY_PREVIOUS', () => {
  const a = Buffer.alloc(32, 3).toString('base64');
  const b = Buffer.alloc(32, 4).toString('base64');

  test('is optional, parsed like SECRETS_ENCRYPTION_KEY, differs from it and needs it', () => {
    expect(loadConfig({}).secretsEncryptionKeyPrevious).toBeUndefined();
    expect(loadConfig({ SECRETS_ENCRYPTION_KEY: a, SECRETS_ENCRYPTION_KEY_PREVIOUS: b }).secretsEncryptionKeyPrevious?.equals(Buffer.alloc(32, 4))).toBe(true);
    expect(() => loadConfig({ SECRETS_ENCRYPTION_KEY: a, SECRETS_ENCRYPTION_KEY_PREVIOUS: 'short' })).toThrow(/SECRETS_ENCRYPTION_KEY_PREVIOUS/);
    expect(() => loadConfig({ SECRETS_ENCRYPTION_KEY: a, SECRETS_ENCRYPTION_KEY_PREVIOUS: a })).toThrow(/must differ/);
    expect(() => loadConfig({ SECRETS_ENCRYPTION_KEY_PREVIOUS: b })).toThrow(/needs SECRETS_ENCRYPTION_KEY/);
  });
});

describe('internal API credentials and TLS', () => {
  const hash = 'a'.repeat(64);
  const token = 'x'.repeat(32);

  test('INTERNAL_CALLERS: role:sha256 entries, a role may repeat (rotation); hex lower-cased', () => {
    expect(loadConfig({ INTERNAL_CALLERS: `gateway:${hash}, gateway:${'B'.repeat(64)},operator:${hash}` }).internalCallers).toEqual([
      { role: 'gateway', sha256: hash },
      { role: 'gateway', sha256: 'b'.repeat(64) },
      { role: 'operator', sha256: hash },
    ]);
  });

  test('INTERNAL_CALLERS refuses unknown roles, short hashes and plain tokens, without echoing them whole', () => {
    expectRefused({ INTERNAL_CALLERS: `root:${hash}` }, 'INTERNAL_CALLERS');
    expectRefused({ INTERNAL_CALLERS: 'gateway:abc' }, 'INTERNAL_CALLERS');
    const m = expectRefused({ INTERNAL_CALLERS: `gateway-token-${'s'.repeat(60)}` }, 'INTERNAL_CALLERS');
    expect(m).not.toContain('s'.repeat(40));
  });

  test('credentials: 32 to 512 visible characters', () => {
    expect(loadConfig({ OPERATOR_TOKEN: token, INTERNAL_TOKEN: token }).operatorToken).toBe(token);
    expectRefused({ OPERATOR_TOKEN: 'short' }, 'OPERATOR_TOKEN');
    expectRefused({ INTERNAL_TOKEN: `${'x'.repeat(20)} ${'y'.repeat(20)}` }, 'INTERNAL_TOKEN');
  });

  test('OPERATOR_TOKEN_PREVIOUS differs from OPERATOR_TOKEN and needs it', () => {
    expect(loadConfig({ OPERATOR_TOKEN: token, OPERATOR_TOKEN_PREVIOUS: 'y'.repeat(32) }).operatorTokenPrevious).toBe('y'.repeat(32));
    expectRefused({ OPERATOR_TOKEN: token, OPERATOR_TOKEN_PREVIOUS: token }, 'OPERATOR_TOKEN_PREVIOUS');
    expectRefused({ OPERATOR_TOKEN_PREVIOUS: token }, 'OPERATOR_TOKEN_PREVIOUS');
  });

  test('INTERNAL_TLS_CERT and _KEY together; mutual TLS needs a CA', () => {
    expectRefused({ INTERNAL_TLS_CERT: '/c.pem' }, 'INTERNAL_TLS_KEY');
    expectRefused({ INTERNAL_TLS_CERT: '/c.pem', INTERNAL_TLS_KEY: '/k.pem', INTERNAL_TLS_REQUIRE_CLIENT_CERT: 'true' }, 'INTERNAL_TLS_CA');
    expectRefused({ INTERNAL_TLS_REQUIRE_CLIENT_CERT: 'yes' }, 'INTERNAL_TLS_REQUIRE_CLIENT_CERT');
    expect(
      loadConfig({ INTERNAL_TLS_CERT: '/c.pem', INTERNAL_TLS_KEY: '/k.pem', INTERNAL_TLS_CA: '/ca.pem', INTERNAL_TLS_REQUIRE_CLIENT_CERT: 'true' }).internalTlsRequireClientCert,
    ).toBe(true);
  });
});

describe('NATS stream replication and retention (NATS_STREAM_*)', () => {
  const DAY_MS = 86_400_000;

  test('defaults: one replica, 7 days, no size limit', () => {
    expect(loadConfig({})).toMatchObject({ natsStreamReplicas: 1, natsStreamMaxAgeMs: 7 * DAY_MS, natsStreamMaxBytes: -1 });
    expect(DEFAULT_STREAM_MAX_AGE_MS).toBe(7 * DAY_MS);
  });

  test.each([
    ['7d', 7 * DAY_MS],
    ['72h', 72 * 3_600_000],
    ['30m', 30 * 60_000],
    ['90s', 90_000],
    [' 14d ', 14 * DAY_MS],
  ])('NATS_STREAM_MAX_AGE=%s', (raw, ms) => {
    expect(loadConfig({ NATS_STREAM_MAX_AGE: raw }).natsStreamMaxAgeMs).toBe(ms);
  });

  test.each([
    ['10GiB', 10 * 2 ** 30],
    ['500MB', 500e6],
    ['1073741824', 2 ** 30],
    ['64 MiB', 64 * 2 ** 20],
    ['2tib', 2 * 2 ** 40],
  ])('NATS_STREAM_MAX_BYTES=%s', (raw, bytes) => {
    expect(loadConfig({ NATS_STREAM_MAX_BYTES: raw }).natsStreamMaxBytes).toBe(bytes);
  });

  test.each(['1', '3', '5'])('NATS_STREAM_REPLICAS=%s', (raw) => {
    expect(loadConfig({ NATS_STREAM_REPLICAS: raw }).natsStreamReplicas).toBe(Number(raw));
  });

  test.each(['0', '6', '-1', 'three', '1.5'])('NATS_STREAM_REPLICAS=%s is refused', (v) => {
    expectRefused({ NATS_STREAM_REPLICAS: v }, 'NATS_STREAM_REPLICAS');
  });

  test.each(['7', '7 days', '1w', '-1d', '1.5h', 'P7D', '59s', '3651d'])('NATS_STREAM_MAX_AGE=%s is refused', (v) => {
    const message = expectRefused({ NATS_STREAM_MAX_AGE: v }, 'NATS_STREAM_MAX_AGE');
    expect(message).toMatch(/duration such as 7d|between 1m and 3650d/);
  });

  test.each(['-1', '10GB!', '1.5GiB', '10 gigabytes', '1024', '9PiB', '99999999999TB'])('NATS_STREAM_MAX_BYTES=%s is refused', (v) => {
    expectRefused({ NATS_STREAM_MAX_BYTES: v }, 'NATS_STREAM_MAX_BYTES');
  });

  test('formatDuration writes a duration as the settings are written', () => {
    expect([7 * DAY_MS, 36 * 3_600_000, 90 * 60_000, 90_000, 1500].map(formatDuration)).toEqual(['7d', '36h', '90m', '90s', '1500ms']);
  });
});
