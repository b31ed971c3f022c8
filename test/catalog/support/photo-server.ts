/**
 * A local photo host for catalog tests: real HTTP (or HTTPS) serving real images made
 * with sharp, counting every request per path, so tests can tell how often the
 * catalog fetched each URL. Routes are registered per test; unknown paths answer 404.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import sharp from 'sharp';

export type Route =
  | { kind: 'bytes'; body: Buffer; contentType?: string; status?: number; headers?: Record<string, string> }
  /** Accepts the request and answers only when released (or never). */
  | { kind: 'hold'; body: Buffer; contentType?: string }
  /**
   * A slow host: answers the headers at once, then one byte of the body every
   * `everyMs` (default 1000: never silent long enough for the fetch's silence limit),
   * and the rest only when released.
   */
  | { kind: 'trickle'; body: Buffer; contentType?: string; everyMs?: number }
  | { kind: 'redirect'; location: string }
  /** Streams `bytes` of filler without a Content-Length. */
  | { kind: 'stream'; bytes: number };

export interface PhotoServer {
  /** Base URL with the `localhost` name (the catalog refuses IP literals). */
  base: string;
  port: number;
  /** Requests received per path. */
  hits(path: string): number;
  totalHits(): number;
  /** Paths of the requests received, in order of arrival. */
  arrivals(): string[];
  /** Requests under the directory `prefix` (`/` or e.g. `/tenant-a/`) open now. */
  openNow(prefix: string): number;
  /** Requests under the directory `prefix` (`/` or e.g. `/tenant-a/`) open at once (received, not yet answered or closed), at most so far. */
  maxInFlight(prefix: string): number;
  route(path: string, route: Route): void;
  /** Serves a generated image. */
  image(path: string, width: number, height: number, format?: 'jpeg' | 'png' | 'webp' | 'gif', seed?: number): Promise<void>;
  /** Resolves once `n` requests for `path` have arrived. */
  waitForHits(path: string, n: number, timeoutMs?: number): Promise<void>;
  /** Answers every held request (now and later) for `path`. */
  release(path: string): void;
  close(): Promise<void>;
}

/** A small real image: a colour gradient (seed varies the colour, so bytes differ). */
export async function makeImage(width: number, height: number, format: 'jpeg' | 'png' | 'webp' | 'gif' = 'jpeg', seed = 0): Promise<Buffer> {
  const img = sharp({
    create: { width, height, channels: 3, background: { r: (seed * 53) % 256, g: (seed * 97 + 80) % 256, b: (seed * 31 + 160) % 256 } },
  });
  switch (format) {
    case 'png':
      return img.png().toBuffer();
    case 'webp':
      return img.webp().toBuffer();
    case 'gif':
      return img.gif().toBuffer();
    default:
      return img.jpeg({ quality: 80 }).toBuffer();
  }
}

export async function startPhotoServer(tls?: { key: string; cert: string }): Promise<PhotoServer> {
  const routes = new Map<string, Route>();
  const counts = new Map<string, number>();
  const released = new Set<string>();
  const held = new Map<string, (() => void)[]>();
  const waiters: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const arrivals: string[] = [];
  const open = new Set<string>();
  const openPaths = new Map<string, number>();
  const maxOpen = new Map<string, number>();

  /** Keeps the highest number of open requests seen per prefix of `path` (every leading directory). */
  const noteOpen = (path: string, delta: number) => {
    const dirs = path.split('/').slice(1, -1);
    for (let i = 0; i <= dirs.length; i++) {
      const prefix = `/${dirs.slice(0, i).join('/')}${i > 0 ? '/' : ''}`;
      const n = (openPaths.get(prefix) ?? 0) + delta;
      openPaths.set(prefix, n);
      if (n > (maxOpen.get(prefix) ?? 0)) maxOpen.set(prefix, n);
    }
  };

  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    counts.set(path, (counts.get(path) ?? 0) + 1);
    arrivals.push(path);
    const id = `${arrivals.length}`;
    open.add(id);
    noteOpen(path, 1);
    res.on('close', () => {
      if (open.delete(id)) noteOpen(path, -1);
    });
    for (const w of [...waiters]) w();
    const r = routes.get(path);
    if (!r) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      return res.end('not found');
    }
    switch (r.kind) {
      case 'bytes':
        res.writeHead(r.status ?? 200, { 'content-type': r.contentType ?? 'application/octet-stream', 'content-length': String(r.body.length), ...r.headers });
        return res.end(r.body);
      case 'redirect':
        res.writeHead(302, { location: r.location });
        return res.end();
      case 'stream': {
        res.writeHead(200, { 'content-type': 'image/jpeg' });
        const chunk = Buffer.alloc(256 * 1024, 0xff);
        let sent = 0;
        const pump = () => {
          while (sent < r.bytes) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.on('error', () => {});
        return pump();
      }
      case 'hold': {
        const answer = () => {
          if (res.writableEnded || res.destroyed) return;
          res.writeHead(200, { 'content-type': r.contentType ?? 'image/jpeg', 'content-length': String(r.body.length) });
          res.end(r.body);
        };
        if (released.has(path)) return answer();
        held.set(path, [...(held.get(path) ?? []), answer]);
        return;
      }
      case 'trickle': {
        res.writeHead(200, { 'content-type': r.contentType ?? 'image/jpeg', 'content-length': String(r.body.length) });
        let sent = 0;
        const finish = () => {
          clearInterval(timer);
          if (!res.writableEnded && !res.destroyed) res.end(r.body.subarray(sent));
        };
        // Keeps the last byte back, so the answer never completes before its release.
        const timer = setInterval(() => {
          if (sent < r.body.length - 1 && !res.destroyed) res.write(r.body.subarray(sent, ++sent));
        }, r.everyMs ?? 1000);
        timer.unref();
        res.on('close', () => clearInterval(timer));
        if (released.has(path)) return finish();
        held.set(path, [...(held.get(path) ?? []), finish]);
        return;
      }
    }
  };

  const server = tls ? https.createServer({ key: tls.key, cert: tls.cert }, handler) : http.createServer(handler);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;

  return {
    base: `${tls ? 'https' : 'http'}://localhost:${port}`,
    port,
    hits: (path) => counts.get(path) ?? 0,
    totalHits: () => [...counts.values()].reduce((a, b) => a + b, 0),
    arrivals: () => [...arrivals],
    maxInFlight: (prefix) => maxOpen.get(prefix) ?? 0,
    openNow: (prefix) => openPaths.get(prefix) ?? 0,
    route: (path, route) => void routes.set(path, route),
    async image(path, width, height, format = 'jpeg', seed = 0) {
      const body = await makeImage(width, height, format, seed);
      routes.set(path, { kind: 'bytes', body, contentType: `image/${format}` });
    },
    waitForHits(path, n, timeoutMs = 30000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if ((counts.get(path) ?? 0) >= n) {
            clearTimeout(timer);
            waiters.splice(waiters.indexOf(check), 1);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(check), 1);
          reject(new Error(`timed out waiting for ${n} hits on ${path} (got ${counts.get(path) ?? 0})`));
        }, timeoutMs);
        waiters.push(check);
        check();
      });
    },
    release(path) {
      released.add(path);
      for (const answer of held.get(path) ?? []) answer();
      held.delete(path);
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
