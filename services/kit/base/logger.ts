/**
 * Structured JSON logging (pino) on stdout.
 *
 * Secrets never reach a log line: every field that can carry an API key, an access
 * token, a signing secret or an Authorization header is censored by name at any
 * depth, and strings (messages, error messages and stacks, any value) are scrubbed
 * of our credentials' shapes (`psk_…`, `pst_…`, `whsec_…`, and the internal API's `psop_…`, `psmc_…`).
 */
import pino, { Logger } from 'pino';

export type { Logger };

/** Field names whose values are replaced by "[redacted]" at any depth, in objects and arrays. */
const SECRET_FIELD_NAMES = [
  'apiKey',
  'api_key',
  'accessToken',
  'access_token',
  'token',
  'secret',
  'signingSecret',
  'signing_secret',
  'previousSecret',
  'password',
  'authorization',
  'cookie',
  'encryptionKey',
  'tokenSigningKey',
  'tokenSigningKeyPrevious',
  'secretsEncryptionKey',
  'secretsEncryptionKeyPrevious',
  'databaseUrl',
  'internalToken',
  'operatorToken',
  'operatorTokenPrevious',
  'identityDatabaseUrl',
  'catalogDatabaseUrl',
  'calendarDatabaseUrl',
  'notificationsDatabaseUrl',
];
export const SECRET_FIELDS = new Set(SECRET_FIELD_NAMES.map((f) => f.toLowerCase()));

const MAX_DEPTH = 8;

/** Copies `value` with secret fields censored and secret-shaped strings scrubbed. */
export function redactValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactSecrets(value);
  if (value === null || typeof value !== 'object' || depth >= MAX_DEPTH) return value;
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  // Errors go through the `err` serializer, which scrubs message and stack.
  if (value instanceof Date || value instanceof Error || Buffer.isBuffer(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = SECRET_FIELDS.has(k.toLowerCase()) ? '[redacted]' : redactValue(v, depth + 1);
  }
  return out;
}

/**
 * Shapes of our own credentials, scrubbed from free text such as error messages and
 * from what the request log stores (gateway/request-log-sanitiser.ts). A prefix counts
 * after anything but a letter or digit: `resv_psk_…` or `b-psk_…` (a key pasted into an
 * identifier) is scrubbed too, where `\b` would have let an underscore hide it.
 */
const SECRET_SHAPES = /(?<![A-Za-z0-9])(psk|pst|whsec|psop|psmc)_[A-Za-z0-9_\-.]+/g;

/** Replaces anything shaped like a Partner Sync key, token or signing secret. */
export function redactSecrets(text: string): string {
  // Every shape has an underscore: most logged strings (methods, paths, ids) have none,
  // and skip the regular expression.
  if (!text.includes('_')) return text;
  return text.replace(SECRET_SHAPES, '$1_[redacted]');
}

/** How lines are written: one JSON object per line (machines), or pino-pretty's coloured text (people). */
export type LogFormat = 'json' | 'pretty';

export interface LoggerOptions {
  level: string;
  name: string;
  /** LOG_FORMAT; default json. */
  format?: LogFormat;
}

/**
 * pino-pretty as a synchronous in-process stream writing to `destination` (stdout
 * by default). Loaded only when asked for, so the JSON default never loads it:
 * pino-pretty is a development dependency, absent from the image, where the
 * configuration refuses LOG_FORMAT=pretty (config.ts).
 */
function prettyStream(destination: pino.DestinationStream | undefined): pino.DestinationStream {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const pretty = require('pino-pretty') as typeof import('pino-pretty');
  return pretty.build({
    destination: destination ?? 1,
    sync: true,
    colorize: destination === undefined ? Boolean(process.stdout.isTTY) : false,
    translateTime: 'SYS:HH:MM:ss.l',
    // `[12:00:00.123] INFO: psync/catalog-photos: photo fetched {"listing_id":…}`
    messageFormat: '{service}{if component}/{component}{end}: {msg}',
    ignore: 'name,service,component',
    singleLine: true,
  });
}

/**
 * The process's root logger; children carry `service`, `component`, `request_id`, `trace_id`.
 * Lines go to stdout unless `destination` is given (tests capture lines with it);
 * `format: 'pretty'` turns them into human lines.
 *
 * A key appears once per line: a child binding a key its parent already has (a
 * `component` of `catalog` narrowed to `catalog-photos`) replaces the parent's value
 * instead of repeating the key, which pino would otherwise write twice.
 */
export function createLogger(opts: LoggerOptions, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level: opts.level,
    // No base bindings here: the root's own (`service`, `name`) are bound below like any child's.
    base: null,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: {
      level: (label) => ({ level: label }),
      // Every logged object, at any depth, before it is written.
      log: (obj) => redactValue(obj) as Record<string, unknown>,
    },
    hooks: {
      // Free-text messages too: a key pasted into a message is scrubbed by shape.
      logMethod(args, method) {
        method.apply(this, args.map((a) => (typeof a === 'string' ? redactSecrets(a) : a)) as Parameters<typeof method>);
      },
    },
    serializers: {
      err: (e: unknown) => {
        const s = pino.stdSerializers.err(e as Error);
        if (s && typeof s.message === 'string') s.message = redactSecrets(s.message);
        if (s && typeof s.stack === 'string') s.stack = redactSecrets(s.stack);
        return s;
      },
    },
  };
  const out = opts.format === 'pretty' ? prettyStream(destination) : destination;
  const bare = out ? pino(options, out) : pino(options);
  const childOf = bare.child.bind(bare);
  /**
   * Every logger hands out children made from the bare logger with the parent's
   * bindings merged with the new ones (the new value wins), at the parent's level.
   * Bindings bypass formatters.log, so they are redacted here, once when the child is
   * created (pino's own path redaction would re-run on every line: a measurable cost
   * on the request path).
   */
  const withMergingChildren = (logger: Logger): Logger => {
    const child = function (this: Logger, bindings: pino.Bindings, childOptions?: pino.ChildLoggerOptions): Logger {
      const merged = { ...this.bindings(), ...(redactValue(bindings) as pino.Bindings) };
      return withMergingChildren(childOf(merged, { level: this.level, ...childOptions }));
    };
    logger.child = child as unknown as typeof logger.child;
    return logger;
  };
  return withMergingChildren(childOf({ service: opts.name, name: opts.name }));
}
