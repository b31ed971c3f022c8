/**
 * docs/partners/request-log.md, run as a partner runs it, with the partner guide's rules
 * (test/docs/partner-guide.test.ts, support/http-transcript.ts): every
 * `<!-- example: NAME -->` sh block run by bash, verbatim, in order, against a running
 * system with the guide's variables (`BASE`, `TOKEN`), its `curl -si` output compared
 * with the `<!-- response: NAME -->` block. Before the log is read, the refused request
 * is recorded (as a partner would wait a moment), and the `instance` the log shows is
 * the refused answer's.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/process';
import { Partners } from '../gateway/partners';
import { send } from '../gateway/http-client';
import { eventually } from '../notifications/support/harness';
import { messageDifferences, parseCurlOutput, parseDocumented } from './support/http-transcript';
import { fencedBlocks } from './support/markdown';
import { shellEnvironment } from './support/terminal';
import { runCommand, useSystem } from '../support/system';

const GUIDE = 'docs/partners/request-log.md';
const blocks = fencedBlocks(readFileSync(join(ROOT, GUIDE), 'utf8'));
const examples = blocks.filter((b) => b.kind === 'example');
const responseOf = (name: string) => blocks.find((b) => b.kind === 'response' && b.name === name);

const inUse = useSystem();
let partners: Partners;
let vars: Record<string, string>;
let auth: Record<string, string>;
/** What each example printed, by name. */
const printed = new Map<string, ReturnType<typeof parseCurlOutput>>();

beforeAll(async () => {
  partners = new Partners(inUse.system);
  const partner = await partners.partner('sandbox');
  auth = partner.auth;
  vars = { BASE: `${inUse.system.gatewayUrl}/v1`, TOKEN: partner.token };
}, 60_000);

afterAll(() => partners?.close());

describe(`${GUIDE}, every example against a running system`, () => {
  test('every example has its response, and every response its example', () => {
    expect(examples.map((e) => e.name)).toEqual(['refused-block', 'find-refused', 'bad-parameters']);
    for (const e of examples) expect([e.name, e.lang, responseOf(e.name)?.kind]).toEqual([e.name, 'sh', 'response']);
  });

  for (const example of examples) {
    test(`${example.name} (${GUIDE}:${example.line})`, async () => {
      if (example.name === 'find-refused') {
        await eventually(
          async () => (await send(inUse.system.gatewayUrl, { path: '/v1/requests?status=400', headers: auth })).json.items.length > 0,
          15_000,
          'the refused request recorded',
        );
      }
      const r = await runCommand('bash', ['-c', example.code], shellEnvironment(ROOT, vars), 30_000);
      expect([r.code, r.stderr]).toEqual([0, '']);
      const actual = parseCurlOutput(r.stdout);
      printed.set(example.name, actual);
      expect(messageDifferences(parseDocumented(responseOf(example.name)!.code), actual, vars)).toEqual([]);
    }, 60_000);
  }

  test("the log's instance is the refused answer's", () => {
    const refused = JSON.parse(printed.get('refused-block')!.body);
    const found = JSON.parse(printed.get('find-refused')!.body);
    expect(found.items[0].instance).toBe(refused.instance);
  });
});
