/**
 * The request log through a running system (docs/operations.md "Request log",
 * docs/partners/request-log.md): the gateway records every contract request with a
 * workspace, off the request path; a partner finds its own with GET /v1/requests
 * (sandbox), support finds any with `psync request show|list`.
 *
 * - A `validation_failed` answer's `instance` is found by both, with its route, path
 *   identifiers, status, code and `errors[]` pairs; no body value, query value, token or
 *   key is stored anywhere (searched in the records and, on PostgreSQL, the table).
 * - 2xx answers are recorded; a 401 (no workspace) is not.
 * - GET /v1/requests: newest first, filters, paging by cursor; 400 with every violation;
 *   production 501 after validation (still recorded, so support finds it); 401 without
 *   a token; tenant isolation (another workspace's requests never show, not even
 *   through a cursor taken from its pages).
 */
import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { send, type Received } from './http-client';
import { Partners, type Partner } from './partners';
import { psync, psyncFails } from '../notifications/support/harness';
import { eventually } from '../support/eventually';
import { backends, useSystem } from '../support/system';

const inUse = useSystem();
let partners: Partners;
let a: Partner;
let b: Partner;
let prod: Partner;

beforeAll(async () => {
  partners = new Partners(inUse.system);
  [a, b, prod] = await Promise.all([partners.partner('sandbox'), partners.partner('sandbox'), partners.partner('production')]);
}, 60_000);
afterAll(() => partners?.close());

function api(p: { auth: Record<string, string> } | null, method: string, path: string, body?: string): Promise<Received> {
  const headers: Record<string, string> = { ...(p?.auth ?? {}) };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  return send(inUse.system.gatewayUrl, { method, path, headers, body });
}

const instanceOf = (res: Received) => `urn:psync:request:${String(res.headers['x-request-id'])}`;

/** The partner's recorded request with this instance, once it is there. */
function recorded(p: Partner, instance: string, query = ''): Promise<any> {
  return eventually(
    async () => {
      const res = await api(p, 'GET', `/v1/requests?limit=200${query}`);
      expect(res.status).toBe(200);
      return (res.json.items as any[]).find((i) => i.instance === instance);
    },
    15_000,
    `${instance} in the request log`,
  );
}

function expectProblem(res: Received, status: number, code: string, errors?: { field: string; code: string }[]): void {
  expect([res.status, res.headers['content-type'], res.json?.code]).toEqual([status, expect.stringContaining('application/problem+json'), code]);
  if (errors) expect(res.json.errors).toEqual(errors);
}

