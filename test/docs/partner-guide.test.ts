/**
 * The partner guide (docs/partners/) executed: every example runs against a running
 * system and must get the answer the page shows.
 *
 * The pages mark their blocks with annotations (support/markdown.ts):
 * - `<!-- file: NAME schema=S -->` before a JSON block: saved as NAME in the examples'
 *   directory (the examples send it with `--data @NAME`), and valid against the
 *   gateway's schema S;
 * - `<!-- example: NAME -->` before a `sh` block: run by bash, verbatim, in that
 *   directory, with the variables the guide's index lists (BASE, API_KEY, TOKEN,
 *   LISTING_ID, WEBHOOK_URL, EVENT_ID, PROD_API_KEY);
 * - `<!-- response: NAME -->` before an `http` block: what example NAME must print
 *   (`curl -si`), compared as support/http-transcript.ts says;
 * - `<!-- delivery: NAME -->` before an `http` block: a webhook delivery, compared with
 *   the one the partner's receiver got, whose signature is verified too.
 *
 * Pages run in the order of PAGES, blocks in page order, so state builds up as a
 * partner's would (a token, a property, blocks, the endpoint, deliveries). What a page
 * describes as happening elsewhere — a guest booking, an operator rotating the secret,
 * a spent quota — is done here before the example that shows it (BEFORE, DELIVERIES),
 * through the operator CLI as the pages say.
 *
 * Tables the pages state as facts are checked against the code: every problem `code`
 * with its status, every `errors[].code`, the retry schedule.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROBLEM_CODES, VIOLATION_CODES } from '../../gateway/problems';
import { schemas } from '../support/request-validators';
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE } from '../../services/kit/runtime';
import { send } from '../gateway/http-client';
import { Partners } from '../gateway/partners';
import { psync } from '../notifications/support/harness';
import { verifyDelivery, type Received } from '../notifications/support/receiver';
import { webhookSuite } from '../notifications/support/suite';
import { ROOT } from '../support/process';
import { runCommand } from '../support/system';
import { messageDifferences, parseCurlOutput, parseDocumented, jsonDifferences, valuePattern, type HttpMessage } from './support/http-transcript';
import { fencedBlocks, section, type AnnotatedBlock } from './support/markdown';
import { shellEnvironment } from './support/terminal';

const GUIDE = join(ROOT, 'docs/partners');
/** The guide's pages with examples, in the order a partner meets them (the index's order). */
const PAGES = ['authentication.md', 'properties.md', 'blocks.md', 'webhooks.md', 'erasure.md', 'rate-limits.md', 'environments.md', 'errors.md'];
const read = (page: string) => readFileSync(join(GUIDE, page), 'utf8');

type Step =
  | { kind: 'file'; page: string; block: AnnotatedBlock }
  | { kind: 'example'; page: string; name: string; code: string; response: HttpMessage; line: number }
  | { kind: 'delivery'; page: string; name: string; documented: HttpMessage; line: number };

/** The steps of one page; throws on a malformed page (an example without its response, …). */
function stepsOf(page: string): Step[] {
  const blocks = fencedBlocks(read(page)).filter((b) => b.kind !== '');
  const steps: Step[] = [];
  for (let i = 0; i < blocks.length; i++) {
    const b = blocks[i]!;
    const where = `${page}:${b.line}`;
    if (b.kind === 'file') steps.push({ kind: 'file', page, block: b });
    else if (b.kind === 'example') {
      const next = blocks[i + 1];
      if (b.lang !== 'sh' || next?.kind !== 'response' || next.name !== b.name || next.lang !== 'http') {
        throw new Error(`${where}: example "${b.name}" must be a sh block followed by <!-- response: ${b.name} --> and an http block`);
      }
      steps.push({ kind: 'example', page, name: b.name, code: b.code, response: parseDocumented(next.code), line: b.line });
      i++;
    } else if (b.kind === 'delivery') {
      if (b.lang !== 'http') throw new Error(`${where}: delivery "${b.name}" must be an http block`);
      steps.push({ kind: 'delivery', page, name: b.name, documented: parseDocumented(b.code), line: b.line });
    } else throw new Error(`${where}: unknown annotation "${b.kind}"`);
  }
  return steps;
}

