/**
 * The sandbox console's built files (console/dist/, written by deploy/build-console.mjs)
 * as the gateway serves them at /console/ (routes/console.ts; docs/operations.md
 * "Sandbox console"): index.html and the hashed files under assets/, read once into
 * memory when the gateway starts, each with the Brotli (.br) and gzip (.gz) copies the
 * build writes beside it.
 *
 * - `Accept-Encoding` picks the copy: br, else gzip, else the file itself (a coding
 *   with q=0 is never chosen); `Vary: Accept-Encoding` always.
 * - A strong ETag per copy (sha256 of the bytes sent); `If-None-Match` → 304.
 * - Hashed assets are immutable for a year; index.html is `no-cache` (revalidated
 *   with its ETag), so a new build is picked up at the next load.
 * - Every console response carries CONSOLE_SECURITY_HEADERS: the one place the
 *   console's Content-Security-Policy (CONSOLE_CSP) is written
 *   (docs/security/threat-model.md "The sandbox console's Content-Security-Policy").
 *
 * Without a built console (an install that skipped the build) the gateway still
 * starts: one warning at start, and the console's pages answer `503`.
 *
 * Not koa-static/koa-send: the files are three, known at start and small, so they are
 * served from memory with an ETag per stored coding; the console's paths are routes of
 * the gateway's one router (its 404/405 and RateLimit-* answers), not a directory
 * lookup; and a missing build must be a 503 problem document, not a file-system error.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { logEvent, type Logger } from '../services/kit/base';
import { ProblemError } from './problems';
import type { GatewayContext } from './request-context';

/**
 * Where the built console is: `<repo>/console/dist`, from gateway/*.ts in a checkout and
 * from the shipped build `<repo>/dist/psync.cjs` alike (deploy/build-main.mjs);
 * `/app/console/dist` in the image (deploy/Dockerfile).
 */
export const CONSOLE_DIST_DIR = join(__dirname, '..', 'console', 'dist');

/**
 * The console's Content-Security-Policy: its own script and stylesheet only, no inline
 * script or style, no other origin, not framed; `data:` images for the empty favicon
 * of console/index.html. API calls go to this same origin.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers on every console response, a 503 included. */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CONSOLE_CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
};

/** What `npm run build:console` fixes (the 503's detail and the start-up warning). */
export const CONSOLE_NOT_BUILT = 'The sandbox console is not built in this installation: run `npm run build:console` (or `npm run build`) and restart the gateway.';

const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/** Content codings the console is stored in, in the server's order of preference. */
export type Coding = 'br' | 'gzip' | 'identity';
const PREFERENCE: readonly Coding[] = ['br', 'gzip', 'identity'];
const SUFFIX: Readonly<Record<Exclude<Coding, 'identity'>, string>> = { br: '.br', gzip: '.gz' };

interface Variant {
  body: Buffer;
  /** Strong ETag: sha256 of `body`, base64url, quoted. */
  etag: string;
}

/** One served file: its type, caching, and the copies there are of it. */
export interface ConsoleFile {
  type: string;
  cacheControl: string;
  variants: Partial<Record<Coding, Variant>> & { identity: Variant };
}

function variant(body: Buffer): Variant {
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url')}"` };
}

function loadFile(path: string, cacheControl: string): ConsoleFile {
  const file: ConsoleFile = {
    type: TYPES[extname(path)] ?? 'application/octet-stream',
    cacheControl,
    variants: { identity: variant(readFileSync(path)) },
  };
  for (const coding of ['br', 'gzip'] as const) {
    const sibling = path + SUFFIX[coding];
    if (existsSync(sibling)) file.variants[coding] = variant(readFileSync(sibling));
  }
  return file;
}

/**
 * The coding to send for an `Accept-Encoding` header among `available` (which always
 * holds identity): the first of br, gzip, identity the client accepts (q > 0; a coding
 * not named takes `*`'s weight, identity is acceptable unless excluded). When nothing
 * listed is acceptable the file itself is sent (RFC 9110 §12.5.3 allows it).
 */
export function negotiateEncoding(header: string | undefined, available: readonly Coding[]): Coding {
  if (!header) return 'identity';
  const weights = new Map<string, number>();
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p);
      if (m) q = Number(m[1]);
    }
    weights.set(name.trim(), Number.isFinite(q) ? q : 0);
  }
  const star = weights.get('*');
  const weight = (c: Coding) => weights.get(c) ?? (c === 'gzip' ? weights.get('x-gzip') : undefined) ?? star ?? (c === 'identity' ? 1 : 0);
  return PREFERENCE.find((c) => available.includes(c) && weight(c) > 0) ?? 'identity';
}

/** `If-None-Match` names `etag` (weak comparison, as RFC 9110 §13.1.2 asks), or is `*`. */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

/** The console's files in memory, read from `dir` when constructed. */
export class ConsoleFiles {
  /** index.html; undefined when the console is not built. */
  readonly index: ConsoleFile | undefined;
  private readonly assets = new Map<string, ConsoleFile>();

  /** Reads `dir` (default: CONSOLE_DIST_DIR); without index.html there, warns once on `log`. */
  constructor(
    readonly dir: string = CONSOLE_DIST_DIR,
    log?: Logger,
  ) {
    const index = join(dir, 'index.html');
    if (!existsSync(index)) {
      log?.warn({ event: logEvent('console.not_built'), dir }, CONSOLE_NOT_BUILT);
      return;
    }
    this.index = loadFile(index, REVALIDATE);
    const assetsDir = join(dir, 'assets');
    if (!existsSync(assetsDir)) return;
    for (const e of readdirSync(assetsDir, { withFileTypes: true })) {
      if (!e.isFile() || e.name.endsWith('.br') || e.name.endsWith('.gz')) continue;
      this.assets.set(e.name, loadFile(join(assetsDir, e.name), IMMUTABLE));
    }
  }

  /** Names under assets/ (without the compressed copies). */
  assetNames(): string[] {
    return [...this.assets.keys()].sort();
  }

  /** Answers `ctx` with index.html. */
  sendIndex(ctx: GatewayContext): void {
    send(ctx, this.built(this.index));
  }

  /** Answers `ctx` with assets/`rawName` (as sent in the path); 404 for a name there is none of. */
  sendAsset(ctx: GatewayContext, rawName: string): void {
    this.built(this.index);
    const file = this.assets.get(rawName);
    if (!file) throw new ProblemError('not_found', { headers: { ...CONSOLE_SECURITY_HEADERS } });
    send(ctx, file);
  }

  private built<T>(file: T | undefined): T {
    if (file === undefined) throw new ProblemError('service_unavailable', { detail: CONSOLE_NOT_BUILT, headers: { ...CONSOLE_SECURITY_HEADERS } });
    return file;
  }
}

function send(ctx: GatewayContext, file: ConsoleFile): void {
  const available = PREFERENCE.filter((c) => file.variants[c] !== undefined);
  const coding = negotiateEncoding(ctx.get('Accept-Encoding'), available);
  const chosen = file.variants[coding] ?? file.variants.identity;
  ctx.set(CONSOLE_SECURITY_HEADERS);
  ctx.set('Cache-Control', file.cacheControl);
  ctx.vary('Accept-Encoding');
  ctx.set('ETag', chosen.etag);
  if (etagMatches(ctx.get('If-None-Match'), chosen.etag)) {
    ctx.status = 304;
    return;
  }
  ctx.status = 200;
  ctx.type = file.type;
  if (coding !== 'identity') ctx.set('Content-Encoding', coding);
  ctx.body = chosen.body;
}
