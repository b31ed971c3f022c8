/**
 * The parsers of configuration values (config.ts's `settings` table names one per
 * variable): each turns the raw text of an environment variable into a typed value, or
 * raises a ConfigError whose message is one line naming the variable and what it wants.
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { isRole, type AcceptedCaller } from '../rpc';
import { ConfigError } from '../base';
import { DURATION_UNITS, formatDuration } from '../base';
import { checkCredsFile, natsServers, NatsCredentialsError } from '../events';
import { parsePostgresUrl, type PostgresUrl } from '../db';

/** Turns the raw text of the variable `name` into its value; throws ConfigError. */
export type Parser<T> = (raw: string, name: string) => T;

/** An integer between `min` and `max`. */
export const int =
  (min: number, max: number): Parser<number> =>
  (raw, name) => {
    if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
    const n = Number(raw.trim());
    if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
    return n;
  };

/** A URL with one of `schemes`. */
export const url =
  (schemes: string[]): Parser<string> =>
  (raw, name) => {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      throw new ConfigError(`${name} must be a URL (${schemes.join(', ')})`);
    }
    if (!schemes.includes(u.protocol.replace(/:$/, ''))) {
      throw new ConfigError(`${name} must use one of ${schemes.join(', ')}, got ${u.protocol.replace(/:$/, '')}`);
    }
    return raw;
  };

/** A PostgreSQL URL, one host or a comma-separated host list (postgres-url.ts). */
export const postgresUrl: Parser<string> = (raw, name) => {
  let u: PostgresUrl;
  try {
    u = parsePostgresUrl(raw);
  } catch (err) {
    const why = err instanceof TypeError && err.message !== 'Invalid URL' && err.message !== 'not a URL' ? `: ${err.message}` : '';
    throw new ConfigError(`${name} must be a URL (postgres, postgresql; hosts may be a comma-separated list)${why}`);
  }
  if (u.scheme !== 'postgres' && u.scheme !== 'postgresql') throw new ConfigError(`${name} must use one of postgres, postgresql, got ${u.scheme}`);
  return raw;
};

/** Any text, as it is. */
export const text: Parser<string> = (raw) => raw;

/** Runs a nats-credentials.ts check, reporting its refusal as a ConfigError. */
function natsCheck<T>(check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof NatsCredentialsError) throw new ConfigError(err.message);
    throw err;
  }
}

/** NATS_URL: comma-separated nats/tls/ws/wss URLs, credentials (if any) the same in each. */
export const natsUrl: Parser<string> = (raw, name) => {
  natsCheck(() => natsServers(raw, name));
  return raw;
};