describe('the comparison of documented and real messages', () => {
  const documented = parseDocumented('HTTP/1.1 200 OK\nContent-Type: application/json\n\n{ "id": "<LISTING_ID>", "at": "<date-time>", "n": 3, "list": ["a"] }\n');
  const actual = (body: unknown, status = 200): HttpMessage => ({ status, headers: [['content-type', 'application/json']], body: JSON.stringify(body) });
  const vars = { LISTING_ID: 'lst_1' };

  test('placeholders: a variable is its value, anything else any non-empty text', () => {
    expect(messageDifferences(documented, actual({ id: 'lst_1', at: '2030-01-01T00:00:00Z', n: 3, list: ['a'] }), vars)).toEqual([]);
    expect(messageDifferences(documented, actual({ id: 'lst_2', at: 'x', n: 3, list: ['a'] }), vars)).toHaveLength(1);
    expect(valuePattern('urn:psync:request:<id>', {}).test('urn:psync:request:')).toBe(false);
  });

  test('a status, a key, an array length or a header that differs is reported', () => {
    const ok = { id: 'lst_1', at: 't', n: 3, list: ['a'] };
    expect(messageDifferences(documented, actual(ok, 201), vars)).toEqual(['status: documented 200, got 201']);
    expect(messageDifferences(documented, actual({ ...ok, extra: true }), vars)).toHaveLength(1);
    expect(messageDifferences(documented, actual({ ...ok, list: ['a', 'b'] }), vars)).toHaveLength(1);
    expect(messageDifferences(documented, { ...actual(ok), headers: [] }, vars)).toEqual(['header content-type: documented, not sent']);
    expect(jsonDifferences(4, 3, {})).toHaveLength(1);
  });

  test('curl -si output is read past interim 1xx answers', () => {
    const out = 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX-Request-Id: 1\r\n\r\n';
    expect(parseCurlOutput(out)).toEqual({ status: 204, headers: [['x-request-id', '1']], body: '' });
  });
});

describe('partner guide: what the pages state', () => {
  test('the index links every page the test runs, and each page is well formed with examples', () => {
    const index = read('README.md');
    for (const page of PAGES) {
      expect([page, index.includes(`](${page})`)]).toEqual([page, true]);
      expect([page, stepsOf(page).filter((s) => s.kind === 'example').length > 0]).toEqual([page, true]);
    }
  });

  test('errors.md lists every problem code with its status, and every errors[].code', () => {
    const text = read('errors.md');
    const codes = [...text.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1], Number(m[2])]);
    expect(codes).toEqual(Object.entries(PROBLEM_CODES).map(([code, p]) => [code, p.status]));
    const violations = [...section(text, 'Validation errors').matchAll(/^\| `([a-z_]+)` \| [^|]+ \|$/gm)].map((m) => m[1]);
    expect(violations).toEqual([...VIOLATION_CODES]);
  });

  test('webhooks.md states the default retry schedule', () => {
    const seconds = (text: string) =>
      text === 'at once' ? 0 : [...text.matchAll(/(\d+) (h|min|s)\b/g)].reduce((sum, m) => sum + Number(m[1]) * { h: 3600, min: 60, s: 1 }[m[2] as 'h' | 'min' | 's'], 0);
    const rows = [...read('webhooks.md').matchAll(/^\| (\d+) \| ([^|]+) \| ([^|]+) \|$/gm)].map((m) => ({ attempt: Number(m[1]), delay: m[2]!.trim(), total: m[3]!.trim() }));
    expect(rows.map((r) => r.attempt)).toEqual(Array.from({ length: DEFAULT_WEBHOOK_RETRY_SCHEDULE.length + 1 }, (_, i) => i + 1));
    expect(rows.slice(1).map((r) => seconds(r.delay))).toEqual(DEFAULT_WEBHOOK_RETRY_SCHEDULE);
    let total = 0;
    expect(rows.map((r, i) => seconds(r.total) - (total += i === 0 ? 0 : DEFAULT_WEBHOOK_RETRY_SCHEDULE[i - 1]!))).toEqual(rows.map(() => 0));
  });
});

