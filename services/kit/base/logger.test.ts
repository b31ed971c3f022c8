/**
 * Secrets never reach a log line: redaction by field name (top level and nested) and
 * scrubbing of key/token/secret shapes from error messages.
 */
import { Writable } from 'node:stream';
import { createLogger, redactSecrets } from './logger';

/** A logger writing raw lines (exactly as they would reach stdout) into an array. */
function captureRaw(format: 'json' | 'pretty' = 'json') {
  const raw: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer | string, _enc, done) {
      raw.push(
        ...String(chunk)
          .split('\n')
          .filter((l) => l !== ''),
      );
      done();
    },
  });
  const log = createLogger({ level: 'info', name: 'psync', format }, sink);
  return { log, raw };
}

/** The keys of a JSON line as written, in order, repeats included (JSON.parse would hide them). */
function keysOf(line: string): string[] {
  return [...line.matchAll(/[{,]"([^"]+)":/g)].map((m) => m[1]!);
}

/** A logger writing into an array of parsed JSON lines. */
function capture(level = 'info') {
  const lines: Record<string, any>[] = [];
  const log = createLogger({ level, name: 'test' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { log, lines };
}

const KEY = 'psk_live_0123456789abcdefABCDEF';
const TOKEN = 'pst_eyJhbGciOiJIUzI1NiJ9.payload.sig';
const SECRET = 'whsec_QWxhZGRpbjpvcGVuIHNlc2FtZQ';

describe('createLogger', () => {
  test('redacts secret fields at any depth, inside arrays, and secret shapes in messages and values', () => {
    const { log, lines } = capture();
    log.info({ a: { b: { c: { apiKey: 'x1' } } }, items: [{ token: 'x2' }, { note: `key ${KEY}` }] }, `issued ${KEY} and ${TOKEN}`);
    const text = JSON.stringify(lines);
    expect(text).not.toContain('x1');
    expect(text).not.toContain('x2');
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(TOKEN);
    expect(lines[0]!.a.b.c.apiKey).toBe('[redacted]');
    expect(lines[0]!.msg).toContain('psk_[redacted]'); // log text on purpose: the logger scrubs messages
  });

  test('writes JSON lines with level label, service and time', () => {
    const { log, lines } = capture();
    log.info({ request_id: 'r1' }, 'hello');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'info', service: 'test', name: 'test', request_id: 'r1', msg: 'hello' }); // log text on purpose: the line's format
    expect(typeof lines[0]!.time).toBe('string');
  });

  test('respects the level', () => {
    const { log, lines } = capture('warn');
    log.info({ n: 1 }, 'dropped');
    log.warn({ n: 2 }, 'kept');
    expect(lines.map((l) => l.n)).toEqual([2]);
  });

  test.each(['apiKey', 'api_key', 'access_token', 'accessToken', 'signing_secret', 'signingSecret', 'authorization', 'token', 'secret', 'password'])(
    'redacts %s at top level',
    (field) => {
      const { log, lines } = capture();
      log.info({ [field]: KEY, keep: 'visible' }, 'x');
      expect(lines[0]![field]).toBe('[redacted]');
      expect(lines[0]!.keep).toBe('visible');
      expect(JSON.stringify(lines)).not.toContain(KEY);
    },
  );

  test.each(['apiKey', 'api_key', 'access_token', 'signing_secret', 'authorization'])('redacts %s nested one level down', (field) => {
    const { log, lines } = capture();
    log.info({ partner: { [field]: TOKEN, workspace_id: 'w1' } }, 'x');
    expect(lines[0]!.partner).toEqual({ [field]: '[redacted]', workspace_id: 'w1' });
    expect(JSON.stringify(lines)).not.toContain(TOKEN);
  });

  test('redacts Authorization and Cookie request headers', () => {
    const { log, lines } = capture();
    log.info({ req: { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, cookie: 'sid=1', 'content-type': 'application/json' } } }, 'request');
    log.info({ headers: { authorization: `Basic ${KEY}` } }, 'outbound');
    expect(lines[0]!.req.headers).toEqual({ authorization: '[redacted]', cookie: '[redacted]', 'content-type': 'application/json' });
    expect(lines[0]!.req.method).toBe('POST');
    expect(lines[1]!.headers.authorization).toBe('[redacted]');
    const all = JSON.stringify(lines);
    expect(all).not.toContain(TOKEN);
    expect(all).not.toContain(KEY);
  });

  test('redacts in child loggers and their bindings', () => {
    const { log, lines } = capture();
    log.child({ component: 'identity', apiKey: KEY }).info({ signing_secret: SECRET }, 'child');
    expect(lines[0]).toMatchObject({ component: 'identity', signing_secret: '[redacted]' });
    expect(JSON.stringify(lines)).not.toContain(KEY);
    expect(JSON.stringify(lines)).not.toContain(SECRET);
  });

  test("redacts a grandchild's bindings at any depth, and secret shapes in them", () => {
    const { log, lines } = capture();
    log
      .child({ component: 'gateway' })
      .child({ req: { headers: { authorization: `Bearer ${TOKEN}` } }, note: `key ${KEY}` })
      .info('grandchild');
    expect(lines[0]).toMatchObject({ component: 'gateway', req: { headers: { authorization: '[redacted]' } } });
    expect(JSON.stringify(lines)).not.toContain(TOKEN);
    expect(JSON.stringify(lines)).not.toContain(KEY);
  });

  test('scrubs key, token and secret shapes from error messages and stacks', () => {
    const { log, lines } = capture();
    const err = new Error(`key ${KEY} refused; token ${TOKEN}; secret ${SECRET}`);
    log.error({ err }, 'call failed');
    const out = lines[0]!;
    expect(out.err.message).toBe('key psk_[redacted] refused; token pst_[redacted]; secret whsec_[redacted]');
    expect(out.err.stack).toContain('psk_[redacted]');
    expect(out.err.type).toBe('Error');
    const all = JSON.stringify(lines);
    for (const s of [KEY, TOKEN, SECRET]) expect(all).not.toContain(s);
  });
});

