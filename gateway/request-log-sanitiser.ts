/**
 * Makes a request-log record storable before it is queued (docs/operations.md "Request
 * log"): the log records what a partner sent and cannot answer 400, so whatever the
 * partner chose — a path identifier, an unknown property's name — is turned into what
 * identity accepts instead of being sent as it is: a batch carries many workspaces'
 * records, and one identity cannot store is lost.
 *
 * - Path parameter values: secret-shaped text scrubbed by the logger's rule
 *   (redactSecrets: `psk_…`, `pst_…`, `whsec_…` become `psk_[redacted]` …), then made
 *   storable (U+0000 and unpaired surrogates become U+FFFD), then cut to the limit.
 * - `errors[].field`: reduced to the contract's names (contract-field-names.ts), so a
 *   partner's own key text is never stored, then cut to the limit.
 * - Every other string and every count is held to REQUEST_LOG_LIMITS too, though the
 *   gateway writes them itself: the limits are identity's, and a record beyond them
 *   would be refused (alone, since identity checks each record, but lost all the same).
 */
import { redactSecrets } from '../services/kit/base';
import { REQUEST_LOG_LIMITS as LIMITS } from '../services/kit/base';
import { storableText } from '../services/kit/base';
import { knownFieldPath } from './contract-field-names';
import type { RequestRecordInit } from './request-recorder';

/** Marks text that was cut to its limit. */
const CUT = '…';

/**
 * `text` made storable and at most `max` characters (Unicode code points, as the
 * .proto's `max_len` and PostgreSQL's `char_length` count them): a longer one keeps
 * its first `max - 1` and ends in `…`.
 */
export function storedText(text: string, max: number): string {
  const storable = storableText(text);
  // Code points never outnumber UTF-16 units: most text needs no count.
  if (storable.length <= max) return storable;
  const points = Array.from(storable);
  return points.length <= max ? storable : points.slice(0, max - 1).join('') + CUT;
}

/** A path parameter's value as the log keeps it: no secret, storable, bounded. */
export function storedPathValue(value: string): string {
  return storedText(redactSecrets(value), LIMITS.pathParamValue);
}

/** A violation's field as the log keeps it: contract names only, bounded. */
export function storedFieldPath(field: string): string {
  return storedText(knownFieldPath(field), LIMITS.fieldPath);
}

function storedPathParams(params: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  let n = 0;
  for (const [name, value] of Object.entries(params)) {
    if (n++ >= LIMITS.pathParams) break;
    out[storedText(name, LIMITS.pathParamName)] = storedPathValue(value);
  }
  return out;
}

/** `rec` with every string and list held to what identity stores (a new object; `rec` is left as it is). */
export function sanitiseRecord(rec: RequestRecordInit): RequestRecordInit {
  const out: RequestRecordInit = { ...rec };
  if (rec.keyId !== undefined) out.keyId = storedText(rec.keyId, LIMITS.keyId);
  if (rec.method !== undefined) out.method = storedText(rec.method, LIMITS.method);
  if (rec.route !== undefined) out.route = storedText(rec.route, LIMITS.route);
  if (rec.code !== undefined) out.code = storedText(rec.code, LIMITS.code);
  if (rec.pathParams !== undefined) out.pathParams = storedPathParams(rec.pathParams);
  if (rec.errors !== undefined) {
    out.errors = rec.errors.slice(0, LIMITS.violations).map((e) => ({ field: storedFieldPath(e.field ?? ''), code: storedText(e.code ?? '', LIMITS.code) }));
  }
  return out;
}
