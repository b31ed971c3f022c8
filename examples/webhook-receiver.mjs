#!/usr/bin/env node
/**
 * A partner's webhook receiver for trying Partner Sync on one machine (README
 * "Quickstart"). Node 20 only, no dependencies.
 *
 * - Serves https://localhost:8443: webhooks go only to `https://` on port 443 or 8443
 *   (docs/partner-sync-api-v1.md "Webhook endpoint"). The certificate is made on the
 *   first run, self-signed for `localhost`, in RECEIVER_DIR (default
 *   `.data/webhook-receiver/` of this clone); the system trusts it through
 *   `NODE_EXTRA_CA_CERTS=<RECEIVER_DIR>/cert.pem`, and reaches loopback only with
 *   `EGRESS_ALLOW_CIDRS=127.0.0.0/8` (development only).
 * - POST (any path): a delivery. Verified as every receiver must (docs/partners/webhooks.md):
 *   over the raw body before any parsing, timestamp within five minutes checked before
 *   comparing, constant-time comparison, `X-Signature-Previous` accepted during a
 *   rotation, duplicates (same `event_id`) answered 2xx and not processed again.
 * - Several registrations (workspaces) can share the receiver, one URL path each: the
 *   secrets of the registration at `https://localhost:8443/<path>` are read from
 *   `<RECEIVER_DIR>/signing-secrets/<path>` when that file exists, otherwise from
 *   `<RECEIVER_DIR>/signing-secret` (one secret per line: during a rotation the new and
 *   the old one), at every delivery, so the secret a registration returns can be saved
 *   while the receiver runs.
 * - The challenge of every registration is answered, verified or not: it arrives during
 *   the registration call, before the partner has a first registration's secret (the
 *   call returns it), and echoing it proves only that this URL is ours. A challenge
 *   signed with a secret held for its path is logged as verified.
 * - GET /photos/<name>.png: a generated 640×427 PNG, so the example property
 *   (examples/property.json) gets a photo without internet access.
 *
 * Prints one line per request, and every verified event as indented JSON.
 */
import { X509Certificate, createHmac, createPrivateKey, generateKeyPairSync, randomBytes, sign, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crc32, deflateSync } from 'node:zlib';

/**
 * Ports webhooks may use (contract "Limits"); 8443 needs no privileges. RECEIVER_PORT
 * is for tests that post to the receiver themselves (a registration's URL must use 443 or 8443).
 */
const PORT = Number(process.env.RECEIVER_PORT ?? 8443);
const TOLERANCE_SECONDS = 5 * 60;
const MAX_BODY_BYTES = 1024 * 1024;

const repository = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dir = resolve(process.env.RECEIVER_DIR ?? join(repository, '.data', 'webhook-receiver'));
const certFile = join(dir, 'cert.pem');
const keyFile = join(dir, 'key.pem');
const secretFile = join(dir, 'signing-secret');
const secretsDir = join(dir, 'signing-secrets');
/** A path as a person would type it from here: relative below the current directory, absolute elsewhere. */
const shown = (path) => {
  const rel = relative(process.cwd(), path);
  return rel === '' || rel.startsWith('..') ? path : rel;
};

// ---------------------------------------------------------------- certificate

/** DER: one tag-length-value. */
function tlv(tag, ...parts) {
  const body = Buffer.concat(parts);
  let length;
  if (body.length < 0x80) length = Buffer.from([body.length]);
  else {
    const bytes = [];
    for (let n = body.length; n > 0; n >>= 8) bytes.unshift(n & 0xff);
    length = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), length, body]);
}
const seq = (...parts) => tlv(0x30, ...parts);
const oid = (dotted) => {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const out = [40 * a + b];
  for (const n of rest) {
    const groups = [n & 0x7f];
    for (let v = n >> 7; v > 0; v >>= 7) groups.unshift(0x80 | (v & 0x7f));
    out.push(...groups);
  }
  return tlv(0x06, Buffer.from(out));
};
const utcTime = (d) => tlv(0x17, Buffer.from(`${d.toISOString().replace(/[-:T]/g, '').slice(2, 14)}Z`));
const extension = (id, critical, value) => seq(oid(id), ...(critical ? [tlv(0x01, Buffer.from([0xff]))] : []), tlv(0x04, value));

/**
 * A self-signed certificate for `localhost` (ECDSA P-256, one year): the trust anchor
 * and the server certificate at once, which is all NODE_EXTRA_CA_CERTS needs.
 */
