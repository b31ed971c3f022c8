// The `helm test` check of a Partner Sync release (templates/tests/pod.yaml), run by
// plain node in the release's own image; it needs nothing but Node and bin/psync.
//
// 1. GET <GATEWAY_URL>/readyz answers 200.
// 2. grpc.health.v1.Health/Check of each service at <SERVICE>_URL answers SERVING for
//    the service's name (h2c for http://, TLS trusting INTERNAL_TLS_CA for https://).
// 3. With the operator token (PSYNC_TOKEN), `psync key issue` gives a key for the
//    sandbox workspace PSYNC_TEST_WORKSPACE (or one `psync workspace create` makes,
//    named PSYNC_TEST_NAME); POST <GATEWAY_URL>/v1/token exchanges it for a Bearer
//    token of that workspace; `psync key revoke` revokes it (also after a failure);
//    the exchange is then refused with 401.
//
// One line per check on stdout; exit 0 when every check passed, 1 otherwise.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:http2';

const env = process.env;
const TIMEOUT_MS = 10_000;
/** Readiness is retried this often, a second apart: `helm test` may follow a rollout closely. */
const READY_ATTEMPTS = 30;

/** Each service and the name it reports in grpc.health.v1 (fixed by the proto packages). */
const SERVICES = {
  identity: 'psync.identity.v1.IdentityService',
  catalog: 'psync.catalog.v1.CatalogService',
  calendar: 'psync.calendar.v1.CalendarService',
  notifications: 'psync.notifications.v1.NotificationsService',
};

function required(name) {
  const value = env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `check` until it resolves, up to READY_ATTEMPTS times; the last error otherwise. */
async function eventually(check) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await check();
    } catch (err) {
      if (attempt >= READY_ATTEMPTS) throw err;
      await sleep(1000);
    }
  }
}

async function gatewayReady(gateway) {
  const res = await fetch(new URL('/readyz', gateway), { signal: AbortSignal.timeout(TIMEOUT_MS) });
  if (res.status !== 200) throw new Error(`GET /readyz answered ${res.status}`);
}

/** HealthCheckRequest {service} as one gRPC length-prefixed message. */
function healthRequest(service) {
  const name = Buffer.from(service, 'utf8');
  if (name.length > 127) throw new Error('service name too long for a one-byte length');
  const message = Buffer.concat([Buffer.from([0x0a, name.length]), name]);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** grpc.health.v1.Health/Check: resolves with the status number (1 = SERVING). */
function healthCheck(baseUrl, service, tls) {
  return new Promise((resolve, reject) => {
    const session = connect(baseUrl, tls);
    const fail = (err) => {
      session.destroy();
      reject(err);
    };
    session.on('error', fail);
    session.setTimeout(TIMEOUT_MS, () => fail(new Error(`no answer within ${TIMEOUT_MS} ms`)));
    const req = session.request({ ':method': 'POST', ':path': '/grpc.health.v1.Health/Check', 'content-type': 'application/grpc', te: 'trailers' });
    const chunks = [];
    let grpcStatus;
    req.on('response', (headers) => (grpcStatus = headers['grpc-status'] ?? grpcStatus));
    req.on('trailers', (trailers) => (grpcStatus = trailers['grpc-status'] ?? grpcStatus));
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('error', fail);
    req.on('end', () => {
      session.close();
      const body = Buffer.concat(chunks);
      if (String(grpcStatus) !== '0') return reject(new Error(`grpc-status ${grpcStatus}`));
      // HealthCheckResponse {status = 1: enum}: field 1, varint; absent means 0 (UNKNOWN).
      const message = body.subarray(5);
      resolve(message[0] === 0x08 ? message[1] : 0);
    });
    req.end(healthRequest(service));
  });
}

async function serviceReady(url, service, tls) {
  const status = await healthCheck(url, service, tls);
  if (status !== 1) throw new Error(`status ${status} (1 is SERVING)`);
}

/** bin/psync with the given arguments: its one JSON object, or its one error line. */
function psync(args) {
  return new Promise((resolve, reject) => {
    execFile(env.PSYNC_CLI || 'psync', args, { env: { ...env, PSYNC_INTERNAL_URL: required('IDENTITY_URL') }, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`psync ${args.slice(0, 2).join(' ')}: ${stderr.trim() || err.message}`));
      resolve(JSON.parse(stdout));
    });
  });
}

function exchange(gateway, apiKey) {
  return fetch(new URL('/v1/token', gateway), { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, signal: AbortSignal.timeout(TIMEOUT_MS) });
}

async function tokenExchange(gateway) {
  const workspaceId = env.PSYNC_TEST_WORKSPACE || (await psync(['workspace', 'create', '--name', env.PSYNC_TEST_NAME || 'helm test', '--env', 'sandbox'])).workspace_id;
  const key = await psync(['key', 'issue', '--workspace', workspaceId]);
  try {
    const res = await exchange(gateway, key.api_key);
    const body = await res.json();
    if (res.status !== 200) throw new Error(`POST /v1/token answered ${res.status}: ${JSON.stringify(body)}`);
    if (body.token_type !== 'Bearer' || !body.access_token || body.workspace_id !== workspaceId || body.sandbox !== true) {
      throw new Error(`POST /v1/token answered an unexpected body: ${JSON.stringify({ ...body, access_token: body.access_token ? '…' : body.access_token })}`);
    }
  } finally {
    await psync(['key', 'revoke', '--key', key.key_id]);
  }
  const refused = await exchange(gateway, key.api_key);
  if (refused.status !== 401) throw new Error(`POST /v1/token with the revoked key answered ${refused.status}, expected 401`);
  return `workspace ${workspaceId}, key ${key.key_id} issued, exchanged, revoked and refused`;
}

async function main() {
  const gateway = required('GATEWAY_URL');
  const ca = env.INTERNAL_TLS_CA ? readFileSync(env.INTERNAL_TLS_CA) : undefined;
  const tls = {
    ...(ca ? { ca } : {}),
    ...(env.INTERNAL_TLS_CERT && env.INTERNAL_TLS_KEY ? { cert: readFileSync(env.INTERNAL_TLS_CERT), key: readFileSync(env.INTERNAL_TLS_KEY) } : {}),
  };
  const checks = [['gateway /readyz', () => eventually(() => gatewayReady(gateway))]];
  for (const [name, service] of Object.entries(SERVICES)) {
    const url = required(`${name.toUpperCase()}_URL`);
    checks.push([`${name} grpc.health.v1 ${service}`, () => eventually(() => serviceReady(url, service, tls))]);
  }
  checks.push(['token exchange', () => tokenExchange(gateway)]);

  let failed = 0;
  for (const [name, check] of checks) {
    try {
      const detail = await check();
      console.log(`ok: ${name}${detail ? ` (${detail})` : ''}`);
    } catch (err) {
      failed++;
      console.log(`FAIL: ${name}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  console.log(failed === 0 ? `helm test: ${checks.length} checks passed` : `helm test: ${failed} of ${checks.length} checks failed`);
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.log(`FAIL: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
