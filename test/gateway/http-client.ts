/**
 * A small HTTP client over node:http for gateway tests: exact control of headers and
 * body bytes (no client-side JSON handling), and the raw response text so tests can
 * search it for values that must never be echoed.
 */
import http from 'node:http';

export interface SentRequest {
  method?: string;
  path: string;
  headers?: Record<string, string | number>;
  /** Raw bytes or text; chunks are written one by one (Transfer-Encoding: chunked unless Content-Length is set). */
  body?: string | Buffer | (string | Buffer)[];
  agent?: http.Agent;
}

export interface Received {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The body's bytes as received (still content-coded, if it was); set by send(). */
  bytes?: Buffer;
  /** The parsed body (undefined when empty or not JSON). */
  json: any;
}

export function send(baseUrl: string, req: SentRequest): Promise<Received> {
  const url = new URL(req.path, baseUrl);
  return new Promise((resolve, reject) => {
    const r = http.request(url, { method: req.method ?? 'GET', headers: req.headers, agent: req.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        const text = bytes.toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, bytes, json });
      });
      res.on('error', reject);
    });
    r.on('error', reject);
    const parts = req.body === undefined ? [] : Array.isArray(req.body) ? req.body : [req.body];
    for (const p of parts) r.write(p);
    r.end();
  });
}

/** JSON body with its content type. */
export function jsonRequest(method: string, path: string, body: unknown, headers: Record<string, string> = {}): SentRequest {
  return { method, path, headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) };
}
