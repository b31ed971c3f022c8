/**
 * A partner's webhook receiver for tests: a real HTTPS server with a certificate
 * from a CA generated at test time (trusted by the system under test through
 * NODE_EXTRA_CA_CERTS), on https://localhost:8443 — the spec allows only ports 443
 * and 8443, so the receiver binds 8443 and test files that need it take turns: a
 * file waits until the port is free (the bind is the lock), so they run serially.
 *
 * It records every request (raw body, headers, arrival time) and answers per path:
 * by default it echoes challenges and answers 200 to deliveries; a test can set any
 * other behaviour (`on(path, handler)`).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Certificates } from '../../support/tls';

/** Port the receiver listens on (spec "Limits": 443 or 8443). */
export const RECEIVER_PORT = 8443;
/** How long a test file waits for another file to release the port. */
const PORT_WAIT_MS = 8 * 60_000;

/** One request as the receiver saw it. */
export interface Received {
  path: string;
  method: string;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** The raw body, exactly as received. */
  raw: string;
  /** The parsed body (undefined if it was not JSON). */
  json: any;
  at: number;
  /** The TLS connection it came on (1, 2, … in the order they were accepted). */
  connection: number;
  /** True if that connection resumed an earlier TLS session (no full handshake). */
  resumed: boolean;
}

/** What to answer. */
export interface Reply {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Never answer (the connection stays open until the client gives up). */
  hang?: boolean;
  /** Close the connection without answering. */
  drop?: boolean;
}

export type Handler = (req: Received) => Reply | Promise<Reply>;

/** The default partner: echoes challenges, acknowledges deliveries with 200. */
export const echoAndAccept = (req: Received): Reply =>
  req.json?.event_type === 'endpoint.challenge'
    ? { status: 200, body: JSON.stringify({ challenge: req.json.data.challenge }), headers: { 'content-type': 'application/json' } }
    : { status: 200, body: '{"ok":true}', headers: { 'content-type': 'application/json' } };

/** Echoes challenges, answers deliveries with `status`. */
export function echoThen(status: number, extra: Partial<Reply> = {}): Handler {
  return (req) => (req.json?.event_type === 'endpoint.challenge' ? echoAndAccept(req) : { status, body: '', ...extra });
}

export class Receiver {
  readonly received: Received[] = [];
  private readonly handlers = new Map<string, Handler>();
  private readonly waiters = new Set<() => void>();
  private readonly hanging = new Set<ServerResponse>();
  private readonly connectionIds = new WeakMap<TLSSocket, number>();
  private readonly open = new Set<TLSSocket>();
  private server: https.Server | null = null;
  /** TLS connections accepted so far (handshakes completed). */
  tlsConnections = 0;

  constructor(private readonly certs: Certificates) {}

  /** The base URL partners register (`https://localhost:8443`). */
  get baseUrl(): string {
    return `https://localhost:${RECEIVER_PORT}`;
  }

  /** Sets how `path` answers (replacing the previous behaviour). */
  on(path: string, handler: Handler): this {
    this.handlers.set(path, handler);
    return this;
  }

  /** Requests received on `path` (optionally only deliveries or only challenges). */
  at(path: string, kind?: 'challenge' | 'delivery'): Received[] {
    return this.received.filter((r) => r.path === path && (kind === undefined || (kind === 'challenge') === (r.json?.event_type === 'endpoint.challenge')));
  }

