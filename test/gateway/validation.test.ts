/**
 * The JSON Schemas and the mapping of their violations to the public `errors[]`
 * (docs/contract-gaps.md "`errors[].code` values"): every code, every path form, and
 * never a submitted value.
 */
import type { ErrorObject } from 'ajv';
import { toViolations, queryForSchema, fieldPath, MAX_VIOLATIONS } from '../../gateway/validate';
import { schemas } from '../support/request-validators';
import { blockRangeViolations } from '../../gateway/routes/blocks';
import { checkRange } from '../../services/domain';
import { acceptableWebhookUrl, webhookUrlViolations } from '../../gateway/routes/webhooks';
import { acknowledgeViolations } from '../../gateway/routes/deletion-requests';
import { VIOLATION_CODES } from '../../gateway/problems';
import { minimalProperty, validBlock, validEndpoint, validProperty } from './fixtures';

type Body = Record<string, any>;

function property(change: (p: Body) => void): Body {
  const p = validProperty() as Body;
  change(p);
  return p;
}

const propertyErrors = (change: (p: Body) => void) => schemas.property.violations(property(change));

describe('property schema', () => {
  test('a complete property and one with only the required fields pass', () => {
    expect(schemas.property.violations(validProperty())).toEqual([]);
    expect(schemas.property.violations(minimalProperty())).toEqual([]);
  });

  test.each([
    ['name', 'name'],
    ['property_type', 'property_type'],
    ['address', 'address'],
    ['occupancy', 'occupancy'],
    ['check_in_time', 'check_in_time'],
    ['check_out_time', 'check_out_time'],
    ['status', 'status'],
  ])('missing required %s → required', (key, field) => {
    expect(propertyErrors((p) => delete p[key])).toEqual([{ field, code: 'required' }]);
  });

  test.each(['description', 'base_rate', 'amenities', 'photos'])('%s is optional', (key) => {
    expect(propertyErrors((p) => delete p[key])).toEqual([]);
  });

  test.each([
    ['line1', 'required'],
    ['city', 'required'],
    ['country', 'required'],
    ['latitude', 'required'],
    ['longitude', 'required'],
  ])('missing address.%s → required on the nested path', (key) => {
    expect(propertyErrors((p) => delete p.address[key])).toEqual([{ field: `address.${key}`, code: 'required' }]);
  });

  test('region and postal_code are optional', () => {
    expect(
      propertyErrors((p) => {
        delete p.address.region;
        delete p.address.postal_code;
      }),
    ).toEqual([]);
  });

  test.each(['max_guests', 'bedrooms', 'beds', 'bathrooms'])('missing occupancy.%s → required', (key) => {
    expect(propertyErrors((p) => delete p.occupancy[key])).toEqual([{ field: `occupancy.${key}`, code: 'required' }]);
  });

  test('unknown fields are named, at any depth, with indices', () => {
    expect(
      propertyErrors((p) => {
        p.floor = 3;
        p.address.apartment = '4B';
        p.photos[1].caption = 'view';
      }),
    ).toEqual([
      { field: 'floor', code: 'unknown_field' },
      { field: 'address.apartment', code: 'unknown_field' },
      { field: 'photos[1].caption', code: 'unknown_field' },
    ]);
  });

  test('missing fields inside array items carry the index', () => {
    expect(propertyErrors((p) => delete p.photos[1].url)).toEqual([{ field: 'photos[1].url', code: 'required' }]);
  });

  test.each<[string, (p: Body) => void, string, string]>([
    ['name not a string', (p) => (p.name = 42), 'name', 'type'],
    ['latitude as a string', (p) => (p.address.latitude = '38.7'), 'address.latitude', 'type'],
    ['money value as a JSON number', (p) => (p.base_rate.value = 120.5), 'base_rate.value', 'type'],
    ['beds not an integer', (p) => (p.occupancy.beds = 1.5), 'occupancy.beds', 'type'],
    ['amenities not an array', (p) => (p.amenities = 'wifi'), 'amenities', 'type'],
    ['address null', (p) => (p.address = null), 'address', 'type'],
    ['photo url not a URI', (p) => (p.photos[1].url = 'not a uri'), 'photos[1].url', 'format'],
    ['country lower case', (p) => (p.address.country = 'pt'), 'address.country', 'pattern'],
    ['country three letters', (p) => (p.address.country = 'PRT'), 'address.country', 'pattern'],
    ['property_type not a slug', (p) => (p.property_type = 'Flat!'), 'property_type', 'pattern'],
    ['check_in_time 25:00', (p) => (p.check_in_time = '25:00'), 'check_in_time', 'pattern'],
    ['check_out_time 9:00', (p) => (p.check_out_time = '9:00'), 'check_out_time', 'pattern'],
    ['amenity not a slug', (p) => (p.amenities[1] = 'Wi Fi'), 'amenities[1]', 'pattern'],
    ['currency lower case', (p) => (p.base_rate.currency = 'eur'), 'base_rate.currency', 'pattern'],
    ['negative money value', (p) => (p.base_rate.value = '-1.00'), 'base_rate.value', 'pattern'],
    ['money with eleven decimals', (p) => (p.base_rate.value = '1.12345678901'), 'base_rate.value', 'pattern'],
    ['money with sixteen integer digits', (p) => (p.base_rate.value = '1234567890123456'), 'base_rate.value', 'pattern'],
    ['money with a trailing dot', (p) => (p.base_rate.value = '12.'), 'base_rate.value', 'pattern'],
    ['an unassigned country code', (p) => (p.address.country = 'XX'), 'address.country', 'enum'],
    ['amenity slug of 101 characters', (p) => (p.amenities[0] = 'a'.repeat(101)), 'amenities[0]', 'max_length'],
    ['money with an exponent', (p) => (p.base_rate.value = '1e3'), 'base_rate.value', 'pattern'],
    ['status outside the enum', (p) => (p.status = 'sold'), 'status', 'enum'],
    ['empty name', (p) => (p.name = ''), 'name', 'min_length'],
    ['empty line1', (p) => (p.address.line1 = ''), 'address.line1', 'min_length'],
    ['name of 121 characters', (p) => (p.name = 'n'.repeat(121)), 'name', 'max_length'],
    ['description of 4001 characters', (p) => (p.description = 'd'.repeat(4001)), 'description', 'max_length'],
    ['property_type of 61 characters', (p) => (p.property_type = 'a'.repeat(61)), 'property_type', 'max_length'],
    ['city of 201 characters', (p) => (p.address.city = 'c'.repeat(201)), 'address.city', 'max_length'],
    ['postal_code of 21 characters', (p) => (p.address.postal_code = '1'.repeat(21)), 'address.postal_code', 'max_length'],
    ['latitude under -90', (p) => (p.address.latitude = -90.5), 'address.latitude', 'minimum'],
    ['longitude over 180', (p) => (p.address.longitude = 180.5), 'address.longitude', 'maximum'],
    ['max_guests 0', (p) => (p.occupancy.max_guests = 0), 'occupancy.max_guests', 'minimum'],
    ['bathrooms 101', (p) => (p.occupancy.bathrooms = 101), 'occupancy.bathrooms', 'maximum'],
    ['negative photo position', (p) => (p.photos[0].position = -1), 'photos[0].position', 'minimum'],
    ['61 amenities', (p) => (p.amenities = Array.from({ length: 61 }, (_, i) => `a${i}`)), 'amenities', 'max_items'],
    ['31 photos', (p) => (p.photos = Array.from({ length: 31 }, (_, i) => ({ url: `https://img.example.com/${i}.jpg`, position: i }))), 'photos', 'max_items'],
  ])('%s', (_name, change, field, code) => {
    expect(propertyErrors(change)).toEqual([{ field, code }]);
  });

  test('bounds are inclusive', () => {
    expect(
      propertyErrors((p) => {
        p.name = 'n'.repeat(120);
        p.description = 'd'.repeat(4000);
        p.property_type = 'a'.repeat(60);
        p.address.latitude = -90;
        p.address.longitude = 180;
        p.occupancy = { max_guests: 100, bedrooms: 0, beds: 100, bathrooms: 0 };
        p.amenities = Array.from({ length: 60 }, (_, i) => `a${i}`);
        p.photos = Array.from({ length: 30 }, (_, i) => ({ url: `https://img.example.com/${i}.jpg`, position: i }));
        p.check_in_time = '23:59';
        p.check_out_time = '00:00';
        p.base_rate = { value: '0', currency: 'JPY' };
        p.amenities[0] = 'a'.repeat(100);
      }),
    ).toEqual([]);
  });

  test('a body that is not an object is one type violation of `body`', () => {
    expect(schemas.property.violations([validProperty()])).toEqual([{ field: 'body', code: 'type' }]);
    expect(schemas.property.violations('text')).toEqual([{ field: 'body', code: 'type' }]);
    expect(schemas.property.violations(null)).toEqual([{ field: 'body', code: 'type' }]);
    expect(schemas.block.violations([])).toEqual([{ field: 'body', code: 'type' }]);
    expect(schemas.acknowledge.violations(7)).toEqual([{ field: 'body', code: 'type' }]);
  });

  test('`__proto__` and `constructor` are plain unknown fields', () => {
    const body = JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1}') as Body;
    Object.assign(body, minimalProperty());
    expect(schemas.property.violations(body)).toEqual([
      { field: '__proto__', code: 'unknown_field' },
      { field: 'constructor', code: 'unknown_field' },
    ]);
    expect(({} as Body).polluted).toBeUndefined();
  });

  test('every violation is reported at once', () => {
    const found = propertyErrors((p) => {
      p.name = '';
      p.address.country = 'pt';
      delete p.occupancy.beds;
      p.extra = true;
    });
    expect(found).toEqual(
      expect.arrayContaining([
        { field: 'name', code: 'min_length' },
        { field: 'address.country', code: 'pattern' },
        { field: 'occupancy.beds', code: 'required' },
        { field: 'extra', code: 'unknown_field' },
      ]),
    );
    expect(found).toHaveLength(4);
  });
});

