/**
 * Verification of signed webhook deliveries (contract "Headers on every delivery" and
 * "Receiver rules"):
 *
 *   X-Signature            lowercase hex HMAC-SHA256, keyed with the UTF-8 bytes of the
 *                          signing secret, over `v1:` + X-Signature-Timestamp + `:` + raw body
 *   X-Signature-Timestamp  Unix seconds, covered by the signature
 *   X-Signature-Previous   the same with the previous secret, only during a rotation overlap
 *
 * The checks run in this order, and the first that fails is the error's `code`
 * (docs/partners/signature-vectors.json pins every case):
 *   1. X-Signature and X-Signature-Timestamp present and not empty     missing_header
 *   2. the timestamp is decimal digits                                 invalid_timestamp
 *   3. at most `toleranceSeconds` old                                  timestamp_too_old
 *      and at most `toleranceSeconds` ahead                            timestamp_too_new
 *   4. some signature matches some secret                              signature_mismatch
 *   5. the body is a delivery envelope of a known kind                 invalid_payload
 *
 * Every signature sent is compared with every secret given, each comparison in
 * constant time and all of them made, so the time taken does not depend on which (if
 * any) matched. Either signature may match: the service signs with its current and
 * previous secret during its rotation overlap, and the receiver may pass its current
 * and previous secret during its own.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { webhookEndpointEventsValues } from './generated/openapi';
import type { WebhookEvent } from './types';

export const SIGNATURE_HEADER = 'X-Signature';
export const TIMESTAMP_HEADER = 'X-Signature-Timestamp';
export const PREVIOUS_SIGNATURE_HEADER = 'X-Signature-Previous';
/** The contract's tolerance: five minutes. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** The event types a partner subscribes to: the document's `WebhookEndpoint.events` list. */
export const SUBSCRIBABLE_EVENT_TYPES = webhookEndpointEventsValues;

/** Every event type a delivery may carry: the endpoint challenge, then the subscribable ones. */
export const WEBHOOK_EVENT_TYPES = ['endpoint.challenge', ...SUBSCRIBABLE_EVENT_TYPES] as const;

export type WebhookVerificationCode = 'missing_header' | 'invalid_timestamp' | 'timestamp_too_old' | 'timestamp_too_new' | 'signature_mismatch' | 'invalid_payload';

/** A delivery that must be refused (answer it with a 4xx; never process it). */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  constructor(
    readonly code: WebhookVerificationCode,
    message: string,
  ) {
    super(`${code}: ${message}`);
  }
}

/**
 * Request headers in any of the usual shapes: a fetch `Headers`, Node's
 * `IncomingHttpHeaders` (lower-case names, possibly arrays) or a plain record with any
 * capitalisation.
 */
export type WebhookHeaders = Headers | Record<string, string | readonly string[] | undefined>;

export interface VerifyOptions {
  /** Seconds the timestamp may be off either way (default 300, the contract's five minutes). */
  toleranceSeconds?: number;
  /** The time to check against (default: now). */
  now?: Date;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function' && typeof (headers as Headers).has === 'function') {
    return (headers as Headers).get(name) ?? undefined;
  }
  const wanted = name.toLowerCase();
  for (const [k, v] of Object.entries(headers as Record<string, string | readonly string[] | undefined>)) {
    if (k.toLowerCase() !== wanted || v === undefined) continue;
    return typeof v === 'string' ? v : v[0];
  }
  return undefined;
}

/** Constant-time equality of two strings' bytes (false when the lengths differ, after a comparison of the same cost). */
function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  if (x.length !== y.length) {
    timingSafeEqual(x, x);
    return false;
  }
  return timingSafeEqual(x, y);
}

/** The signature of `body` at `timestamp` under `secret` (what the service sends in X-Signature). */
export function signWebhook(secret: string, timestamp: number | string, body: string | Uint8Array): string {
  const hmac = createHmac('sha256', Buffer.from(secret, 'utf8'));
  hmac.update(`v1:${timestamp}:`, 'utf8');
  hmac.update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
  return hmac.digest('hex');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Verifies one delivery and returns its event, typed by `event_type`.
 *
 * @param rawBody the body exactly as received: bytes, or the text they decode to as UTF-8 (never re-serialised JSON)
 * @param headers the request's headers
 * @param secrets the signing secret, or the current and previous one during a rotation
 * @throws WebhookVerificationError
 */
export function verifyWebhook(rawBody: string | Uint8Array, headers: WebhookHeaders, secrets: string | readonly string[], options: VerifyOptions = {}): WebhookEvent {
  const keys = (typeof secrets === 'string' ? [secrets] : [...secrets]).filter((s) => s.length > 0);
  if (keys.length === 0) throw new TypeError('verifyWebhook needs at least one non-empty signing secret');
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isFinite(tolerance) || tolerance < 0) throw new TypeError('toleranceSeconds must be a non-negative number');

  const signature = header(headers, SIGNATURE_HEADER);
  const timestamp = header(headers, TIMESTAMP_HEADER);
  const previous = header(headers, PREVIOUS_SIGNATURE_HEADER);
  if (!signature || !timestamp) {
    throw new WebhookVerificationError('missing_header', `${SIGNATURE_HEADER} and ${TIMESTAMP_HEADER} are both required`);
  }
  if (!/^[0-9]{1,15}$/.test(timestamp)) throw new WebhookVerificationError('invalid_timestamp', `${TIMESTAMP_HEADER} is not Unix seconds`);
  const age = Math.floor((options.now ?? new Date()).getTime() / 1000) - Number(timestamp);
  if (age > tolerance) throw new WebhookVerificationError('timestamp_too_old', `signed ${age} s ago, more than ${tolerance} s`);
  if (-age > tolerance) throw new WebhookVerificationError('timestamp_too_new', `signed ${-age} s ahead, more than ${tolerance} s`);

  const sent = previous ? [signature, previous] : [signature];
  let matched = false;
  for (const key of keys) {
    const expected = signWebhook(key, timestamp, rawBody);
    for (const s of sent) matched = safeEqual(expected, s) || matched;
  }
  if (!matched) throw new WebhookVerificationError('signature_mismatch', 'no signature matches the given secrets');

  const text = typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8');
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    throw new WebhookVerificationError('invalid_payload', 'the body is not JSON');
  }
  if (
    !isObject(event) ||
    typeof event.event_id !== 'string' ||
    typeof event.occurred_at !== 'string' ||
    !isObject(event.data) ||
    !(WEBHOOK_EVENT_TYPES as readonly unknown[]).includes(event.event_type)
  ) {
    throw new WebhookVerificationError('invalid_payload', 'the body is not a delivery envelope of a known event type');
  }
  return event as unknown as WebhookEvent;
}
