/**
 * A photo URL has one rule on both sides of the gateway (services/kit/base/absolute-uri.ts):
 * every URL the public schema accepts passes the catalog's own checks of an
 * UpsertProperty request (the protovalidate interceptor and propertyInput), and a
 * violation the catalog reports is answered in the contract's field names
 * (docs/decisions.md "A URI is one function on both sides").
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { create, type DescMessage } from '@bufbuild/protobuf';
import { ConnectError } from '@connectrpc/connect';
import { PropertySchema, UpsertPropertyRequestSchema } from '../../gen/psync/catalog/v1/catalog_pb';
import { propertyInput } from '../../services/catalog/property-input';
import { ruleViolations } from '../../services/kit/rpc';
import { inContractNames, publicField } from '../../gateway/internal-fields';
import { upsertPropertyRequest } from '../../gateway/presenters/properties';
import { PROPERTY_INTERNAL_FIELDS } from '../../gateway/routes/properties';
import { schemas } from '../support/request-validators';
import { validationFailed } from '../../services/kit/rpc';
import { ProblemError } from '../../gateway/problems';
import { REQUEST_SCHEMAS } from '../../gateway/contract';
import { ROOT } from '../support/process';
import { fuzzSeed, Rng } from '../support/fuzz';

const example = JSON.parse(readFileSync(join(ROOT, 'examples/property.json'), 'utf8')) as Record<string, unknown>;
const WORKSPACE = '0b6f2f3e-6a8e-4c1f-9a57-3f1d2c4b5a69';

/** Whether the gateway's schema accepts the example property with this one photo URL. */
function publicAccepts(url: string): boolean {
  return schemas.property.violations({ ...example, photos: [{ url, position: 0 }] }).length === 0;
}

/** Whether the catalog's checks (the interceptor's rules, then propertyInput) accept it. */
function internalAccepts(url: string): boolean {
  const body = { ...example, photos: [{ url, position: 0 }] } as Parameters<typeof upsertPropertyRequest>[2];
  const req = create(UpsertPropertyRequestSchema, upsertPropertyRequest(WORKSPACE, 'villa', body));
  if (ruleViolations(UpsertPropertyRequestSchema, req).violations.length > 0) return false;
  try {
    propertyInput(req);
    return true;
  } catch (err) {
    if (err instanceof ConnectError) return false;
    throw err;
  }
}

const NAMED = [
  'https://[::ffff:127.0.0.1]:8443/a.png',
  'https://[::ffff:7f00:1]:8443/a.png',
  'https://[1:2:3:4:5:6:1.2.3.4]/a.png',
  'https://[::1]:8443/a.png',
  'https://[fe80::1%25eth0]/a.png',
  'https://[v1.x]/a.png',
  'https://0x7f000001:8443/a.png',
  'https://127.1:8443/a.png',
  'https://2130706433/a.png',
  'https://user:pass@localhost:8443/a.png',
  'http://169.254.169.254/latest/meta-data/',
  'https://localhost:8443/photos/villa-azure.png',
  'ftp://photos.example/a.png',
  'file:///etc/passwd',
  'https://x.example/a b.jpg',
  'https://x.example/%zz.jpg',
  'https://x.example/é.jpg',
  'not a uri',
  '/relative/a.png',
  `https://x.example/${'a'.repeat(2030)}`,
];

const URI_CHARS = "abcxyzAXZ0189:/?#[]@!$&'()*+,;=-._~% ";
function randomUrl(rng: Rng): string {
  const prefix = rng.pick(['https://', 'http://', 'https://[', 'https://[::ffff:', 'h:', '', 'https://u@']);
  let out = prefix;
  const n = rng.int(24);
  for (let i = 0; i < n; i++) out += rng.pick([...URI_CHARS]);
  return out;
}

