/**
 * The README's Quickstart, followed as a person follows it: on a fresh copy of the
 * repository (support/fresh-copy.ts), every `sh` block of the section pasted verbatim
 * into the terminal its annotation names (`<!-- quickstart: terminal=N -->`), in
 * order. A block marked `background` is a server the README says to leave running:
 * the test waits for the text its `ready` attribute gives (what the README tells the
 * person to wait for) before the next block.
 *
 * The environment is a fresh shell's (support/terminal.ts `shellEnvironment`): the
 * embedded default whatever the test run uses, and only what the README says its
 * commands honour — `PORT`, `INTERNAL_PORT` and `PSYNC_INTERNAL_URL`, set to free ports
 * here because 8080 and 8081 may be taken on a machine running tests. The receiver's
 * port is fixed (8443, one of the two a webhook may use): while another test file
 * holds it the receiver waits, and so does this test.
 *
 * The end of it: the receiver printed a verified `booking.confirmed` of the booking the
 * README made, the conflict step answered 409 with the nights it names, and the
 * console the last step opens shows, in headless Chromium (test/support/browser.ts)
 * signed in with the key it printed, the block and the booking on their nights; its
 * calendar is photographed for the README (test-results/console/quickstart-calendar.png,
 * copied to docs/images/console-quickstart.png).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium } from '../support/browser';
import { ROOT } from '../support/process';
import { freePort } from '../support/system';
import { fencedBlocks, section, type AnnotatedBlock } from './support/markdown';
import { freshCopy, type FreshCopy } from './support/fresh-copy';
import { shellEnvironment, Terminal } from './support/terminal';

const MINUTE = 60_000;
/** `npm ci` downloads and installs every package: minutes on a busy machine. */
const BLOCK_TIMEOUT_MS = 12 * MINUTE;
/** A background server's ready line; the receiver may wait for port 8443 while other test files hold it. */
const READY_TIMEOUT_MS = 12 * MINUTE;

const quickstart = fencedBlocks(section(readFileSync(join(ROOT, 'README.md'), 'utf8'), 'Quickstart'));
const steps = quickstart.filter((b) => b.kind === 'quickstart');

describe('README quickstart', () => {
  test('every shell block of the section says in which terminal it runs, and the steps are all there', () => {
    const unannotated = quickstart.filter((b) => b.lang === 'sh' && b.kind !== 'quickstart').map((b) => `README.md:${b.line}`);
    expect(unannotated).toEqual([]);
    for (const b of steps) {
      expect([b.line, b.attributes.terminal]).toEqual([b.line, expect.stringMatching(/^\d+$/)]);
      if (b.attributes.background) expect([b.line, b.attributes.ready]).toEqual([b.line, expect.any(String)]);
    }
    const all = steps.map((b) => b.code).join('');
    for (const step of [
      'npm ci',
      'examples/webhook-receiver.mjs',
      'npm start',
      'bin/psync workspace create',
      'bin/psync key issue',
      '/token',
      '/properties/',
      '/blocks/',
      '/webhooks/endpoint',
      'bin/psync booking confirm',
      '/console/',
    ]) {
      expect([step, all.includes(step)]).toEqual([step, true]);
    }
  });
});

