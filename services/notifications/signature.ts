/**
 * Delivery signatures (spec "Headers on every delivery"; docs/contract-gaps.md
 * "signatures"): `X-Signature` = lowercase hex HMAC-SHA256, keyed with the UTF-8 bytes
 * of the signing secret exactly as returned, over `v1:` + timestamp + `:` + raw body;
 * `X-Signature-Timestamp` = Unix seconds; `X-Signature-Previous` = the same with the
 * previous secret, only while a rotation overlap is open.
 */
import { createHmac } from 'node:crypto';

/** Lowercase hex HMAC-SHA256 of `v1:<timestamp>:<body>` under `secret`. */
export function sign(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(`v1:${timestamp}:${body}`, 'utf8').digest('hex');
}

/** The secrets that sign one delivery attempt. */
export interface SigningKeys {
  current: string;
  /** Present only while the rotation overlap is open. */
  previous?: string;
}

/** The signature headers for one attempt of `body` at `now`. */
export function signatureHeaders(keys: SigningKeys, body: string, now: Date = new Date()): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  const headers: Record<string, string> = {
    'X-Signature': sign(keys.current, timestamp, body),
    'X-Signature-Timestamp': String(timestamp),
  };
  if (keys.previous !== undefined) headers['X-Signature-Previous'] = sign(keys.previous, timestamp, body);
  return headers;
}
