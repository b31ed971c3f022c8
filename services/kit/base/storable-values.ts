/**
 * What text and which instants the system can store, named once for both layers: the
 * gateway refuses anything else in a public request (`400 validation_failed`), the
 * services' request guard in an internal one (`INVALID_ARGUMENT`), before anything
 * reaches PostgreSQL (docs/decisions.md "Text and instants that can be stored").
 *
 * - Text: no U+0000 (PostgreSQL `text` cannot hold it) and no unpaired UTF-16
 *   surrogate (not a Unicode scalar value: UTF-8 encoding would silently turn it into
 *   U+FFFD, so what is stored would differ from what was sent).
 * - Instants: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z, after applying
 *   any UTC offset (the range of google.protobuf.Timestamp and of an RFC 3339 year
 *   written with four digits; PostgreSQL has no year 0). Calendar dates: years 0001
 *   to 9999.
 */

/** `String.prototype.isWellFormed`/`toWellFormed` (ES2024, Node.js ≥ 20; the compiler's library is ES2023). */
interface WellFormed {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/**
 * True when `text` holds U+0000 or an unpaired surrogate. Both checks are native and
 * allocate nothing; on a Latin-1 string (most text) the second costs nothing at all —
 * a 3 KB description is checked in about 20 ns, a lookaround regex takes 1 µs.
 */
export function isUnstorableText(text: string): boolean {
  return text.includes('\0') || !(text as unknown as WellFormed).isWellFormed();
}

/**
 * `text` made storable: each U+0000 and each unpaired surrogate becomes U+FFFD (the
 * replacement character, as a UTF-8 encoder writes for a lone surrogate). For what is
 * kept of text nobody may refuse (the request log records what a partner sent, it
 * cannot answer 400); `text` itself when it can be stored already.
 */
export function storableText(text: string): string {
  if (!isUnstorableText(text)) return text;
  return (text.replaceAll('\0', '\uFFFD') as unknown as WellFormed).toWellFormed();
}

/** 0001-01-01T00:00:00Z in milliseconds since the epoch. */
export const MIN_INSTANT_MS = -62_135_596_800_000;
/** 9999-12-31T23:59:59.999Z in milliseconds since the epoch (the last whole millisecond). */
export const MAX_INSTANT_MS = 253_402_300_799_999;

/** google.protobuf.Timestamp seconds of 0001-01-01T00:00:00Z. */
export const MIN_TIMESTAMP_SECONDS = -62_135_596_800n;
/** google.protobuf.Timestamp seconds of 9999-12-31T23:59:59Z. */
export const MAX_TIMESTAMP_SECONDS = 253_402_300_799n;

/** True for milliseconds since the epoch inside the storable range. */
export function isStorableInstantMs(ms: number): boolean {
  return ms >= MIN_INSTANT_MS && ms <= MAX_INSTANT_MS;
}
