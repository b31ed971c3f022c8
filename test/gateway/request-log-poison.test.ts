/**
 * The request log isolates tenants (docs/operations.md "Request log"): one
 * workspace's hostile requests — U+0000 or a lone surrogate in a property or query
 * parameter name, nested 128-character keys whose path passes 512 characters, its API
 * key as a path segment, a very long path — sent in the same second as another
 * workspace's requests, never cost the other workspace a record, and never drop a
 * batch (psync_request_log_dropped_total stays where it was). What the hostile
 * requests leave in the log is storable, scrubbed of the key and names only contract
 * fields. And identity, given a batch with records that break its rules, stores the
 * others and counts only those (RecordRequestsResponse.refused).
 *
 * Runs on the embedded default and, with DATABASE_URL/NATS_URL, on real servers.
 */
import { randomUUID } from 'node:crypto';
import { Partners, type Partner } from './partners';
import { send, type Received } from './http-client';
import { psync } from '../notifications/support/harness';
import { eventually } from '../support/eventually';
import { internalClients, type InternalClients } from '../support/internal-clients';
import { backends, firstLogEvent, freePort, startSystem, stopAllSystems, type RunningSystem } from '../support/system';

let system: RunningSystem;
let metricsPort: number;
let clients: InternalClients;
let partners: Partners;
let poisoner: Partner;
let victim: Partner;

beforeAll(async () => {
  metricsPort = await freePort();
  system = await startSystem({ env: { METRICS_PORT: String(metricsPort) } });
  clients = internalClients(system.internalUrl);
  partners = new Partners(system);
  [poisoner, victim] = await Promise.all([partners.partner('sandbox'), partners.partner('sandbox')]);
}, 120_000);

afterAll(async () => {
  clients?.close();
  partners?.close();
  await stopAllSystems();
});

function api(p: Partner, method: string, path: string, body?: string): Promise<Received> {
  const headers: Record<string, string> = { ...p.auth };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  return send(system.gatewayUrl, { method, path, headers, body });
}

const instanceOf = (res: Received) => `urn:psync:request:${String(res.headers['x-request-id'])}`;

/** psync_request_log_dropped_total by reason, as /metrics shows it now (an absent series is 0). */
async function dropped(): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const out: Record<string, number> = { queue_full: 0, send_failed: 0, refused: 0 };
  for (const line of text.split('\n')) {
    const m = /^psync_request_log_dropped_total\{[^}]*reason="([a-z_]+)"[^}]*\} (\d+(?:\.\d+)?)/.exec(line);
    if (m) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
  }
  return out;
}

/** The partner's recorded requests with these instances, once all are there. */
function allRecorded(p: Partner, instances: string[]): Promise<any[]> {
  return eventually(
    async () => {
      const res = await api(p, 'GET', '/v1/requests?limit=200');
      expect(res.status).toBe(200);
      const items = res.json.items as any[];
      const found = instances.map((i) => items.find((item) => item.instance === i));
      return found.every((f) => f !== undefined) ? found : undefined;
    },
    20_000,
    `${instances.length} requests in the log`,
  );
}

/** `{"<128 a>": {"<128 b>": … {"<128 f>": "\u0000"}}}`: a field path of more than 512 characters. */
function nestedKeys(depth: number, leaf: string): string {
  let json = JSON.stringify(leaf);
  for (let i = depth - 1; i >= 0; i--) json = `{"${String.fromCharCode(97 + i).repeat(128)}":${json}}`;
  return json;
}

/** Every poison of the December review (docs/security/threat-model.md), from `p`; resolves with the answers. */
function poisons(p: Partner, round: number): Promise<Received>[] {
  return [
    api(p, 'PUT', `/v1/blocks/poison-${round}`, '{"\\u0000":1}'),
    api(p, 'PUT', `/v1/blocks/poison-surrogate-${round}`, '{"\\ud800":1}'),
    api(p, 'GET', '/v1/events?%00=1'),
    api(p, 'PUT', `/v1/blocks/poison-deep-${round}`, nestedKeys(6, '\u0000')),
    api(p, 'PUT', `/v1/blocks/poison-deep-plain-${round}`, nestedKeys(6, 'x')),
    api(p, 'PUT', `/v1/blocks/${p.apiKey}`, '{}'),
    api(p, 'PUT', `/v1/blocks/resv_${p.apiKey}`, '{}'),
    api(p, 'PUT', `/v1/blocks/${'x'.repeat(4000)}`, '{}'),
    api(p, 'GET', `/v1/blocks?${'q'.repeat(3000)}=1`),
  ];
}

