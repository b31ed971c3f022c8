/**
 * The SDK's types are generated from docs/openapi.json (`npm run sdk:generate`): the
 * committed file must be exactly what the generator makes of the committed document,
 * and every operation of the document must be reachable the way the README says.
 *
 * The generator runs as its own process (`npm run sdk:generate -- --check`), exactly
 * as a developer runs it: openapi-typescript loads ES modules that Jest cannot.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PartnerClient, PROBLEM_CODES } from '../src';

const ROOT = join(__dirname, '..', '..', '..');
const DOCUMENT = join(ROOT, 'docs', 'openapi.json');

/** Operations with a method of their own, by operationId. */
const METHODS: Record<string, keyof PartnerClient> = {
  exchangeToken: 'token',
  upsertProperty: 'putProperty',
  getProperty: 'getProperty',
  listProperties: 'listProperties',
  listBlocks: 'listBlocks',
  listListingNights: 'listListingNights',
  putBlock: 'putBlock',
  deleteBlock: 'deleteBlock',
  putWebhookEndpoint: 'putWebhookEndpoint',
  getWebhookEndpoint: 'getWebhookEndpoint',
  acknowledgeDeletionRequest: 'acknowledgeDeletionRequest',
  triggerTestEvent: 'triggerTestEvent',
  listDeliveries: 'listDeliveries',
  getDelivery: 'getDelivery',
  resendDelivery: 'resendDelivery',
  listEvents: 'listEvents',
  listRequests: 'listRequests',
  startEndpointCheck: 'startEndpointCheck',
  getEndpointCheck: 'getEndpointCheck',
};

/** Operations reached through `client.api` only, with the reason. */
const API_ONLY: Record<string, string> = {
  getOpenApiDocument: 'the document itself, read once with any HTTP client',
};

function generate(...args: string[]) {
  const r = spawnSync('npm', ['run', '--silent', 'sdk:generate', '--', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  if (r.error) throw r.error;
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

test('src/generated/openapi.ts is what `npm run sdk:generate` makes of docs/openapi.json', () => {
  const r = generate('--check');
  expect(r).toEqual({ status: 0, output: expect.stringContaining('is up to date') });
});

test('the check fails when the document changes and the types are not generated again', () => {
  const dir = mkdtempSync(join(tmpdir(), 'psync-sdk-drift-'));
  try {
    const doc = JSON.parse(readFileSync(DOCUMENT, 'utf8'));
    doc.components.schemas.Token.properties.refresh_hint = { type: 'string' };
    writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc));
    const r = generate('--check', '--input', join(dir, 'openapi.json'));
    expect(r).toEqual({ status: 1, output: expect.stringContaining('run npm run sdk:generate') });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every operation of the document has a client method or is listed as reached through client.api', () => {
  const doc = JSON.parse(readFileSync(DOCUMENT, 'utf8')) as { paths: Record<string, Record<string, { operationId?: string }>> };
  const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).flatMap((op) => (op?.operationId ? [op.operationId] : [])));
  expect(ids.filter((id) => !(id in METHODS) && !(id in API_ONLY))).toEqual([]);
  expect(Object.keys({ ...METHODS, ...API_ONLY }).filter((id) => !ids.includes(id))).toEqual([]);
  const client = new PartnerClient({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'unused' });
  for (const method of Object.values(METHODS)) expect([method, typeof client[method]]).toEqual([method, 'function']);
});

test('PROBLEM_CODES are the codes the document lists', () => {
  const doc = JSON.parse(readFileSync(DOCUMENT, 'utf8'));
  const text = doc.components.schemas.Problem.properties.code.description as string;
  const listed = [...text.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);
  expect([...PROBLEM_CODES].sort()).toEqual(listed.sort());
});