describe('block schema and range rule', () => {
  const blockErrors = (change: (b: Body) => void) => {
    const b = validBlock() as Body;
    change(b);
    return [...schemas.block.violations(b), ...blockRangeViolations(b, schemas.block.violations(b))];
  };

  test('a valid block passes; reason defaults to reserved', () => {
    const b = validBlock() as Body;
    delete b.reason;
    expect(schemas.block.violations(b)).toEqual([]);
    expect(b.reason).toBe('reserved');
    expect(blockRangeViolations(b)).toEqual([]);
  });

  test('provider_id instead of listing_id is valid (the 501 comes later)', () => {
    expect(
      blockErrors((b) => {
        delete b.listing_id;
        b.provider_id = 'prop-1';
      }),
    ).toEqual([]);
  });

  test('both or neither of provider_id and listing_id → listing_id one_of', () => {
    expect(blockErrors((b) => (b.provider_id = 'prop-1'))).toEqual([{ field: 'listing_id', code: 'one_of' }]);
    expect(blockErrors((b) => delete b.listing_id)).toEqual([{ field: 'listing_id', code: 'one_of' }]);
  });

  test.each<[string, (b: Body) => void, string, string]>([
    ['guest name field', (b) => (b.guest_name = 'Ada'), 'guest_name', 'unknown_field'],
    ['amount field', (b) => (b.amount = { value: '1', currency: 'EUR' }), 'amount', 'unknown_field'],
    ['missing check_in', (b) => delete b.check_in, 'check_in', 'required'],
    ['missing check_out', (b) => delete b.check_out, 'check_out', 'required'],
    ['impossible date', (b) => (b.check_in = '2027-02-30'), 'check_in', 'format'],
    ['date with a time', (b) => (b.check_out = '2027-03-04T00:00:00Z'), 'check_out', 'format'],
    ['reason outside the closed set', (b) => (b.reason = 'vacation'), 'reason', 'enum'],
    [
      'provider_id too long',
      (b) => {
        delete b.listing_id;
        b.provider_id = 'p'.repeat(129);
      },
      'provider_id',
      'max_length',
    ],
    [
      'empty provider_id',
      (b) => {
        delete b.listing_id;
        b.provider_id = '';
      },
      'provider_id',
      'min_length',
    ],
    ['listing_id too long', (b) => (b.listing_id = 'l'.repeat(256)), 'listing_id', 'max_length'],
    ['check_out equal to check_in', (b) => (b.check_out = b.check_in), 'check_out', 'invalid'],
    ['check_out before check_in', (b) => (b.check_out = '2027-02-01'), 'check_out', 'invalid'],
    [
      '731 nights',
      (b) => {
        b.check_in = '2027-01-01';
        b.check_out = '2029-01-01';
      },
      'check_out',
      'maximum',
    ],
  ])('%s', (_name, change, field, code) => {
    expect(blockErrors(change)).toEqual([{ field, code }]);
  });

  test('730 nights is the most, 1 the least; leap days count', () => {
    expect(checkRange('2027-01-01', '2028-12-31').span?.nights).toBe(730);
    expect(
      blockErrors((b) => {
        b.check_in = '2027-01-01';
        b.check_out = '2028-12-31';
      }),
    ).toEqual([]);
    expect(
      blockErrors((b) => {
        b.check_in = '2028-02-28';
        b.check_out = '2028-02-29';
      }),
    ).toEqual([]);
    expect(checkRange('2028-02-28', '2028-03-01').span?.nights).toBe(2);
  });

  test('the range rule runs beside other violations, not over bad dates', () => {
    expect(
      blockErrors((b) => {
        b.reason = 'x';
        b.check_out = '2027-01-01';
      }),
    ).toEqual([
      { field: 'reason', code: 'enum' },
      { field: 'check_out', code: 'invalid' },
    ]);
    expect(blockErrors((b) => (b.check_out = '2027-13-01'))).toEqual([{ field: 'check_out', code: 'format' }]);
  });
});

