/**
 * Request bodies, read by hand (no body parser): the gateway decides what happens at
 * every byte (docs/decisions.md "Maximum request body").
 *
 * - At most 256 KiB is kept. Past that the rest is read and thrown away, so the client
 *   can finish sending and reads a clean `400 validation_failed` (field `body`) instead
 *   of a reset connection. Past 16 MiB the gateway stops reading: the answer carries
 *   `Connection: close` and the socket is closed shortly after the response.
 * - Only `application/json` (a `charset` parameter must be UTF-8), UTF-8 text, no
 *   content coding, valid JSON. Anything else: `400 validation_failed`, field `body`.
 *
 * Codes for field `body`: `required` (no body where one is needed), `max_length`
 * (over the limit), `invalid` (wrong content type or coding, not UTF-8, not JSON).
 */
import type { IncomingMessage } from 'node:http';
import type { Violation } from './problems';
import type { GatewayContext } from './request-context';

/** Largest body the gateway accepts. */
export const BODY_LIMIT_BYTES = 256 * 1024;
/** How much of an over-size body is read and discarded before the connection is closed. */
export const DISCARD_CAP_BYTES = 16 * 1024 * 1024;

export type RawBody =
  | { kind: 'ok'; bytes: Buffer }
  /** `complete`: false when reading stopped at the discard cap. */
  | { kind: 'too_large'; complete: boolean };

/** Raised when the client goes away while sending its body. */
export class ClientGoneError extends Error {
  override name = 'ClientGoneError';
}

/**
 * Reads the request body, keeping at most `limit` bytes and discarding up to `cap`.
 * Resolves once the body ended or the cap was reached.
 */
export function readRawBody(req: IncomingMessage, limit = BODY_LIMIT_BYTES, cap = DISCARD_CAP_BYTES): Promise<RawBody> {
  return new Promise((resolve, reject) => {
    if (req.readableEnded) return resolve({ kind: 'ok', bytes: Buffer.alloc(0) });
    let chunks: Buffer[] = [];
    let total = 0;
    let done = false;
    const finish = (result: RawBody | Error) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (total <= limit) {
        chunks.push(chunk);
        return;
      }
      chunks = [];
      if (total > cap) {
        req.pause();
        finish({ kind: 'too_large', complete: false });
      }
    };
    const onEnd = () => finish(total > limit ? { kind: 'too_large', complete: true } : { kind: 'ok', bytes: Buffer.concat(chunks, total) });
    const onError = () => finish(new ClientGoneError('the client went away while sending the body'));
    const onClose = () => {
      if (!req.complete) finish(new ClientGoneError('the client went away while sending the body'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

export type JsonBody = { ok: true; value: unknown } | { ok: false; violation: Violation };

export interface ReadJsonOptions {
  /** What an empty body means: a violation (`required`), or `{}` (the acknowledge call). */
  empty: 'required' | 'empty-object';
  limit?: number;
  cap?: number;
}

const bodyViolation = (code: Violation['code']): JsonBody => ({ ok: false, violation: { field: 'body', code } });

/** True for `application/json` with no charset or a UTF-8 one. */
export function isJsonContentType(header: string | undefined): boolean {
  if (!header) return false;
  const [type, ...params] = header.split(';');
  if (type?.trim().toLowerCase() !== 'application/json') return false;
  for (const p of params) {
    const eq = p.indexOf('=');
    if (eq < 0) continue;
    const name = p.slice(0, eq).trim().toLowerCase();
    const value = p
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    if (name === 'charset' && value !== 'utf-8' && value !== 'utf8') return false;
  }
  return true;
}

/**
 * Reads and parses a JSON body. Never throws for what the client sent: the outcome is
 * a value or one violation of field `body`, so it can be reported together with the
 * parameters' violations. A client that disconnects mid-body gets (nowhere) a `400`
 * too, so its request is logged as the client's fault, not the service's.
 */
export async function readJsonBody(ctx: GatewayContext, opts: ReadJsonOptions): Promise<JsonBody> {
  let raw: RawBody;
  try {
    raw = await readRawBody(ctx.req, opts.limit, opts.cap);
  } catch (err) {
    if (err instanceof ClientGoneError) return bodyViolation('invalid');
    throw err;
  }
  if (raw.kind === 'too_large') {
    if (!raw.complete) closeAfterResponse(ctx);
    return bodyViolation('max_length');
  }
  const encoding = ctx.get('Content-Encoding').trim().toLowerCase();
  if (encoding !== '' && encoding !== 'identity') return bodyViolation('invalid');

  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(raw.bytes);
  } catch {
    return bodyViolation('invalid');
  }
  if (text.trim() === '') return opts.empty === 'required' ? bodyViolation('required') : { ok: true, value: {} };
  if (!isJsonContentType(ctx.get('Content-Type') || undefined)) return bodyViolation('invalid');
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return bodyViolation('invalid');
  }
}

/** How long a socket whose body was not read to the end may stay open after the answer. */
const CLOSE_GRACE_MS = 1000;

/** Closes the connection after the answer: the rest of the body is never read. */
function closeAfterResponse(ctx: GatewayContext): void {
  ctx.set('Connection', 'close');
  const socket = ctx.req.socket;
  ctx.res.once('finish', () => {
    socket.end();
    setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
  });
}