function makeCertificate() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const name = seq(tlv(0x31, seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from('localhost')))));
  const ecdsaWithSha256 = seq(oid('1.2.840.10045.4.3.2'));
  const now = Date.now();
  const serial = randomBytes(16);
  serial[0] = (serial[0] & 0x7f) | 0x40; // a positive INTEGER, minimally encoded (no leading zero byte)
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))), // v3
    tlv(0x02, serial),
    ecdsaWithSha256,
    name,
    seq(utcTime(new Date(now - 3600_000)), utcTime(new Date(now + 365 * 86400_000))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    tlv(
      0xa3,
      seq(
        extension('2.5.29.19', true, seq(tlv(0x01, Buffer.from([0xff])))), // basicConstraints: CA (a trust anchor)
        extension('2.5.29.15', true, tlv(0x03, Buffer.from([0x02, 0x84]))), // keyUsage: digitalSignature, keyCertSign
        extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))), // extKeyUsage: serverAuth
        extension('2.5.29.17', false, seq(tlv(0x82, Buffer.from('localhost')))), // subjectAltName: DNS localhost
      ),
    ),
  );
  const certificate = seq(tbs, ecdsaWithSha256, tlv(0x03, Buffer.from([0]), sign('sha256', tbs, privateKey)));
  const pem = `-----BEGIN CERTIFICATE-----\n${certificate
    .toString('base64')
    .match(/.{1,64}/g)
    .join('\n')}\n-----END CERTIFICATE-----\n`;
  return { cert: pem, key: privateKey.export({ type: 'pkcs8', format: 'pem' }) };
}

/** The certificate and key in `dir`, made on the first run (and again when the one there expires within a day). */
function certificate() {
  if (existsSync(certFile) && existsSync(keyFile)) {
    const cert = readFileSync(certFile, 'utf8');
    const key = readFileSync(keyFile, 'utf8');
    createPrivateKey(key); // a damaged file fails here, not at the first connection
    if (Date.parse(new X509Certificate(cert).validTo) > Date.now() + 86400_000) return { cert, key, made: false };
  }
  mkdirSync(dir, { recursive: true });
  const made = makeCertificate();
  writeFileSync(keyFile, made.key, { mode: 0o600 });
  writeFileSync(certFile, made.cert);
  return { ...made, made: true };
}

// ---------------------------------------------------------------- photo