describe('webhook endpoint schema', () => {
  const endpointErrors = (change: (e: Body) => void) => {
    const e = validEndpoint() as Body;
    change(e);
    const found = schemas.webhookEndpoint.violations(e);
    return [...found, ...webhookUrlViolations(e, found)];
  };

  test('valid, including an empty event list (pause) and port 8443', () => {
    expect(endpointErrors(() => undefined)).toEqual([]);
    expect(endpointErrors((e) => (e.events = []))).toEqual([]);
    expect(endpointErrors((e) => (e.url = 'https://hooks.example.com:8443/x'))).toEqual([]);
    expect(endpointErrors((e) => (e.url = 'https://hooks.example.com:443/x'))).toEqual([]);
  });

  test.each([
    'http://hooks.example.com/x',
    'ftp://hooks.example.com/x',
    'https://hooks.example.com:8080/x',
    'https://203.0.113.7/x',
    'https://[2001:db8::1]/x',
    'https://0x7f.1/x',
    'https://user:pass@hooks.example.com/x',
    'not a url at all',
    'https://',
  ])('refused URL %s → one generic url/invalid', (url) => {
    expect(endpointErrors((e) => (e.url = url))).toEqual([{ field: 'url', code: 'invalid' }]);
  });

  test('length, type, enum, max_items, required', () => {
    expect(endpointErrors((e) => (e.url = `https://hooks.example.com/${'a'.repeat(2030)}`))).toEqual([{ field: 'url', code: 'max_length' }]);
    expect(endpointErrors((e) => (e.url = 443))).toEqual([{ field: 'url', code: 'type' }]);
    expect(endpointErrors((e) => (e.events = ['booking.created']))).toEqual([{ field: 'events[0]', code: 'enum' }]);
    expect(endpointErrors((e) => (e.events = ['endpoint.challenge']))).toEqual([{ field: 'events[0]', code: 'enum' }]);
    expect(endpointErrors((e) => (e.events = Array.from({ length: 17 }, () => 'user.erased')))).toEqual([{ field: 'events', code: 'max_items' }]);
    expect(endpointErrors((e) => (e.events = Array.from({ length: 16 }, () => 'user.erased')))).toEqual([]);
    expect(endpointErrors((e) => delete e.events)).toEqual([{ field: 'events', code: 'required' }]);
    expect(endpointErrors((e) => (e.secret = 'x'))).toEqual([{ field: 'secret', code: 'unknown_field' }]);
  });

  test('the look-up-free URL check', () => {
    expect(acceptableWebhookUrl('https://localhost:8443/hook')).toBe(true);
    expect(acceptableWebhookUrl('HTTPS://Hooks.Example.com/x')).toBe(true);
    expect(acceptableWebhookUrl('https://127.0.0.1:8443/hook')).toBe(false);
  });
});