  /** Resolves once `predicate` holds (checked on every request), or rejects after `timeoutMs`. */
  async waitFor<T>(predicate: () => T | undefined | false, timeoutMs = 20_000, what = 'condition'): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = predicate();
      if (v) return v;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`receiver: timed out after ${timeoutMs} ms waiting for ${what}; got ${this.received.length} requests`);
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          this.waiters.delete(done);
          resolve();
        };
        const t = setTimeout(done, Math.min(left, 250));
        this.waiters.add(done);
      });
    }
  }

  /** TLS connections open now. */
  get openConnections(): number {
    return this.open.size;
  }

  /** Closes the connections that have no request in progress (as a server's keep-alive time-out does). */
  closeIdleConnections(): void {
    this.server?.closeIdleConnections();
  }

  /** Binds https://localhost:8443, waiting while another test file holds the port. */
  async listen(): Promise<void> {
    const deadline = Date.now() + PORT_WAIT_MS;
    for (;;) {
      const server = https.createServer({ key: this.certs.key, cert: this.certs.cert }, (req, res) => void this.handle(req, res));
      // Node's default: long enough for the system to keep connections alive (a client
      // does not reuse a connection whose announced Keep-Alive time-out is 1 s or less).
      server.keepAliveTimeout = 5000;
      server.on('secureConnection', (socket: TLSSocket) => {
        this.connectionIds.set(socket, ++this.tlsConnections);
        this.open.add(socket);
        socket.once('close', () => this.open.delete(socket));
      });
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(RECEIVER_PORT, '127.0.0.1', () => {
            server.off('error', reject);
            resolve();
          });
        });
        this.server = server;
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || Date.now() > deadline) {
          throw new Error(`receiver: cannot listen on 127.0.0.1:${RECEIVER_PORT}: ${(err as Error).message}`, { cause: err });
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  /** Stops listening, ends hanging requests and releases the port. */
  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      json = undefined;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
    const path = (req.url ?? '/').split('?')[0]!;
    const socket = req.socket as TLSSocket;
    const rec: Received = {
      path,
      method: req.method ?? '',
      headers,
      raw,
      json,
      at: Date.now(),
      connection: this.connectionIds.get(socket) ?? 0,
      resumed: socket.isSessionReused(),
    };
    this.received.push(rec);
    for (const w of [...this.waiters]) w();
    let reply: Reply;
    try {
      reply = await (this.handlers.get(path) ?? echoAndAccept)(rec);
    } catch {
      reply = { status: 500 };
    }
    if (reply.drop) {
      res.socket?.destroy();
      return;
    }
    if (reply.hang) {
      this.hanging.add(res);
      res.once('close', () => this.hanging.delete(res));
      return;
    }
    // timing under test: a slow partner, as the test configured it.
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    if (res.destroyed) return;
    res.writeHead(reply.status, reply.headers ?? {});
    res.end(reply.body ?? '');
  }
}

/** The receiver rules of the spec ("Events", receiver rules 1–4), as a partner implements them. */
export interface Verification {
  ok: boolean;
  /** Which secret matched: the current one (X-Signature) or the previous (X-Signature-Previous). */
  matched?: 'signature' | 'previous';
  reason?: string;
}

/**
 * Verifies a delivery: over the raw body before any parsing, timestamp within five
 * minutes (checked before comparing), constant-time comparison, and during a
 * rotation either signature accepted. `secret` is what the partner holds.
 */
export function verifyDelivery(req: Received, secret: string, nowMs = Date.now()): Verification {
  const ts = req.headers['x-signature-timestamp'];
  if (!ts || !/^\d+$/.test(ts)) return { ok: false, reason: 'no timestamp' };
  if (Math.abs(nowMs / 1000 - Number(ts)) > 300) return { ok: false, reason: 'stale timestamp' };
  const expected = Buffer.from(createHmac('sha256', Buffer.from(secret, 'utf8')).update(`v1:${ts}:${req.raw}`, 'utf8').digest('hex'));
  const equal = (header: string | undefined) => {
    if (!header) return false;
    const got = Buffer.from(header);
    return got.length === expected.length && timingSafeEqual(got, expected);
  };
  if (equal(req.headers['x-signature'])) return { ok: true, matched: 'signature' };
  if (equal(req.headers['x-signature-previous'])) return { ok: true, matched: 'previous' };
  return { ok: false, reason: 'no signature matches' };
}

/** Receiver rule 5: a partner's dedupe on event_id; returns the distinct deliveries. */
export function dedupe(reqs: Received[]): Received[] {
  const seen = new Set<string>();
  return reqs.filter((r) => {
    const id = r.json?.event_id as string | undefined;
    if (!id || seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/** A short stable digest of a body (to compare bodies across retries in messages). */
export function digest(raw: string): string {
  return createHash('sha256').update(raw).digest('hex').slice(0, 16);
}