describe('one key per line', () => {
  test("a child binding its parent's key replaces the value instead of writing the key twice", () => {
    const { log, raw } = captureRaw();
    const catalog = log.child({ component: 'catalog' });
    catalog.child({ component: 'catalog-photos' }).info({ listing_id: 'l1' }, 'photo fetched');
    catalog.info('catalog line');
    log.child({ service: 'other' }).info('service rebound');
    expect(raw).toHaveLength(3);
    for (const line of raw) {
      const keys = keysOf(line);
      expect(keys).toEqual([...new Set(keys)]);
    }
    expect(JSON.parse(raw[0]!)).toMatchObject({ service: 'psync', name: 'psync', component: 'catalog-photos', listing_id: 'l1' });
    expect(JSON.parse(raw[1]!)).toMatchObject({ component: 'catalog' });
    expect(JSON.parse(raw[2]!)).toMatchObject({ service: 'other' });
  });

  test("the hosted services' child loggers (service context, then a worker) write each key once", () => {
    const { log, raw } = captureRaw();
    // The chains run-process.ts and the service modules build: ctx.log is `component: <service>`.
    for (const [service, worker] of [
      ['catalog', 'catalog-photos'],
      ['notifications', 'webhook-dispatcher'],
      ['calendar', 'calendar-hold-sweeper'],
      ['calendar', 'calendar-event-retention'],
    ]) {
      log.child({ component: service }).child({ component: worker }).info('x');
    }
    for (const line of raw) expect(line.match(/"component":/g)).toHaveLength(1);
  });

  test("a child keeps its parent's level and redaction", () => {
    const { log, raw } = captureRaw();
    log.level = 'warn';
    const child = log.child({ component: 'a' }).child({ apiKey: KEY });
    child.info('dropped');
    child.warn('kept');
    expect(raw).toHaveLength(1);
    expect(raw[0]).not.toContain(KEY);
  });
});

describe('LOG_FORMAT=pretty', () => {
  test('writes one human line per entry: time, level, service/component, message, then the other fields', () => {
    const { log, raw } = captureRaw('pretty');
    log.child({ component: 'catalog' }).child({ component: 'catalog-photos' }).info({ listing_id: 'l1', apiKey: KEY }, 'photo fetched');
    log.warn('careful');
    expect(raw).toHaveLength(2);
    expect(raw[0]).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: psync\/catalog-photos: photo fetched \{"listing_id":"l1","apiKey":"\[redacted\]"\}$/);
    expect(raw[1]).toMatch(/^\[[\d:.]+\] WARN: psync: careful$/);
    for (const line of raw) expect(() => JSON.parse(line)).toThrow();
  });
});

describe('redactSecrets', () => {
  test('replaces every psk_/pst_/whsec_ shaped string', () => {
    expect(redactSecrets(`a ${KEY} b ${TOKEN} c ${SECRET}`)).toBe('a psk_[redacted] b pst_[redacted] c whsec_[redacted]');
    expect(redactSecrets(`Bearer ${TOKEN}`)).toBe('Bearer pst_[redacted]');
    expect(redactSecrets(`"${KEY}"`)).toBe('"psk_[redacted]"');
  });

  test('a secret glued to an identifier by an underscore or a dash is scrubbed too', () => {
    expect(redactSecrets(`resv_${KEY}`)).toBe('resv_psk_[redacted]');
    expect(redactSecrets(`b-${SECRET}`)).toBe('b-whsec_[redacted]');
  });

  test('leaves other text alone', () => {
    const text = 'workspace ws_123 listing lst_9 psk without underscore, apsk_x is part of a word';
    expect(redactSecrets(text)).toBe(text);
  });
});