describe('README quickstart, verbatim on a fresh copy (embedded default)', () => {
  let copy: FreshCopy;
  const terminals = new Map<string, Terminal>();
  let env: Record<string, string>;

  beforeAll(async () => {
    copy = freshCopy('psync-quickstart-');
    const internalPort = await freePort();
    env = shellEnvironment(ROOT, {
      PORT: String(await freePort()),
      INTERNAL_PORT: String(internalPort),
      PSYNC_INTERNAL_URL: `http://127.0.0.1:${internalPort}`,
    });
  });

  afterAll(async () => {
    await Promise.all([...terminals.values()].map((t) => t.close()));
    copy?.remove();
  }, 2 * MINUTE);

  function terminal(block: AnnotatedBlock): Terminal {
    const name = `terminal ${block.attributes.terminal}`;
    let t = terminals.get(name);
    if (!t) terminals.set(name, (t = new Terminal(name, copy.dir, env)));
    return t;
  }

  test(
    'a property pushed, a block placed, a booking confirmed, its booking.confirmed verified by the local receiver',
    async () => {
      const printed = new Map<AnnotatedBlock, string>();
      for (const block of steps) {
        const t = terminal(block);
        if (block.attributes.background) {
          const from = t.start(block.code);
          await t.waitFor(block.attributes.ready!, from, READY_TIMEOUT_MS, `"${block.attributes.ready}" (README.md:${block.line})`);
        } else {
          printed.set(block, await t.run(block.code, BLOCK_TIMEOUT_MS));
        }
      }

      const booked = steps.find((b) => b.code.includes('bin/psync booking confirm'))!;
      const reference = (JSON.parse(printed.get(booked)!) as { booking_reference: string }).booking_reference;
      expect(reference).toMatch(/^BK/);

      // The receiver's terminal: `verified booking.confirmed <event_id> (X-Signature)`, then the event as JSON.
      const receiver = terminals.get(`terminal ${steps.find((b) => b.code.includes('webhook-receiver.mjs'))!.attributes.terminal}`)!;
      const shown = await receiver.waitFor(
        new RegExp(`verified booking\\.confirmed [0-9a-f-]{36} \\(X-Signature\\)\\n\\{[\\s\\S]*?"${reference}"[\\s\\S]*?\\n\\}\\n`),
        0,
        MINUTE,
        'the verified booking.confirmed',
      );
      const at = shown.indexOf('verified booking.confirmed');
      const json = shown.slice(shown.indexOf('\n', at) + 1);
      const event = JSON.parse(json.slice(0, json.indexOf('\n}\n') + 2));
      expect(event).toEqual({
        event_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        event_type: 'booking.confirmed',
        occurred_at: expect.any(String),
        data: expect.objectContaining({
          booking_reference: reference,
          provider_id: 'villa-azure',
          check_in: '2030-07-20',
          check_out: '2030-07-24',
          guest_name: 'Ada Lovelace',
          amount_paid: { value: '720.00', currency: 'EUR' },
        }),
      });
      expect(shown).toContain('challenge answered');
      expect(shown).not.toContain('REJECTED');

      const conflict = steps.find((b) => b.code.includes('resv-1002'))!;
      expect(JSON.parse(printed.get(conflict)!)).toEqual({ status: 409, code: 'conflict', conflicts: ['2030-07-22', '2030-07-23'] });

      // The last step: the console, signed in with the key it printed.
      const pushed = printed.get(steps.find((b) => b.code.includes('echo "listing: $LISTING"'))!)!;
      const listing = /^listing: (\S+)$/m.exec(pushed)![1]!;
      const opened = printed.get(steps.find((b) => b.code.includes('/console/'))!)!;
      const apiKey = /^API key: (\S+)$/m.exec(opened)![1]!;
      const consoleUrl = /^console: (\S+)$/m.exec(opened)![1]!;
      const browser = await launchChromium();
      try {
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        await page.goto(consoleUrl);
        await page.getByLabel('API key').fill(apiKey);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Calendar', exact: true }).click();
        await page.getByLabel('Listing').selectOption(listing);
        await page.getByLabel('Month').fill('2030-07');
        await page.getByRole('button', { name: 'Show' }).click();
        await page.getByRole('grid').locator('[data-date="2030-07-31"]').waitFor();
        const taken = await page
          .getByRole('grid')
          .locator('[data-date]:not([data-state="free"])')
          .evaluateAll((cells) => cells.map((c) => `${c.getAttribute('data-date')} ${c.getAttribute('data-state')}`));
        expect(taken).toEqual([
          ...['2030-07-10', '2030-07-11', '2030-07-12'].map((d) => `${d} blocked`),
          ...['2030-07-20', '2030-07-21', '2030-07-22', '2030-07-23'].map((d) => `${d} booked`),
        ]);
        await page.getByRole('grid').locator('[data-date="2030-07-20"]').click();
        await page.getByRole('region', { name: 'Night of 2030-07-20' }).getByText(reference, { exact: true }).waitFor();
        mkdirSync(join(ROOT, 'test-results', 'console'), { recursive: true });
        await page.screenshot({ path: join(ROOT, 'test-results', 'console', 'quickstart-calendar.png') });
      } finally {
        await browser.close();
      }
    },
    40 * MINUTE,
  );
});