describe('one rule for a photo URL on both sides of the gateway', () => {
  test.each(NAMED)('%s: the catalog accepts it exactly when the public schema does', (url) => {
    expect({ url, internal: internalAccepts(url) }).toEqual({ url, internal: publicAccepts(url) });
  });

  test('the IPv4-mapped loopback spelling is a URI on both sides (it is then rejected as forbidden_url, not refused)', () => {
    expect(publicAccepts('https://[::ffff:127.0.0.1]:8443/a.png')).toBe(true);
    expect(internalAccepts('https://[::ffff:127.0.0.1]:8443/a.png')).toBe(true);
  });

  test('seeded random URLs: whatever the schema accepts, the catalog accepts', () => {
    const { seed } = fuzzSeed();
    const rng = new Rng(seed);
    let accepted = 0;
    for (let i = 0; i < 3000; i++) {
      const url = randomUrl(rng);
      const pub = publicAccepts(url);
      if (pub) accepted += 1;
      expect({ seed, url, internal: internalAccepts(url) }).toEqual({ seed, url, internal: pub });
    }
    expect(accepted).toBeGreaterThan(100);
  });
});

/** Every field path of `desc` (lists as `[0]`), prefixed by `prefix`, down to scalars. */
function fieldPaths(desc: DescMessage, prefix: string, depth = 0): string[] {
  const out: string[] = [];
  for (const f of desc.fields) {
    const path = prefix === '' ? f.name : `${prefix}.${f.name}`;
    const at = f.fieldKind === 'list' ? `${path}[0]` : path;
    out.push(path);
    if (f.fieldKind === 'list') out.push(at);
    const nested = f.fieldKind === 'message' || (f.fieldKind === 'list' && f.listKind === 'message') ? f.message : undefined;
    if (nested && depth < 4) out.push(...fieldPaths(nested, at, depth + 1));
  }
  return out;
}

/** Whether `path` (`photos[0].url`) names a field of the public property schema. */
function inPublicSchema(path: string): boolean {
  let node: Record<string, unknown> | undefined = REQUEST_SCHEMAS.property;
  for (const seg of path.split('.')) {
    const m = /^([a-z0-9_]+)(\[\d+\])?$/.exec(seg);
    if (!m || !node) return false;
    node = (node.properties as Record<string, Record<string, unknown>> | undefined)?.[m[1]!];
    if (m[2] && node) node = node.items as Record<string, unknown>;
  }
  return node !== undefined;
}

describe('a violation behind the gateway never names an internal field', () => {
  const internal = ['workspace_id', 'provider_id', 'property', ...fieldPaths(PropertySchema, 'property')];

  test.each(internal)('UpsertProperty violation on %s: a contract field or an internal error', (field) => {
    const answer = inContractNames(validationFailed([{ field, code: 'format' }]), PROPERTY_INTERNAL_FIELDS);
    if (answer instanceof ProblemError) {
      expect(answer.code).toBe('validation_failed');
      const [v] = answer.errors!;
      expect(v!.field).not.toMatch(/^property[.[]|^workspace_id/);
      expect(v!.field === 'body' || v!.field === 'provider_id' || inPublicSchema(v!.field)).toBe(true);
    } else {
      // Not a problem document: the error mapper answers 500 internal_error.
      expect(answer).toBeInstanceOf(Error);
      expect(answer).not.toBeInstanceOf(ConnectError);
    }
  });

  test('the mapping itself', () => {
    expect(publicField('property.photos[7].url', PROPERTY_INTERNAL_FIELDS)).toBe('photos[7].url');
    expect(publicField('property.address.country', PROPERTY_INTERNAL_FIELDS)).toBe('address.country');
    expect(publicField('property', PROPERTY_INTERNAL_FIELDS)).toBe('body');
    expect(publicField('provider_id', PROPERTY_INTERNAL_FIELDS)).toBe('provider_id');
    expect(publicField('workspace_id', PROPERTY_INTERNAL_FIELDS)).toBeUndefined();
    expect(publicField('', PROPERTY_INTERNAL_FIELDS)).toBeUndefined();
    expect(publicField('target', { target: 'listing_id' })).toBe('listing_id');
    expect(publicField('constructor', {})).toBeUndefined();
  });

  test('a mix of mapped and internal-only violations is an internal error, with the internal names kept for the log', () => {
    const answer = inContractNames(
      validationFailed([
        { field: 'property.name', code: 'required' },
        { field: 'workspace_id', code: 'format' },
      ]),
      PROPERTY_INTERNAL_FIELDS,
    );
    expect(answer).not.toBeInstanceOf(ProblemError);
    expect((answer as Error).message).toContain('workspace_id');
  });
});
