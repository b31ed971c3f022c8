/**
 * Lower-case RFC 4648 base32 without padding: the spelling of the random ids the
 * services mint (API key ids and marketplace client ids in identity, listing ids in the
 * catalog), short, case-insensitive and safe in URLs and logs.
 */

/** RFC 4648 base32 alphabet, lower-case. */
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** Lower-case base32 without padding. */
export function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}
