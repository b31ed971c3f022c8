/**
 * The sandbox console in a real browser (Debian's Chromium through playwright-core,
 * test/support/browser.ts) against the whole running system: a partner signs in with
 * an API key, watches a pushed property become publishable, finds a block, a booking
 * and a hold on the right nights of the calendar, sends a test event and watches its
 * delivery arrive, finds a failed request by its instance, reads the events feed and
 * signs out. Every page is checked with axe-core (no serious or critical violation) and
 * photographed into test-results/console/ (CONSOLE_SCREENSHOTS overrides it).
 *
 * Around it: the key is sent only to POST /v1/token and never stored, every request
 * stays on the gateway's origin, the page runs under its Content-Security-Policy
 * without a single violation, the token is renewed before it expires while the page
 * sits idle (TOKEN_TTL_SECONDS=40 here), sign-out stops every poll and renewal (no
 * request leaves the page after it), and a production key gets the 501 banner.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { validProperty } from '../gateway/fixtures';
import { send, jsonRequest, type Received } from '../gateway/http-client';
import { Partners, type Partner } from '../gateway/partners';
import { startPhotoServer, makeImage, type PhotoServer } from '../catalog/support/photo-server';
import { echoAndAccept, echoThen } from '../notifications/support/receiver';
import { webhookSuite } from '../notifications/support/suite';
import { renewInMs } from '../../console/src/renewal';
import { launchChromium } from '../support/browser';
import { eventually } from '../support/eventually';
import { ROOT } from '../support/process';

const TOKEN_TTL_SECONDS = 40;
const suite = webhookSuite('console', { env: { TOKEN_TTL_SECONDS: String(TOKEN_TTL_SECONDS) } });
const SHOTS = process.env.CONSOLE_SCREENSHOTS ?? join(ROOT, 'test-results', 'console');
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

let partners: Partners;
let photos: PhotoServer;
let browser: Browser;

beforeAll(async () => {
  partners = new Partners(suite.system);
  photos = await startPhotoServer();
  browser = await launchChromium();
  mkdirSync(SHOTS, { recursive: true });
}, 600_000);

afterAll(async () => {
  await browser?.close();
  partners?.close();
  await photos?.close();
});

/** A public call as `p`, with a token exchanged for it (tokens live 40 s in this system). */
async function call(p: Partner, method: string, path: string, body?: unknown): Promise<Received> {
  const headers = { Authorization: `Bearer ${await partners.exchange(p.apiKey)}` };
  return send(suite.system.gatewayUrl, body === undefined ? { method, path, headers } : jsonRequest(method, path, body, headers));
}

/** What the page sent: every request, with all its headers and body. */
interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | null;
}

interface Watched {
  context: BrowserContext;
  page: Page;
  sent: Promise<Sent>[];
  /** Console messages and page errors that name a Content-Security-Policy violation or an uncaught error. */
  problems: string[];
}

async function openConsole(): Promise<Watched> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const sent: Promise<Sent>[] = [];
  const problems: string[] = [];
  page.on('request', (r: Request) => {
    sent.push(r.allHeaders().then((headers) => ({ method: r.method(), url: r.url(), headers, body: r.postData() })));
  });
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of (4\d\d|501)/.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  const res = await page.goto(`${suite.system.gatewayUrl}/console/`);
  expect(res?.status()).toBe(200);
  return { context, page, sent, problems };
}

async function signIn(page: Page, apiKey: string): Promise<void> {
  await page.getByLabel('API key').fill(apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
}

async function go(page: Page, name: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name, exact: true }).click();
  await page.getByRole('heading', { name, level: 1 }).waitFor();
}

/** The browser globals the functions run in the page touch (this project's type-check has no DOM library). */
interface PageGlobals {
  axe: { run(context: unknown, options: object): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> };
  document: { activeElement: { getAttribute(name: string): string | null } | null; cookie: string };
  localStorage: { length: number };
  sessionStorage: { length: number };
}

/** axe-core over the page as it stands: no serious or critical violation (WCAG 2.1 A and AA rules). */
async function expectAccessible(page: Page, label: string): Promise<void> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const g = globalThis as unknown as PageGlobals;
    const r = await g.axe.run(g.document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(' ')) }));
  });
  expect({ page: label, violations: violations.filter((v) => v.impact === 'serious' || v.impact === 'critical') }).toEqual({ page: label, violations: [] });
}