describe('partner guide: every example against a running system', () => {
  const suite = webhookSuite('partner-guide');
  let partners: Partners;
  let dir: string;
  const vars: Record<string, string> = {};
  /** The workspace the examples' key belongs to. */
  let workspaceId: string;
  /** Secrets the partner holds: the first from the registration, then a rotation's. */
  const secrets: { current?: string; previous?: string } = {};
  /** receiver.received.length when each example started. */
  const receivedBefore = new Map<string, number>();
  /** The booking of the booking-confirmed delivery (cancelled by the next one). */
  let confirmedReference = '';

  const confirm = (checkIn: string, checkOut: string, guestName: string, partySize: number, amount: string, guestId = `guest-${randomUUID()}`) =>
    psync(suite.system, [
      'booking',
      'confirm',
      '--listing',
      vars.LISTING_ID!,
      '--check-in',
      checkIn,
      '--check-out',
      checkOut,
      '--guest-id',
      guestId,
      '--guest-name',
      guestName,
      '--party-size',
      String(partySize),
      '--amount',
      amount,
      '--currency',
      'EUR',
    ]);

  /** Done before the example or delivery of that name; may change variables for that example only. */
  const BEFORE: Record<string, () => Promise<Record<string, string> | void>> = {
    // "once fetching has ended": both photos settled (rejected: the .example host does not resolve).
    'put-property-again': async () => {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const shown = await psync(suite.system, ['property', 'show', '--workspace', workspaceId, '--provider-id', 'villa-42']);
        if (!shown.missing.includes('photos_processing')) return;
        if (Date.now() > deadline) throw new Error(`photos still processing: ${JSON.stringify(shown)}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    },
    // "a guest has booked the nights of 2 and 3 August".
    'block-conflict': async () => {
      await confirm('2030-08-02', '2030-08-04', 'Ada Lovelace', 2, '360.00');
    },
    // "once the quota is spent": another key of the workspace kind, its hour used up.
    'rate-limited': async () => {
      const spent = await partners.partner('sandbox');
      let limited = false;
      for (let sent = 0; !limited && sent < 2000; sent += 20) {
        const answers = await Promise.all(Array.from({ length: 20 }, () => send(suite.system.gatewayUrl, { path: '/v1/blocks?page_size=1', headers: spent.auth })));
        limited = answers.some((a) => a.status === 429);
      }
      if (!limited) throw new Error('the quota was never used up');
      return { TOKEN: spent.token };
    },
  };

  /** How each documented delivery comes about: an example that caused it, or an operator's action. */
  const DELIVERIES: Record<string, { causedBy: string } | { trigger: () => Promise<void> }> = {
    challenge: { causedBy: 'register-endpoint' },
    'booking-confirmed': {
      trigger: async () => {
        confirmedReference = (await confirm('2030-09-04', '2030-09-06', 'Grace Hopper', 2, '360.00')).booking_reference;
      },
    },
    'booking-cancelled': {
      trigger: async () => {
        await psync(suite.system, ['booking', 'cancel', '--booking', confirmedReference, '--initiated-by', 'guest']);
      },
    },
    'during-rotation': {
      trigger: async () => {
        const rotated = await psync(suite.system, ['webhook', 'rotate-secret', '--workspace', workspaceId]);
        [secrets.previous, secrets.current] = [secrets.current, rotated.signing_secret];
        await confirm('2030-09-10', '2030-09-11', 'Katherine Johnson', 1, '180.00');
      },
    },
    'user-erased': {
      trigger: async () => {
        const guestId = `guest-${randomUUID()}`;
        await confirm('2030-09-20', '2030-09-22', 'Mary Jackson', 2, '360.00', guestId);
        await psync(suite.system, ['user', 'erase', '--guest-id', guestId]);
      },
    },
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'psync-partner-guide-'));
    partners = new Partners(suite.system);
    const sandbox = await partners.partner('sandbox');
    workspaceId = sandbox.workspaceId;
    const production = await partners.identity.issueKey({ workspaceId: await partners.workspace('production') });
    Object.assign(vars, {
      BASE: `${suite.system.gatewayUrl}/v1`,
      API_KEY: sandbox.apiKey,
      TOKEN: sandbox.token,
      LISTING_ID: (await suite.clients.catalog.createListing({ workspaceId })).listing!.listingId,
      WEBHOOK_URL: `${suite.receiver.baseUrl}/webhooks/psync`,
      PROD_API_KEY: production.apiKey,
    });
  }, 120_000);

  afterAll(() => {
    partners?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function runExample(step: Extract<Step, { kind: 'example' }>): Promise<HttpMessage> {
    const extra = (await BEFORE[step.name]?.()) ?? {};
    const env = shellEnvironment(ROOT, { ...vars, ...extra });
    receivedBefore.set(step.name, suite.receiver.received.length);
    const res = await runCommand('bash', ['-c', `set -o pipefail\n${step.code}`], env, 60_000, { cwd: dir });
    expect([`${step.page}:${step.line}`, res.code, res.stderr]).toEqual([`${step.page}:${step.line}`, 0, '']);
    const got = parseCurlOutput(res.stdout);
    expect([`${step.page}:${step.line} ${step.name}`, messageDifferences(step.response, got, { ...vars, ...extra })]).toEqual([`${step.page}:${step.line} ${step.name}`, []]);
    return got;
  }

  async function checkDelivery(step: Extract<Step, { kind: 'delivery' }>): Promise<Received> {
    const how = DELIVERIES[step.name];
    if (!how) throw new Error(`${step.page}:${step.line}: delivery "${step.name}" has no entry in DELIVERIES`);
    let from = suite.receiver.received.length;
    if ('trigger' in how) await how.trigger();
    else from = receivedBefore.get(how.causedBy) ?? Number.NaN;
    const kind = (JSON.parse(step.documented.body) as { event_type: string }).event_type;
    const delivery = await suite.receiver.waitFor(
      () => suite.receiver.received.slice(from).find((r) => r.json?.event_type === kind),
      30_000,
      `the ${kind} delivery of ${step.page}:${step.line}`,
    );
    const actual: HttpMessage = { method: delivery.method, path: delivery.path, headers: Object.entries(delivery.headers), body: delivery.raw };
    expect([`${step.page}:${step.line} ${step.name}`, messageDifferences(step.documented, actual, vars)]).toEqual([`${step.page}:${step.line} ${step.name}`, []]);
    // Signed as webhooks.md says: X-Signature under the current secret, X-Signature-Previous under the old one in an overlap.
    expect(verifyDelivery(delivery, secrets.current!)).toEqual({ ok: true, matched: 'signature' });
    if (step.documented.headers.some(([n]) => n === 'x-signature-previous')) expect(verifyDelivery(delivery, secrets.previous!)).toEqual({ ok: true, matched: 'previous' });
    return delivery;
  }

  test.each(PAGES)(
    '%s',
    async (page) => {
      for (const step of stepsOf(page)) {
        if (step.kind === 'file') {
          const name = step.block.name;
          const schema = step.block.attributes.schema as keyof typeof schemas | undefined;
          if (schema) expect([name, schemas[schema].violations(JSON.parse(step.block.code))]).toEqual([name, []]);
          writeFileSync(join(dir, name), step.block.code);
        } else if (step.kind === 'example') {
          const got = await runExample(step);
          if (step.name === 'register-endpoint') secrets.current = JSON.parse(got.body).signing_secret;
        } else {
          const delivery = await checkDelivery(step);
          if (step.name === 'user-erased') vars.EVENT_ID = delivery.json.event_id;
        }
      }
    },
    180_000,
  );

  test('every action of this test belongs to an example or delivery the pages still have', () => {
    const names = new Set(PAGES.flatMap((p) => stepsOf(p).flatMap((s) => (s.kind === 'file' ? [] : [s.name]))));
    const causes = Object.values(DELIVERIES).flatMap((d) => ('causedBy' in d ? [d.causedBy] : []));
    for (const name of [...Object.keys(BEFORE), ...Object.keys(DELIVERIES), ...causes, 'register-endpoint', 'user-erased']) expect([name, names.has(name)]).toEqual([name, true]);
  });
});
