/**
 * The one rule for a URI field of the contract (a photo's `url`, a webhook endpoint's
 * `url`): an absolute URI by the grammar of RFC 3986, as ajv-formats' full `uri` format
 * reads it. The gateway's JSON Schema `format: uri` (gateway/validate.ts) and the
 * catalog's check of an UpsertProperty request (services/catalog/property-input.ts) call
 * this function, so a URL the public schema accepts is never refused behind the gateway
 * (test/catalog/photo-url-rule.test.ts pins it).
 *
 * Not protovalidate's `string.uri`: its parser refuses an IPv6 literal with an embedded
 * IPv4 part (`https://[::ffff:127.0.0.1]/`, RFC 3986 `ls32`), which the public schema
 * accepts, and accepts IPv6 zone identifiers (`[fe80::1%25eth0]`), which it refuses.
 * Whether a URL may be fetched is a separate rule (services/kit/egress/egress-rules.ts): a photo
 * URL that is a URI but not fetchable is rejected as `forbidden_url`, never refused whole.
 */
import { fullFormats } from 'ajv-formats/dist/formats';

const uri = fullFormats.uri as (text: string) => boolean;

/** True when `text` is an absolute URI (scheme, then hierarchical part; RFC 3986 section 4.3). */
export function isAbsoluteUri(text: string): boolean {
  return uri(text);
}