describe(`request log under poison (${backends.database} + ${backends.bus})`, () => {
  test("one workspace's poisoned requests in the same second never cost another workspace a record, nor drop a batch", async () => {
    const before = await dropped();

    // All at once, several rounds: the records share the recorder's batches.
    const sent = await Promise.all([
      ...poisons(poisoner, 1),
      api(victim, 'GET', '/v1/blocks'),
      ...poisons(poisoner, 2),
      api(victim, 'PUT', '/v1/blocks/victim-1', '{}'),
      ...poisons(poisoner, 3),
      api(victim, 'GET', '/v1/requests?limit=1'),
      api(victim, 'GET', '/v1/events'),
    ]);
    const fromPoisoner = sent.filter((_, i) => ![9, 19, 29, 30].includes(i));
    const fromVictim = [sent[9]!, sent[19]!, sent[29]!, sent[30]!];
    expect(fromVictim.map((r) => r.status)).toEqual([200, 400, 200, 200]);
    // Every poisoned request got its answer (none is a 5xx).
    for (const r of fromPoisoner) expect(r.status).toBeLessThan(500);

    const victimRecords = await allRecorded(victim, fromVictim.map(instanceOf));
    expect(victimRecords.map((r) => r.route)).toEqual(['/v1/blocks', '/v1/blocks/{external_uid}', '/v1/requests', '/v1/events']);
    // Support finds them too.
    const shown = await psync(system, ['request', 'show', instanceOf(fromVictim[1]!)]);
    expect(shown).toEqual(expect.objectContaining({ workspace_id: victim.workspaceId, path_params: { external_uid: 'victim-1' }, status: 400 }));

    // The poisoner's requests are recorded as well, made storable: only contract names, no key.
    const poisonRecords = await allRecorded(poisoner, fromPoisoner.map(instanceOf));
    const stored = JSON.stringify(poisonRecords);
    expect(stored).not.toContain(poisoner.apiKey.slice('psk_'.length));
    expect(stored).not.toContain('\u0000');
    expect(stored).not.toMatch(/a{128}|q{128}|x{1025}/);
    for (const r of poisonRecords) for (const e of r.errors as { field: string }[]) expect(e.field.length).toBeLessThanOrEqual(512);
    const [nul, , query, deep] = poisonRecords;
    expect(nul.errors).toContainEqual({ field: '*', code: 'unknown_field' });
    expect(query.errors).toContainEqual({ field: '*', code: 'unknown_field' });
    expect(deep.errors).toContainEqual({ field: '*', code: 'unknown_field' });
    const keyPaths = poisonRecords.slice(5, 7).map((r) => r.path_params.external_uid);
    expect(keyPaths).toEqual(['psk_[redacted]', 'resv_psk_[redacted]']);
    // A path identifier beyond the schema's 255 characters failed validation and is left out.
    expect(poisonRecords[7].path_params).toEqual({});

    // Nothing was dropped: no batch failed, identity refused no record.
    const after = await dropped();
    expect({ send_failed: after.send_failed! - before.send_failed!, refused: after.refused! - before.refused! }).toEqual({ send_failed: 0, refused: 0 });
  });

  test('identity stores the records of a batch it can store and refuses the others alone, counting them', async () => {
    const good = () => ({
      requestId: randomUUID(),
      workspaceId: victim.workspaceId,
      keyId: victim.keyId,
      receivedAt: { seconds: BigInt(Math.floor(Date.now() / 1000)), nanos: 0 },
      method: 'GET',
      route: '/v1/blocks',
      pathParams: {},
      status: 200,
      errors: [],
      durationMs: 1,
    });
    const goods = [good(), good(), good()];
    const batch = [
      goods[0]!,
      { ...good(), workspaceId: poisoner.workspaceId, status: 400, code: 'validation_failed', errors: [{ field: '\u0000', code: 'unknown_field' }] },
      goods[1]!,
      { ...good(), workspaceId: poisoner.workspaceId, status: 400, code: 'validation_failed', errors: [{ field: 'a'.repeat(600), code: 'invalid' }] },
      { ...good(), workspaceId: poisoner.workspaceId, pathParams: { external_uid: 'x\u0000' } },
      goods[2]!,
    ];
    const answer = await clients.identity.recordRequests({ requests: batch });
    expect([answer.recorded, answer.refused]).toEqual([3, 3]);

    const listed = await clients.identity.listRequests({ workspaceId: victim.workspaceId, limit: 200 });
    expect(listed.requests.map((r) => r.requestId)).toEqual(expect.arrayContaining(goods.map((g) => g.requestId)));
    // Identity says why, by field and rule, never the value.
    const warning = await eventually(async () => firstLogEvent(system.logs(), 'request_log.records.refused'), 10_000, "identity's warning");
    const reasons = JSON.stringify(warning.reasons);
    expect(reasons).toContain('requests[1].errors[0].field: invalid');
    expect(reasons).toContain('requests[3].errors[0].field: max_length');
    expect(reasons).toContain('requests[4].path_params: invalid');
    expect(JSON.stringify(warning)).not.toContain('aaaa');
  });
});