describe(`request log (${backends.database} + ${backends.bus})`, () => {
  test("a validation_failed answer's instance is found by GET /v1/requests and by psync request show, and nothing secret is stored", async () => {
    const secret = `s3cr3t-${randomUUID()}`;
    const bad = await api(a, 'PUT', '/v1/blocks/b-1', JSON.stringify({ check_in: secret, check_out: '2030-01-02', reason: secret, note: secret }));
    expectProblem(bad, 400, 'validation_failed');
    expect(bad.json.instance).toBe(instanceOf(bad));
    const badQuery = await api(a, 'GET', `/v1/blocks?from=${secret}`);
    expectProblem(badQuery, 400, 'validation_failed', [{ field: 'from', code: 'format' }]);

    // The log names only the contract's fields: the unknown `note` is stored as `*` (docs/partners/request-log.md).
    const storedErrors = (bad.json.errors as { field: string; code: string }[]).map((e) => (e.field === 'note' ? { field: '*', code: e.code } : e));
    expect(storedErrors).toContainEqual({ field: '*', code: 'unknown_field' });
    const item = await recorded(a, bad.json.instance, '&code=validation_failed');
    expect(item).toEqual({
      instance: bad.json.instance,
      received_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      method: 'PUT',
      route: '/v1/blocks/{external_uid}',
      path_params: { external_uid: 'b-1' },
      status: 400,
      code: 'validation_failed',
      errors: storedErrors,
      duration_ms: expect.any(Number),
      key_id: a.keyId,
    });
    expect(Math.abs(Date.parse(item.received_at) - Date.now())).toBeLessThan(60_000);

    const shown = await psync(inUse.system, ['request', 'show', bad.json.instance]);
    expect(shown).toEqual(
      expect.objectContaining({
        instance: bad.json.instance,
        request_id: bad.headers['x-request-id'],
        workspace_id: a.workspaceId,
        key_id: a.keyId,
        route: '/v1/blocks/{external_uid}',
        path_params: { external_uid: 'b-1' },
        status: 400,
        code: 'validation_failed',
        errors: storedErrors,
      }),
    );
    // The bare X-Request-Id works too, as a flag or a word.
    expect((await psync(inUse.system, ['request', 'show', '--instance', String(bad.headers['x-request-id'])])).instance).toBe(bad.json.instance);

    const listed = await psync(inUse.system, ['request', 'list', '--workspace', a.workspaceId, '--code', 'validation_failed']);
    expect(listed.items.map((i: any) => i.instance)).toEqual(expect.arrayContaining([bad.json.instance, instanceOf(badQuery)]));

    // Nothing secret anywhere: not the body's values, not the query's, not the token, not the key.
    await recorded(a, instanceOf(badQuery));
    const everything = JSON.stringify(await psync(inUse.system, ['request', 'list', '--workspace', a.workspaceId, '--limit', '200']));
    for (const value of [secret, a.token, a.apiKey, a.apiKey.slice(`psk_${a.keyId}_`.length)]) expect(everything.includes(value)).toBe(false);
    const url = inUse.system.env.DATABASE_URL;
    if (url) {
      const sql = postgres(url, { max: 1, onnotice: () => undefined });
      try {
        const rows = await sql<{ t: string }[]>`select r::text as t from identity.request_log r where workspace_id = ${a.workspaceId}`;
        expect(rows.length).toBeGreaterThanOrEqual(2);
        const table = rows.map((r) => r.t).join('\n');
        for (const value of [secret, a.token, a.apiKey]) expect(table.includes(value)).toBe(false);
      } finally {
        await sql.end();
      }
    }
  });

  test('every contract request with a workspace is recorded, 2xx too; a 401 has no workspace and is not', async () => {
    const refused = await api(null, 'GET', '/v1/blocks');
    expectProblem(refused, 401, 'unauthorized');
    const ok = await api(a, 'GET', '/v1/blocks');
    expect(ok.status).toBe(200);
    expect(await recorded(a, instanceOf(ok), '&status=200')).toEqual(
      expect.objectContaining({ method: 'GET', route: '/v1/blocks', path_params: {}, status: 200, code: null, errors: [] }),
    );
    // Recorded in order: the 401 would have been sent with or before the 200.
    const missing = await psyncFails(inUse.system, ['request', 'show', instanceOf(refused)]);
    expect([missing.code, missing.stdout]).toEqual([1, '']);
    expect(missing.stderr).toMatch(/no recorded request/);
  });

  test('GET /v1/requests: newest first, filters by status and code, pages by cursor; its own calls are recorded', async () => {
    const sent: string[] = [];
    for (const size of ['0', 'abc', '999']) sent.push(instanceOf(await api(b, 'GET', `/v1/blocks?page_size=${size}`)));
    const ok = await api(b, 'GET', '/v1/blocks');
    await recorded(b, sent[2]!);
    await recorded(b, instanceOf(ok));

    // Paging the three 400s one at a time: newest first, each once, then no cursor.
    const seen: string[] = [];
    let after = '';
    for (let page = 0; page < 5; page++) {
      const res = await api(b, 'GET', `/v1/requests?status=400&limit=1${after}`);
      expect(res.status).toBe(200);
      seen.push(...res.json.items.map((i: any) => i.instance));
      if (res.json.next_cursor === null) break;
      expect(res.json.next_cursor).toMatch(/^[A-Za-z0-9_-]{32}$/);
      after = `&after=${res.json.next_cursor}`;
    }
    expect(seen).toEqual([...sent].reverse());

    const byCode = await api(b, 'GET', '/v1/requests?code=validation_failed');
    expect(byCode.json.items.map((i: any) => i.instance)).toEqual([...sent].reverse());
    expect((await api(b, 'GET', '/v1/requests?code=conflict')).json).toEqual({ items: [], next_cursor: null });

    const all = (await api(b, 'GET', '/v1/requests')).json.items as any[];
    const times = all.map((i) => Date.parse(i.received_at));
    expect(times).toEqual([...times].sort((x, y) => y - x));
    // The log's own calls are contract requests too.
    const own = await eventually(
      async () => ((await api(b, 'GET', '/v1/requests?status=200')).json.items as any[]).find((i) => i.route === '/v1/requests'),
      15_000,
      'a GET /v1/requests record',
    );
    expect(own).toEqual(expect.objectContaining({ method: 'GET', status: 200, path_params: {} }));
  });

  test('400: every bad parameter at once, never its value', async () => {
    const res = await api(a, 'GET', '/v1/requests?status=abc&limit=201&after=page-2&code=Bad!&page=2');
    expectProblem(res, 400, 'validation_failed', [
      { field: 'page', code: 'unknown_field' },
      { field: 'status', code: 'type' },
      { field: 'code', code: 'pattern' },
      { field: 'limit', code: 'maximum' },
      { field: 'after', code: 'pattern' },
    ]);
    expect(res.text).not.toContain('page-2');
    expectProblem(await api(a, 'GET', '/v1/requests?status=42&limit=0'), 400, 'validation_failed', [
      { field: 'status', code: 'minimum' },
      { field: 'limit', code: 'minimum' },
    ]);
  });

  test('production: 501 not_enabled after validation (a bad query is still 400 first); support finds the request', async () => {
    const bad = await api(prod, 'GET', '/v1/requests?limit=0');
    expectProblem(bad, 400, 'validation_failed', [{ field: 'limit', code: 'minimum' }]);
    const refused = await api(prod, 'GET', '/v1/requests');
    expectProblem(refused, 501, 'not_enabled');
    const shown = await eventually(() => psync(inUse.system, ['request', 'show', instanceOf(refused)]).catch(() => undefined), 15_000, 'the production request recorded');
    expect(shown).toEqual(expect.objectContaining({ workspace_id: prod.workspaceId, status: 501, code: 'not_enabled', route: '/v1/requests' }));
  });

  test("401 without a token; tenant isolation: another workspace's requests never show, not even through its cursor", async () => {
    expectProblem(await api(null, 'GET', '/v1/requests'), 401, 'unauthorized');

    const mine = await api(a, 'PUT', '/v1/blocks/isolation', '{}');
    const theirs = await api(b, 'PUT', '/v1/blocks/isolation', '{}');
    await recorded(a, instanceOf(mine));
    await recorded(b, instanceOf(theirs));
    const ofA = (await api(a, 'GET', '/v1/requests?limit=200')).json.items as any[];
    expect(ofA.map((i) => i.instance)).not.toContain(instanceOf(theirs));
    expect(ofA.every((i) => i.key_id === a.keyId)).toBe(true);

    // A cursor from A's pages, used by B: only B's older requests.
    const page = await api(a, 'GET', '/v1/requests?limit=1');
    const cursor = page.json.next_cursor as string;
    expect(cursor).toEqual(expect.any(String));
    const throughIt = (await api(b, 'GET', `/v1/requests?limit=200&after=${cursor}`)).json.items as any[];
    expect(throughIt.every((i) => i.key_id === b.keyId)).toBe(true);
  });
});
