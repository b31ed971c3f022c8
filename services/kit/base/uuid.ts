/**
 * Textual UUIDs (RFC 9562, any version, either case), the one definition every
 * service, the gateway and the CLI use. Stored and compared in canonical lower case.
 * A request field that must hold one says so in its .proto
 * (`(buf.validate.field).string.uuid`, enforced by services/kit/rpc/validation.ts); these
 * helpers serve the values that arrive otherwise (tokens, events, look-ups where a
 * malformed id simply matches nothing).
 */

/** A textual UUID: 8-4-4-4-12 hexadecimal digits. */
export const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** True for a textual UUID (any version, either case). */
export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}

/** True for a UUID in canonical lower case (the form the system writes). */
export function isCanonicalUuid(value: string): boolean {
  return UUID_PATTERN.test(value) && value === value.toLowerCase();
}

/** The canonical (lower-case) form of a UUID. */
export function canonicalUuid(value: string): string {
  return value.toLowerCase();
}