describe('acknowledge body', () => {
  test('empty object and a date-time pass', () => {
    expect(schemas.acknowledge.violations({})).toEqual([]);
    expect(schemas.acknowledge.violations({ completed_at: '2027-01-02T03:04:05Z' })).toEqual([]);
    expect(schemas.acknowledge.violations({ completed_at: '2027-01-02T03:04:05.123+02:00' })).toEqual([]);
  });

  test('bad date-time → format; unknown field; leap second is representable', () => {
    expect(schemas.acknowledge.violations({ completed_at: 'yesterday' })).toEqual([{ field: 'completed_at', code: 'format' }]);
    expect(schemas.acknowledge.violations({ completed_at: '2027-01-02' })).toEqual([{ field: 'completed_at', code: 'format' }]);
    expect(schemas.acknowledge.violations({ note: 'x' })).toEqual([{ field: 'note', code: 'unknown_field' }]);
    const leap = { completed_at: '2016-12-31T23:59:60Z' };
    expect([...schemas.acknowledge.violations(leap), ...acknowledgeViolations(leap)]).toEqual([]);
  });
});

describe('path and query parameters', () => {
  test('path parameter bounds are reported under the parameter name', () => {
    expect(schemas.propertyPath.violations({ provider_id: 'p'.repeat(128) })).toEqual([]);
    expect(schemas.propertyPath.violations({ provider_id: 'p'.repeat(129) })).toEqual([{ field: 'provider_id', code: 'max_length' }]);
    expect(schemas.propertyPath.violations({})).toEqual([{ field: 'provider_id', code: 'required' }]);
    expect(schemas.blockPath.violations({ external_uid: 'u'.repeat(255) })).toEqual([]);
    expect(schemas.blockPath.violations({ external_uid: 'u'.repeat(256) })).toEqual([{ field: 'external_uid', code: 'max_length' }]);
    expect(schemas.deletionRequestPath.violations({ event_id: '6f1c1f57-3a39-4f0a-9a8e-0a4f2e2d7c11' })).toEqual([]);
    expect(schemas.deletionRequestPath.violations({ event_id: 'not-a-uuid' })).toEqual([{ field: 'event_id', code: 'format' }]);
  });

  test('lengths count characters, not bytes', () => {
    expect(schemas.propertyPath.violations({ provider_id: 'é'.repeat(128) })).toEqual([]);
  });

  const blocksQuery = (q: Record<string, string | string[]>) => {
    const data = queryForSchema(q, ['page', 'page_size']);
    return { violations: schemas.blocksQuery.violations(data), data };
  };

  test('GET /blocks query: defaults, integers from strings', () => {
    const ok = blocksQuery({ from: '2027-01-01', to: '2027-02-01', page: '3', page_size: '200' });
    expect(ok.violations).toEqual([]);
    expect(ok.data).toEqual({ from: '2027-01-01', to: '2027-02-01', page: 3, page_size: 200 });
    const defaults = blocksQuery({});
    expect(defaults.data).toEqual({ page: 1, page_size: 50 });
  });

  test.each<[Record<string, string | string[]>, { field: string; code: string }[]]>([
    [{ page: '0' }, [{ field: 'page', code: 'minimum' }]],
    [{ page: '-1' }, [{ field: 'page', code: 'minimum' }]],
    [{ page: 'two' }, [{ field: 'page', code: 'type' }]],
    [{ page: '1.5' }, [{ field: 'page', code: 'type' }]],
    [{ page: '' }, [{ field: 'page', code: 'type' }]],
    [{ page_size: '0' }, [{ field: 'page_size', code: 'minimum' }]],
    [{ page_size: '201' }, [{ field: 'page_size', code: 'maximum' }]],
    [{ page_size: ['10', '20'] }, [{ field: 'page_size', code: 'type' }]],
    [{ from: '2027-02-30' }, [{ field: 'from', code: 'format' }]],
    [{ to: 'tomorrow' }, [{ field: 'to', code: 'format' }]],
    [{ limit: '10' }, [{ field: 'limit', code: 'unknown_field' }]],
    [{ access_token: 'pst_x' }, [{ field: 'access_token', code: 'unknown_field' }]],
    [Object.fromEntries([['__proto__', '1']]), [{ field: '__proto__', code: 'unknown_field' }]],
  ])('query %j', (q, expected) => {
    expect(blocksQuery(q).violations).toEqual(expected);
  });

  test('routes without query parameters refuse any', () => {
    expect(schemas.noParameters.violations({ x: '1' })).toEqual([{ field: 'x', code: 'unknown_field' }]);
  });
});