async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** Clicks `button` until `done` is visible (each click is one read of the API), at most `tries` times. */
async function clickUntil(page: Page, button: string, done: string, tries = 20): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await page.locator(done).count()) return;
    await page.getByRole('button', { name: button, exact: true }).click();
    try {
      await page.locator(done).first().waitFor({ timeout: 1500 });
      return;
    } catch {
      // not yet: read again
    }
  }
  await page.locator(done).first().waitFor({ timeout: 1000 });
}

describe('the sandbox console', () => {
  test('a partner signs in, sees its property, calendar, deliveries, requests and events, and signs out; the key goes only to POST /v1/token', async () => {
    const p = await partners.partner();
    const dir = `/${p.workspaceId}`;
    await photos.image(`${dir}/cover.jpg`, 800, 600);
    photos.route(`${dir}/terrace.jpg`, { kind: 'hold', body: await makeImage(800, 600, 'jpeg', 2) });
    const property = {
      ...validProperty(),
      photos: [
        { url: `${photos.base}${dir}/cover.jpg`, position: 0 },
        { url: `${photos.base}${dir}/terrace.jpg`, position: 1 },
      ],
    };
    expect((await call(p, 'PUT', '/v1/properties/villa-42', property)).status).toBe(200);
    const receiverPath = `/console/${p.workspaceId}`;
    suite.receiver.on(receiverPath, echoAndAccept);
    const endpointUrl = `${suite.receiver.baseUrl}${receiverPath}`;
    expect((await call(p, 'PUT', '/v1/webhooks/endpoint', { url: endpointUrl, events: ['booking.confirmed', 'booking.cancelled', 'user.erased'] })).status).toBe(200);
    const failed = await call(p, 'PUT', '/v1/properties/broken', { name: '' });
    expect(failed.status).toBe(400);
    const failedInstance = failed.json.instance as string;

    const { context, page, sent, problems } = await openConsole();
    const csp = (await page.request.get(`${suite.system.gatewayUrl}/console/`)).headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');

    // Sign in: the key is exchanged, the input emptied.
    await expectAccessible(page, 'sign-in');
    await shoot(page, 'sign-in');
    await signIn(page, p.apiKey);
    const signedInAt = Date.now();
    await page.getByText(p.workspaceId).first().waitFor();
    await page
      .getByTestId('overview-rate-limit')
      .filter({ hasText: /\d+ of 600/ })
      .waitFor();
    await expectAccessible(page, 'overview');
    await shoot(page, 'overview');

    // Properties: not publishable while a photo is processing, publishable once it arrives.
    await go(page, 'Properties');
    const row = page.locator('tr[data-provider-id="villa-42"]');
    await row.waitFor();
    expect(await row.textContent()).toContain('not publishable');
    expect(await row.textContent()).toContain('photos_processing');
    photos.release(`${dir}/terrace.jpg`);
    await clickUntil(page, 'Refresh', 'tr[data-provider-id="villa-42"]:has(.badge.good:text-is("publishable"))');
    expect(await row.locator('.photo-states li').allTextContents()).toEqual(['#0 ready', '#1 ready']);
    await expectAccessible(page, 'properties');
    await shoot(page, 'properties');
    await row.getByRole('link', { name: 'villa-42' }).click();
    await page.getByRole('heading', { name: 'Property villa-42', level: 1 }).waitFor();
    await page.getByText('"Harbour loft"').waitFor();
    await expectAccessible(page, 'property');
    await shoot(page, 'property');

    // The marketplace's side of the calendar: the partner's block, a booking and a live hold.
    const listingId = (await call(p, 'GET', '/v1/properties/villa-42')).json.listing_id as string;
    expect(listingId).toEqual(expect.any(String));
    expect((await call(p, 'PUT', '/v1/blocks/res-981', { listing_id: listingId, check_in: '2032-03-02', check_out: '2032-03-04' })).status).toBe(200);
    const guest = { guestId: `g-${p.workspaceId}`, guestName: 'Ada Guest', partySize: 2, amountPaid: { value: '200.00', currency: 'EUR' }, requiresPayment: false };
    const booking = await suite.clients.calendar.confirmBooking({ listingId, checkIn: '2032-03-10', checkOut: '2032-03-12', ...guest });
    const reference = booking.booking!.bookingReference;
    await suite.clients.calendar.placeHold({ listingId, checkIn: '2032-03-15', checkOut: '2032-03-16', ttlSeconds: 3600, requiresPayment: false });

    await go(page, 'Calendar');
    await page.getByLabel('Listing').selectOption(listingId);
    await page.getByLabel('Month').fill('2032-02');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByRole('heading', { name: 'February 2032' }).waitFor();
    await page.getByRole('link', { name: 'Next month' }).click();
    await page.getByRole('heading', { name: 'March 2032' }).waitFor();
    const grid = page.getByRole('grid');
    await grid.locator('[data-date="2032-03-31"]').waitFor();
    // Read once the month's 31 nights are all drawn: the grid may draw again as its data arrives.
    const states = await eventually(
      async () => {
        const drawn = await grid.locator('[data-date]').evaluateAll((cells) => Object.fromEntries(cells.map((c) => [c.getAttribute('data-date'), c.getAttribute('data-state')])));
        return Object.keys(drawn).length === 31 && drawn;
      },
      10_000,
      "March 2032's 31 nights in the grid",
    );
    const taken = Object.fromEntries(Object.entries(states).filter(([, s]) => s !== 'free'));
    expect(taken).toEqual({ '2032-03-02': 'blocked', '2032-03-03': 'blocked', '2032-03-10': 'booked', '2032-03-11': 'booked', '2032-03-15': 'held' });
    expect(await grid.locator('[data-date="2032-03-10"]').textContent()).toContain(reference);
    // A block opens to its details; the arrow keys move between nights and Enter opens one.
    await grid.locator('[data-date="2032-03-02"]').click();
    const details = page.getByTestId('block-details');
    await details.waitFor();
    expect(await details.textContent()).toMatch(/res-981.*2032-03-02.*2032-03-04.*2/s);
    await page.keyboard.press('ArrowRight');
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).document.activeElement?.getAttribute('data-date'))).toBe('2032-03-03');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Night of 2032-03-10' }).waitFor();
    await page.getByRole('region', { name: 'Night of 2032-03-10' }).getByText(reference, { exact: true }).waitFor();
    await expectAccessible(page, 'calendar');
    await shoot(page, 'calendar');

    // Webhooks: the endpoint, a test event delivered, a receiver-check run.
    await go(page, 'Webhooks');
    const endpoint = page.getByTestId('endpoint');
    await endpoint.waitFor();
    expect(await endpoint.textContent()).toContain(endpointUrl);
    expect(await endpoint.textContent()).toContain('active');
    await page.getByLabel('Listing').selectOption(listingId);
    await page.getByRole('button', { name: 'Send test event' }).click();
    // The real booking's delivery is there already; the test event's arrives as a second, marked test.
    await page.locator('ul.deliveries li[data-test="false"][data-state="delivered"]', { hasText: 'booking.confirmed' }).waitFor();
    const delivered = page.locator('ul.deliveries li[data-test="true"][data-state="delivered"]', { hasText: 'booking.confirmed' });
    await delivered.waitFor({ timeout: 30_000 });
    expect(await delivered.locator('table.attempts').textContent()).toMatch(/200.*\d+ ms.*delivered/s);
    // Resend it: a second attempt of the same event, delivered again.
    const eventId = (await delivered.getAttribute('data-event-id'))!;
    await delivered.getByRole('button', { name: `Resend ${eventId}` }).click();
    const again = page.locator(`ul.deliveries li[data-event-id="${eventId}"][data-state="delivered"]`, { hasText: '2 attempts' });
    await again.waitFor({ timeout: 30_000 });
    expect(await again.locator('table.attempts tbody tr').count()).toBe(2);
    // Filtered by state: only the delivered ones, in the address for a reload within the session.
    await page.getByLabel('Deliveries in state').selectOption('pending');
    await page.getByRole('button', { name: 'Filter deliveries' }).click();
    await page.getByText('No delivery yet.').waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as { location: { hash: string } }).location.hash)).toBe('#/webhooks?state=pending');
    await page.getByLabel('Deliveries in state').selectOption('delivered');
    await page.getByRole('button', { name: 'Filter deliveries' }).click();
    await page.locator('ul.deliveries li').first().waitFor();
    expect(await page.locator('ul.deliveries li').evaluateAll((lis) => lis.map((li) => li.getAttribute('data-state')))).toEqual(['delivered', 'delivered']);
    await page.getByRole('button', { name: 'Run receiver checks' }).click();
    await page.locator('[data-testid="check-run"]:not([data-status="running"])').waitFor({ timeout: 60_000 });
    // This receiver answers 200 to everything: it accepts what it should and refuses nothing.
    const results = await page
      .getByTestId('check-run')
      .locator('tbody tr')
      .evaluateAll((rows) => Object.fromEntries(rows.map((r) => [r.querySelector('th')?.textContent, r.querySelector('td:last-child')?.textContent])));
    expect(results).toEqual({
      valid_delivery_accepted: 'passed',
      duplicate_accepted: 'passed',
      wrong_signature_refused: 'failed',
      stale_timestamp_refused: 'failed',
      altered_body_refused: 'failed',
    });
    expect(await page.getByTestId('check-run').getAttribute('data-status')).toBe('failed');
    await expectAccessible(page, 'webhooks');
    await shoot(page, 'webhooks');

    // Requests: the failed push, found by its instance.
    await go(page, 'Requests');
    await page.getByLabel('Status').fill('400');
    await page.getByLabel('Code').fill('validation_failed');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL(/#\/requests\?status=400&code=validation_failed$/);
    // The filtered answer (the recorder may not have sent the failed request's record yet).
    await page.getByText('Requests, status 400, code validation_failed').or(page.getByText('No request matches.')).waitFor();
    await clickUntil(page, 'Filter', `tr[data-instance="${failedInstance}"]`);
    expect(await page.locator('table.requests tbody tr').evaluateAll((rows) => rows.map((r) => r.children[2]?.textContent))).toEqual(['400']);
    const failedRow = page.locator(`tr[data-instance="${failedInstance}"]`);
    expect(await failedRow.textContent()).toMatch(/PUT \/v1\/properties\/\{provider_id\}.*400.*validation_failed/s);
    await expectAccessible(page, 'requests');
    await shoot(page, 'requests');

    // Events: the feed with the booking and the test event, and the cursor to resume from.
    await go(page, 'Events');
    await page.locator('ol.events li', { hasText: 'booking.confirmed' }).first().waitFor();
    expect(await page.getByTestId('events-cursor').textContent()).toMatch(/Cursor after this page: \d+/);
    await expectAccessible(page, 'events');
    await shoot(page, 'events');

    // The page renews its token before it expires, without a call of the partner's.
    await page.waitForRequest((r) => r.url().endsWith('/v1/token') && Date.now() - signedInAt > 20_000, { timeout: (TOKEN_TTL_SECONDS + 5) * 1000 });

    // Sign out: the form again, nothing kept.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.content()).not.toContain(p.apiKey);
    expect(
      await page.evaluate(() => {
        const g = globalThis as unknown as PageGlobals;
        return [g.localStorage.length, g.sessionStorage.length, g.document.cookie];
      }),
    ).toEqual([0, 0, '']);
    expect(await context.cookies()).toEqual([]);

    // What left the page: only the gateway's origin, and the key only to POST /v1/token.
    const requests = await Promise.all(sent);
    const origin = new URL(suite.system.gatewayUrl).origin;
    expect(requests.filter((r) => new URL(r.url).origin !== origin && !r.url.startsWith('data:'))).toEqual([]);
    const withKey = requests.filter((r) => JSON.stringify(r).includes(p.apiKey));
    expect(withKey.length).toBeGreaterThanOrEqual(2);
    for (const r of withKey) {
      expect([r.method, new URL(r.url).pathname, r.headers.authorization]).toEqual(['POST', '/v1/token', `Bearer ${p.apiKey}`]);
      expect(r.url).not.toContain(p.apiKey);
    }
    expect(problems).toEqual([]);
    await context.close();
  }, 240_000);

  test('sign-out stops every poll: with a receiver-check run and a delivery watch going, nothing reaches the gateway afterwards, not even a token renewal', async () => {
    const p = await partners.partner();
    // A publishable property (its photos served), so it has a listing to send a test event about.
    const dir = `/${p.workspaceId}`;
    await photos.image(`${dir}/a.jpg`, 800, 600);
    await photos.image(`${dir}/b.jpg`, 800, 600, 'jpeg', 2);
    const photoList = [`${dir}/a.jpg`, `${dir}/b.jpg`].map((path, position) => ({ url: `${photos.base}${path}`, position }));
    expect((await call(p, 'PUT', '/v1/properties/villa-7', { ...validProperty(), photos: photoList })).status).toBe(200);
    let listingId: string | null = null;
    for (let i = 0; i < 60 && !listingId; i++) {
      listingId = (await call(p, 'GET', '/v1/properties/villa-7')).json.listing_id as string | null;
      if (!listingId) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(listingId).toEqual(expect.any(String));
    // A slow receiver that refuses deliveries: the test event stays pending (the log is
    // watched) and each of the run's checks takes 3 s (the run is read every 1.5 s).
    const receiverPath = `/console-sign-out/${p.workspaceId}`;
    suite.receiver.on(receiverPath, echoThen(503, { delayMs: 3000 }));
    expect((await call(p, 'PUT', '/v1/webhooks/endpoint', { url: `${suite.receiver.baseUrl}${receiverPath}`, events: ['booking.confirmed'] })).status).toBe(200);

    const { context, page, problems } = await openConsole();
    const requests: { method: string; path: string }[] = [];
    page.on('request', (r: Request) => requests.push({ method: r.method(), path: new URL(r.url()).pathname }));
    await signIn(page, p.apiKey);
    const signedInAt = Date.now();
    await go(page, 'Webhooks');
    await page.getByLabel('Listing').selectOption(listingId);
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.locator('ul.deliveries li[data-test="true"][data-state="pending"]').waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Run receiver checks' }).click();
    await page.locator('[data-testid="check-run"][data-status="running"]').waitFor();
    // Both polls are going: the run read again, the delivery log read again.
    await page.waitForRequest((r) => r.method() === 'GET' && /\/v1\/sandbox\/endpoint-checks\/./.test(r.url()), { timeout: 10_000 });
    const deliveryReads = () => requests.filter((r) => r.method === 'GET' && r.path === '/v1/webhooks/deliveries').length;
    const readsBefore = deliveryReads();
    await page.waitForRequest((r) => r.method() === 'GET' && new URL(r.url()).pathname === '/v1/webhooks/deliveries', { timeout: 10_000 });
    expect(deliveryReads()).toBeGreaterThan(readsBefore);
    expect(await page.getByTestId('check-run').getAttribute('data-status')).toBe('running');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    const signedOut = requests.length;
    const signedOutAt = Date.now();
    // Long enough for several reads of each poll (every 1.5 s and 2 s), and past the point
    // where the page would have renewed its token (renewal.ts) had it kept the session.
    const until = Math.max(signedOutAt + 8000, signedInAt + renewInMs(TOKEN_TTL_SECONDS * 1000) + 3000);
    await page.waitForTimeout(until - Date.now());
    expect(requests.slice(signedOut)).toEqual([]);
    expect(await page.getByRole('navigation', { name: 'Console' }).count()).toBe(0);
    expect(problems).toEqual([]);
    await context.close();
  }, 120_000);

  test('a production key, from the keyboard alone: the 501 banner, every page shows the answer, nothing to send; a reload asks for the key again', async () => {
    const prod = await partners.partner('production');
    const { context, page, problems } = await openConsole();
    // Tab to the key, type it, Enter signs in; Tab on through the header to the navigation.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).document.activeElement?.getAttribute('id'))).toBe('api-key');
    await page.keyboard.type(prod.apiKey);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    const properties = page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Properties', exact: true });
    for (let i = 0; i < 10 && !(await properties.evaluate((a) => a === (a.ownerDocument as unknown as PageGlobals['document']).activeElement)); i++) {
      await page.keyboard.press('Tab');
    }
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Properties', level: 1 }).waitFor();
    await go(page, 'Overview');
    await page.getByText('Production workspace.').waitFor();
    await page.getByText('501 not_enabled').first().waitFor();
    await go(page, 'Webhooks');
    expect(await page.getByRole('button', { name: 'Run receiver checks' }).isDisabled()).toBe(true);
    await go(page, 'Properties');
    await page.getByRole('alert').filter({ hasText: '501 not_enabled' }).waitFor();
    await expectAccessible(page, 'production');
    await shoot(page, 'production');

    await page.reload();
    await page.getByLabel('API key').waitFor();
    expect(await page.getByRole('navigation', { name: 'Console' }).count()).toBe(0);
    expect(problems).toEqual([]);
    await context.close();
  }, 120_000);

  test('a refused key gets the token endpoint’s message and no session', async () => {
    const { context, page, problems } = await openConsole();
    await page.getByLabel('API key').fill('psk_test_not_a_real_key_0000000000000000000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: '401' }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Console' }).count()).toBe(0);
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);
});
