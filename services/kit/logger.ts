/**
 * Structured JSON logging (pino) on stdout.
 *
 * Secrets never reach a log line: every field that can carry an API key, an access
 * token, a signing secret or an Authorization header is redacted by path, and
 * `redactSecrets` scrubs free text (error messages) of key/token shapes.
 */
import pino, { Logger } from 'pino';

export type { Logger };

/** Field paths whose values are replaced by "[redacted]" wherever they appear. */
export const REDACTED_PATHS = [
  'apiKey', 'api_key', 'accessToken', 'access_token', 'token', 'secret', 'signingSecret', 'signing_secret',
  'password', 'authorization', 'encryptionKey',
  '*.apiKey', '*.api_key', '*.accessToken', '*.access_token', '*.token', '*.secret', '*.signingSecret',
  '*.signing_secret', '*.password', '*.authorization', '*.encryptionKey',
  'req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers.cookie',
];

/** Shapes of our own credentials, scrubbed from free text such as error messages. */
const SECRET_SHAPES = /\b(psk|pst|whsec)_[A-Za-z0-9_\-.]+/g;

/** Replaces anything shaped like a Partner Sync key, token or signing secret. */
export function redactSecrets(text: string): string {
  return text.replace(SECRET_SHAPES, '$1_[redacted]');
}

/** The process's root logger; children carry `service`, `request_id`, `trace_id`. */
export function createLogger(opts: { level: string; name: string }): Logger {
  return pino({
    name: opts.name,
    level: opts.level,
    base: { service: opts.name },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    formatters: { level: (label) => ({ level: label }) },
    serializers: {
      err: (e: unknown) => {
        const s = pino.stdSerializers.err(e as Error);
        if (s && typeof s.message === 'string') s.message = redactSecrets(s.message);
        if (s && typeof s.stack === 'string') s.stack = redactSecrets(s.stack);
        return s;
      },
    },
  });
}