/** A `width`×`height` RGB PNG: a sky-to-sea gradient. */
function png(width, height) {
  const rows = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * (width * 3 + 1); // each row starts with filter type 0
    const sea = y > height * 0.6;
    for (let x = 0; x < width; x++) {
      const t = x / width;
      const at = row + 1 + x * 3;
      rows[at] = sea ? 20 : Math.round(250 - 80 * t);
      rows[at + 1] = sea ? Math.round(90 + 60 * t) : Math.round(190 + 40 * t);
      rows[at + 2] = sea ? 160 : 250;
    }
  }
  const chunk = (type, data) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type), data])));
    return Buffer.concat([length, Buffer.from(type), data, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}

const photo = png(640, 427);

// ---------------------------------------------------------------- verification

/** A URL path made of plain segments (letters, digits, `.`, `_`, `-`; no `.` or `..`), as a file path below `signing-secrets/`. */
function pathFile(path) {
  const segments = path.split('/').slice(1);
  if (segments.length === 0 || segments.some((s) => !/^[\w.-]+$/.test(s) || s === '.' || s === '..')) return undefined;
  return join(secretsDir, ...segments);
}

/**
 * The secrets held for the registration at `path`, and the file they come from: the
 * path's own file in `signing-secrets/` when there is one, else `signing-secret`. One
 * per line (the new one and, during a rotation, the old one).
 */
function secretsFor(path) {
  const own = pathFile(path);
  const file = own && existsSync(own) ? own : secretFile;
  if (!existsSync(file)) return { file: own ?? secretFile, held: [] };
  const held = readFileSync(file, 'utf8')
    .split('\n')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return { file, held };
}

/** Equal in constant time (for equal lengths; the length of a hex HMAC is public). */
function sameHex(expected, header) {
  if (typeof header !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(header);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Checks one delivery: `{ ok: true, matched }` or `{ ok: false, reason }`. The raw body
 * is what was signed: never a re-serialised parse of it.
 */
function verify(raw, headers, held, nowSeconds = Math.floor(Date.now() / 1000)) {
  const timestamp = headers['x-signature-timestamp'];
  if (typeof timestamp !== 'string' || !/^\d+$/.test(timestamp)) return { ok: false, reason: 'no X-Signature-Timestamp' };
  if (Math.abs(nowSeconds - Number(timestamp)) > TOLERANCE_SECONDS) return { ok: false, reason: 'timestamp outside five minutes' };
  for (const secret of held) {
    const expected = createHmac('sha256', Buffer.from(secret, 'utf8'))
      .update(Buffer.concat([Buffer.from(`v1:${timestamp}:`), raw]))
      .digest('hex');
    if (sameHex(expected, headers['x-signature'])) return { ok: true, matched: 'X-Signature' };
    if (sameHex(expected, headers['x-signature-previous'])) return { ok: true, matched: 'X-Signature-Previous' };
  }
  return { ok: false, reason: 'no signature matches the secrets held' };
}

// ---------------------------------------------------------------- server

/** Event ids already processed (dedupe: a retry of a delivered event is answered 2xx and skipped). */
const seen = new Set();

function reply(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Error('body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

async function handle(req, res) {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method === 'GET' && /^\/photos\/[\w.-]+\.png$/.test(path)) {
    console.log(`photo served: ${path}`);
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': photo.length });
    return res.end(photo);
  }
  if (req.method !== 'POST') return reply(res, 404, { error: 'not found' });

  let raw;
  try {
    raw = await readBody(req);
  } catch {
    return reply(res, 413, { error: 'body too large' });
  }
  const { file, held } = secretsFor(path);
  const check = held.length > 0 ? verify(raw, req.headers, held) : undefined;
  // Parsed only after the signature check, and never used to re-create the signed bytes.
  let event;
  try {
    event = JSON.parse(raw.toString('utf8'));
  } catch {
    event = undefined;
  }
  const challenge = event?.event_type === 'endpoint.challenge' ? event?.data?.challenge : undefined;

  if (typeof challenge === 'string') {
    // Answered whatever the signature: a new registration's secret is not known yet (see the top).
    if (check?.ok) console.log(`challenge verified (${check.matched}) and answered on ${path}`);
    else console.log(`challenge answered on ${path} (not verified: ${check ? check.reason : 'no secret held'}; save the secret the registration returns in ${shown(file)})`);
    return reply(res, 200, { challenge });
  }
  if (!check) {
    console.log(`REJECTED ${event?.event_type ?? 'request'} on ${path}: no signing secret in ${shown(file)}`);
    return reply(res, 401, { error: 'no signing secret configured' });
  }
  if (!check.ok) {
    console.log(`REJECTED ${event?.event_type ?? 'request'} on ${path}: ${check.reason} (secrets from ${shown(file)})`);
    return reply(res, 401, { error: 'signature not verified' });
  }
  if (typeof event?.event_id !== 'string') {
    console.log(`REJECTED request on ${path}: signed, but not an event envelope`);
    return reply(res, 400, { error: 'not an event' });
  }
  if (seen.has(event.event_id)) {
    console.log(`duplicate ${event.event_type} ${event.event_id}: already processed, acknowledged again`);
    return reply(res, 200, { received: true, duplicate: true });
  }
  seen.add(event.event_id);
  console.log(`verified ${event.event_type} ${event.event_id} (${check.matched})`);
  console.log(JSON.stringify(event, null, 2));
  return reply(res, 200, { received: true });
}

const { cert, key, made } = certificate();
const server = https.createServer({ cert, key }, (req, res) => {
  handle(req, res).catch((err) => {
    console.error(`error: ${err.message}`);
    if (!res.headersSent) reply(res, 500, { error: 'receiver error' });
  });
});

let waiting = false;
server.on('error', (err) => {
  if (err.code !== 'EADDRINUSE') {
    console.error(`webhook receiver: cannot listen on 127.0.0.1:${PORT}: ${err.message}`);
    process.exit(1);
  }
  // 8443 is one of the only two ports a webhook may use: wait for it rather than pick another.
  if (!waiting) console.log(`webhook receiver: port ${PORT} is in use (another receiver?); waiting for it to be free (Ctrl-C to stop)`);
  waiting = true;
  setTimeout(() => server.listen(PORT, '127.0.0.1'), 1000);
});
server.on('listening', () => {
  console.log(`webhook receiver: certificate ${shown(certFile)} (${made ? 'made now' : 'kept from an earlier run'}): start the system with NODE_EXTRA_CA_CERTS=${shown(certFile)}`);
  console.log(
    `webhook receiver: signing secrets read at each delivery from ${shown(secretsDir)}/<path>, else ${shown(secretFile)} (${existsSync(secretFile) ? 'present' : 'not there yet'})`,
  );
  console.log(`webhook receiver: listening on https://localhost:${PORT}`);
});
server.listen(PORT, '127.0.0.1');

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  });
}