/** NATS_CREDS: a readable .creds file. */
export const credsFile: Parser<string> = (raw, name) => {
  let content: string;
  try {
    accessSync(raw, constants.R_OK);
    content = readFileSync(raw, 'utf8');
  } catch (err) {
    throw new ConfigError(`${name} (${raw}) cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  natsCheck(() => checkCredsFile(content, raw, name));
  return raw;
};

/** A pino log level. */
export const logLevel: Parser<string> = (raw, name) => {
  const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
  if (!levels.includes(raw)) throw new ConfigError(`${name} must be one of ${levels.join(', ')}, got "${raw}"`);
  return raw;
};

/** Comma-separated non-negative delays in seconds, e.g. "1,1,2". */
export const delays: Parser<number[]> = (raw, name) => {
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => !/^\d+(\.\d+)?$/.test(p))) {
    throw new ConfigError(`${name} must be comma-separated delays in seconds, e.g. "1,1,2"`);
  }
  return parts.map(Number);
};

/** Comma-separated CIDRs, IPv4 or IPv6, e.g. "127.0.0.0/8,::1/128". */
export const cidrs: Parser<string[]> = (raw, name) => {
  const list = raw
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const c of list) {
    const [addr, bits, extra] = c.split('/');
    const family = addr ? isIP(addr) : 0;
    const max = family === 6 ? 128 : 32;
    if (!family || extra !== undefined || bits === undefined || !/^\d+$/.test(bits) || Number(bits) > max) {
      throw new ConfigError(`${name} must be comma-separated CIDRs like 127.0.0.0/8, got "${c}"`);
    }
  }
  return list;
};

/** Base64 (or base64url) of at least `minBytes` bytes, e.g. a key made with `openssl rand -base64 32`; decoded. */
export const base64Key =
  (minBytes: number): Parser<Buffer> =>
  (raw, name) => {
    const s = raw.trim();
    const bytes = /^[A-Za-z0-9+/_-]+={0,2}$/.test(s) ? Buffer.from(s, 'base64') : Buffer.alloc(0);
    if (bytes.length < minBytes) throw new ConfigError(`${name} must be base64 of at least ${minBytes} random bytes (e.g. openssl rand -base64 ${minBytes})`);
    return bytes;
  };

/** A credential sent or accepted on the internal API: 32 to 512 visible ASCII characters (no spaces). */
export const credential: Parser<string> = (raw, name) => {
  const s = raw.trim();
  if (!/^[\x21-\x7e]{32,512}$/.test(s)) throw new ConfigError(`${name} must be 32 to 512 visible ASCII characters without spaces (e.g. openssl rand -base64 32)`);
  return s;
};

/**
 * Comma-separated `role:sha256hex` entries, e.g. `gateway:9f86…,operator:2c26…`. A role
 * may appear more than once (current and previous credential during a rotation).
 */
export const callers: Parser<AcceptedCaller[]> = (raw, name) => {
  const out: AcceptedCaller[] = [];
  for (const entry of raw
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([a-z]+):([0-9a-fA-F]{64})$/.exec(entry);
    if (!m || !isRole(m[1]!)) {
      throw new ConfigError(
        `${name} must be comma-separated role:sha256hex entries (roles: gateway, identity, catalog, calendar, notifications, marketplace, operator), got "${entry.slice(0, 24)}…"`,
      );
    }
    out.push({ role: m[1], sha256: m[2]!.toLowerCase() });
  }
  return out;
};

/** A duration such as `7d`, `72h`, `30m`, `90s` (one number and one unit: ms, s, m, h, d); in milliseconds, between `minMs` and `maxMs`. */
export const duration =
  (minMs: number, maxMs: number): Parser<number> =>
  (raw, name) => {
    const m = /^(\d+)(ms|s|m|h|d)$/.exec(raw.trim());
    if (!m) throw new ConfigError(`${name} must be a duration such as 7d, 72h, 30m or 90s, got "${raw}"`);
    const ms = Number(m[1]) * DURATION_UNITS[m[2]!]!;
    if (ms < minMs || ms > maxMs) throw new ConfigError(`${name} must be between ${formatDuration(minMs)} and ${formatDuration(maxMs)}, got ${raw.trim()}`);
    return ms;
  };

/** Multipliers of a byte-size setting: SI (KB = 1000) and binary (KiB = 1024) units. */
const BYTE_UNITS: Record<string, number> = { '': 1, b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 };

/** A byte size such as `10GiB`, `500MB` or `1073741824` (an integer and an optional unit); at least `min` bytes, at most 2^53 - 1. */
export const byteSize =
  (min: number): Parser<number> =>
  (raw, name) => {
    const m = /^(\d+)\s*([a-zA-Z]*)$/.exec(raw.trim());
    const unit = m ? BYTE_UNITS[m[2]!.toLowerCase()] : undefined;
    if (!m || unit === undefined) throw new ConfigError(`${name} must be a size in bytes such as 10GiB, 500MB or 1073741824, got "${raw}"`);
    const n = Number(m[1]) * unit;
    if (!Number.isSafeInteger(n) || n < min) throw new ConfigError(`${name} must be between ${min} bytes and 8 PiB, got ${raw.trim()}`);
    return n;
  };

/** true or false (1 or 0). */
export const bool: Parser<boolean> = (raw, name) => {
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
};