describe('mapping ajv errors', () => {
  const err = (keyword: string, instancePath = '', params: Record<string, unknown> = {}): ErrorObject =>
    ({ keyword, instancePath, schemaPath: `#/${keyword}`, params }) as ErrorObject;

  test('every keyword maps into the published vocabulary', () => {
    const keywords = [
      'required',
      'additionalProperties',
      'type',
      'format',
      'pattern',
      'enum',
      'const',
      'minLength',
      'maxLength',
      'minimum',
      'exclusiveMinimum',
      'maximum',
      'exclusiveMaximum',
      'minItems',
      'maxItems',
      'oneOf',
      'uniqueItems',
      'multipleOf',
      'not',
    ];
    const codes = keywords.map((k) => toViolations([err(k, '/x', { missingProperty: 'y', additionalProperty: 'z' })], { x: {} })[0]!.code);
    expect(codes).toEqual([
      'required',
      'unknown_field',
      'type',
      'format',
      'pattern',
      'enum',
      'enum',
      'min_length',
      'max_length',
      'minimum',
      'minimum',
      'maximum',
      'maximum',
      'min_items',
      'max_items',
      'one_of',
      'invalid',
      'invalid',
      'invalid',
    ]);
    for (const c of codes) expect(VIOLATION_CODES).toContain(c);
  });

  test('paths: JSON pointer escapes, indices only inside arrays, numeric keys of objects stay keys', () => {
    expect(fieldPath(['a~b', 'c/d'], {})).toBe('a~b.c/d');
    expect(fieldPath(['photos', '1', 'url'], { photos: [{}, {}] })).toBe('photos[1].url');
    expect(fieldPath(['map', '1'], { map: { 1: 'x' } })).toBe('map.1');
    expect(toViolations([err('type', '/a~1b/0', {})], { 'a/b': [1] })).toEqual([{ field: 'a/b[0]', code: 'type' }]);
  });

  test('overlong unknown field names are cut; duplicates collapse; at most MAX_VIOLATIONS', () => {
    const long = 'k'.repeat(1000);
    const [v] = toViolations([err('additionalProperties', '', { additionalProperty: long })], {});
    expect(v!.field.length).toBeLessThan(200);
    expect(toViolations([err('type', '/a'), err('type', '/a')], { a: 1 })).toHaveLength(1);
    const many = Array.from({ length: 500 }, (_, i) => err('additionalProperties', '', { additionalProperty: `f${i}` }));
    expect(toViolations(many, {})).toHaveLength(MAX_VIOLATIONS);
  });
});

