/**
 * HTTP messages as the documentation shows them, and the comparison of a documented
 * message with a real one.
 *
 * A documented message is a start line (`HTTP/1.1 409 Conflict`, or
 * `POST /webhooks/psync HTTP/1.1` for a delivery), the headers worth showing, a blank
 * line and the body (JSON, pretty-printed as a person reads it, or nothing).
 *
 * Comparison:
 * - the status (or the method and path) must be the same;
 * - every header shown must be there with that value; headers not shown are not
 *   checked (a page shows the ones that matter);
 * - the body: the same JSON value — every object with exactly the keys shown, every
 *   array as long — or both empty.
 * In a documented header value or JSON string, `<…>` stands for a value that differs
 * between calls and matches any non-empty text (a JSON string that is only `<…>` also
 * matches a number); `<NAME>` where NAME is one of the
 * variables the examples ran with matches exactly that variable's value.
 */

export interface HttpMessage {
  /** The status of a response. */
  status?: number;
  /** Method and path of a request. */
  method?: string;
  path?: string;
  /** Names in lower case, in order. */
  headers: [string, string][];
  body: string;
}

/** Parses the text of a documented ```http block. */
export function parseDocumented(text: string): HttpMessage {
  const lines = text.replace(/\n$/, '').split('\n');
  const start = lines.shift() ?? '';
  const message: HttpMessage = { headers: [], body: '' };
  const response = /^HTTP\/[\d.]+ (\d{3})\b/.exec(start);
  const request = /^([A-Z]+) (\S+) HTTP\/[\d.]+$/.exec(start);
  if (response) message.status = Number(response[1]);
  else if (request) [message.method, message.path] = [request[1], request[2]];
  else throw new Error(`not an HTTP start line: ${start}`);
  while (lines.length > 0 && lines[0] !== '') {
    const line = lines.shift()!;
    const at = line.indexOf(':');
    if (at < 1) throw new Error(`not a header line: ${line}`);
    message.headers.push([line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim()]);
  }
  message.body = lines.slice(1).join('\n').trim();
  return message;
}

/** Parses what `curl -si` printed: the final response (interim `1xx` ones skipped). */
export function parseCurlOutput(output: string): HttpMessage {
  let rest = output;
  for (;;) {
    const end = rest.search(/\r?\n\r?\n/);
    const head = end < 0 ? rest : rest.slice(0, end);
    const body = end < 0 ? '' : rest.slice(end).replace(/^\r?\n\r?\n/, '');
    const lines = head.split(/\r?\n/);
    const status = /^HTTP\/[\d.]+ (\d{3})\b/.exec(lines[0] ?? '');
    if (!status) throw new Error(`curl did not print a response:\n${output}`);
    if (status[1]!.startsWith('1')) {
      rest = body;
      continue;
    }
    const headers: [string, string][] = lines.slice(1).map((l) => {
      const at = l.indexOf(':');
      return [l.slice(0, at).trim().toLowerCase(), l.slice(at + 1).trim()];
    });
    return { status: Number(status[1]), headers, body: body.trim() };
  }
}

/** A documented value as a pattern: its `<…>` placeholders filled as described above. */
export function valuePattern(documented: string, vars: Record<string, string>): RegExp {
  const parts = documented.split(/(<[^<>]+>)/);
  const source = parts
    .map((p) => {
      const placeholder = /^<([^<>]+)>$/.exec(p);
      if (!placeholder) return escape(p);
      const name = placeholder[1]!;
      return Object.prototype.hasOwnProperty.call(vars, name) ? escape(vars[name]!) : '[\\s\\S]+?';
    })
    .join('');
  return new RegExp(`^${source}$`);
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The differences between a documented JSON value and a real one ([] when they match). */
export function jsonDifferences(documented: unknown, actual: unknown, vars: Record<string, string>, at = '$'): string[] {
  // A documented "<…>" alone also stands for a number that differs between calls (a latency).
  if (documented === '<…>' && typeof actual === 'number') return [];
  if (typeof documented === 'string') {
    return typeof actual === 'string' && valuePattern(documented, vars).test(actual) ? [] : [`${at}: documented ${JSON.stringify(documented)}, got ${JSON.stringify(actual)}`];
  }
  if (Array.isArray(documented)) {
    if (!Array.isArray(actual) || actual.length !== documented.length) return [`${at}: documented ${JSON.stringify(documented)}, got ${JSON.stringify(actual)}`];
    return documented.flatMap((d, i) => jsonDifferences(d, actual[i], vars, `${at}[${i}]`));
  }
  if (documented !== null && typeof documented === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return [`${at}: documented an object, got ${JSON.stringify(actual)}`];
    const doc = documented as Record<string, unknown>;
    const got = actual as Record<string, unknown>;
    const keys = (o: Record<string, unknown>) => Object.keys(o).sort().join(', ');
    if (keys(doc) !== keys(got)) return [`${at}: documented keys ${keys(doc)}, got ${keys(got)} (${JSON.stringify(actual)})`];
    return Object.keys(doc).flatMap((k) => jsonDifferences(doc[k], got[k], vars, `${at}.${k}`));
  }
  return Object.is(documented, actual) ? [] : [`${at}: documented ${JSON.stringify(documented)}, got ${JSON.stringify(actual)}`];
}

/** The differences between a documented message and a real one ([] when they match). */
export function messageDifferences(documented: HttpMessage, actual: HttpMessage, vars: Record<string, string>): string[] {
  const out: string[] = [];
  if (documented.status !== undefined && documented.status !== actual.status) out.push(`status: documented ${documented.status}, got ${actual.status}`);
  if (documented.method !== undefined && (documented.method !== actual.method || documented.path !== actual.path)) {
    out.push(`request line: documented ${documented.method} ${documented.path}, got ${actual.method} ${actual.path}`);
  }
  for (const [name, value] of documented.headers) {
    const got = actual.headers.filter(([n]) => n === name).map(([, v]) => v);
    if (got.length === 0) out.push(`header ${name}: documented, not sent`);
    else if (!got.some((v) => valuePattern(value, vars).test(v))) out.push(`header ${name}: documented "${value}", got "${got.join('", "')}"`);
  }
  if (documented.body === '' || actual.body === '') {
    if (documented.body !== actual.body) out.push(`body: documented ${JSON.stringify(documented.body)}, got ${JSON.stringify(actual.body)}`);
    return out;
  }
  let doc: unknown;
  let got: unknown;
  try {
    doc = JSON.parse(documented.body);
  } catch {
    return [...out, `body: the documented body is not JSON: ${documented.body}`];
  }
  try {
    got = JSON.parse(actual.body);
  } catch {
    return [...out, `body: documented JSON, got ${JSON.stringify(actual.body)}`];
  }
  return [...out, ...jsonDifferences(doc, got, vars)];
}