describe('no submitted value is ever echoed', () => {
  test('violations name fields only', () => {
    const marker = 'ZQXJ-SUBMITTED';
    const body = property((p) => {
      p.name = `${marker}-${'n'.repeat(200)}`;
      p.property_type = `${marker}-TYPE`;
      p.address.country = `${marker}-CC`;
      p.address.latitude = `${marker}-LAT`;
      p.base_rate.value = `${marker}-VALUE`;
      p.base_rate.currency = `${marker}-CUR`;
      p.amenities = [`${marker}-AMENITY`];
      p.photos[0].url = `${marker} not a url`;
      p.status = `${marker}-STATUS`;
      p.check_in_time = `${marker}-TIME`;
    });
    const found = schemas.property.violations(body);
    expect(found.length).toBeGreaterThanOrEqual(10);
    expect(JSON.stringify(found)).not.toContain(marker);
    const block = { ...validBlock(), check_in: `${marker}-DATE`, reason: `${marker}-REASON` };
    expect(JSON.stringify(schemas.block.violations(block))).not.toContain(marker);
    const endpoint = { url: `http://${marker}.example.com`, events: [`${marker}-EVENT`] };
    const ev = schemas.webhookEndpoint.violations(endpoint);
    expect(JSON.stringify([...ev, ...webhookUrlViolations(endpoint, ev)])).not.toContain(marker);
  });
});
