/**
 * The proto rules interceptor (validation.ts): each kind of constraint the .proto files
 * declare and the public code it reports, field paths (nested, indexed, oneofs), one
 * violation per field, messages that never echo a value, the interceptor around unary
 * and streamed requests, and the bounds the protos share with the rest of the code.
 */
import { create, getOption, type DescMessage, type MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient, createRouterTransport, type StreamRequest, type UnaryRequest } from '@connectrpc/connect';
import { field as fieldRules } from '../../../gen/buf/validate/validate_pb';
import {
  CalendarService,
  CancelBookingRequestSchema,
  ConfirmBookingRequestSchema,
  ListBlocksRequestSchema,
  PlaceHoldRequestSchema,
  PutBlockRequestSchema,
  WatchEventsRequestSchema,
} from '../../../gen/psync/calendar/v1/calendar_pb';
import type { CancellationInitiator } from '../../../gen/psync/calendar/v1/events_pb';
import {
  AddressSchema,
  CatalogService,
  ListAmenitiesRequestSchema,
  SearchPublicListingsRequestSchema,
  UpsertPropertyRequestSchema,
} from '../../../gen/psync/catalog/v1/catalog_pb';
import { ErrorDetailSchema, ErrorReason, ValidationDetailSchema } from '../../../gen/psync/common/v1/errors_pb';
import { AuthorizeRequestSchema, CreateWorkspaceRequestSchema, RevokeKeyRequestSchema } from '../../../gen/psync/identity/v1/identity_pb';
import {
  type DeliveryState,
  GetDeliveryRequestSchema,
  ListDeletionRequestsRequestSchema,
  ListDeliveryLogRequestSchema,
  PutEndpointRequestSchema,
  ReplayDeliveriesRequestSchema,
  ResendDeliveryRequestSchema,
  TriggerTestEventRequestSchema,
} from '../../../gen/psync/notifications/v1/notifications_pb';
import { PAGE_SIZE_MAX } from '../base';
import { hasRules, ruleViolations, validationInterceptor } from './validation';

const WS = '8a5e2c61-1f3b-4d7e-9c0a-6b2d4e8f1a37';

/** The `{field, code}` list for a request of `desc` built from `init`. */
function violations<D extends DescMessage>(desc: D, init: MessageInitShape<D>) {
  return ruleViolations(desc, create(desc, init)).violations;
}

/** A complete, valid UpsertProperty request. */
function upsert(property: Record<string, unknown> = {}, address: Record<string, unknown> = {}): MessageInitShape<typeof UpsertPropertyRequestSchema> {
  return {
    workspaceId: WS,
    providerId: 'villa-1',
    property: {
      name: 'Harbour loft',
      propertyType: 'apartment',
      address: { line1: '1 Quay', city: 'Brest', country: 'FR', latitude: 48.4, longitude: -4.5, ...address },
      occupancy: { maxGuests: 4, bedrooms: 2, beds: 2, bathrooms: 1 },
      baseRate: { value: '120.00', currency: 'EUR' },
      amenities: ['wifi'],
      photos: [{ url: 'https://img.example/a.jpg', position: 0 }],
      checkInTime: '15:00',
      checkOutTime: '11:00',
      status: 1,
      ...property,
    },
  };
}

describe('a valid request', () => {
  test('has no violations', () => {
    expect(violations(UpsertPropertyRequestSchema, upsert())).toEqual([]);
    expect(
      violations(PutBlockRequestSchema, { workspaceId: WS, externalUid: 'b1', target: { case: 'listingId', value: 'lst_1' }, checkIn: '2032-02-28', checkOut: '2032-03-01' }),
    ).toEqual([]);
  });

  test('an upper-case UUID is a UUID', () => {
    expect(violations(UpsertPropertyRequestSchema, { ...upsert(), workspaceId: WS.toUpperCase() })).toEqual([]);
  });
});

describe('each kind of rule reports its public code', () => {
  test.each<[string, MessageInitShape<typeof UpsertPropertyRequestSchema>, { field: string; code: string }]>([
    ['required string (empty)', upsert({ name: '' }), { field: 'property.name', code: 'required' }],
    ['required message (absent)', upsert({ occupancy: undefined }), { field: 'property.occupancy', code: 'required' }],
    ['required enum (zero)', upsert({ status: 0 }), { field: 'property.status', code: 'required' }],
    ['enum value not declared', upsert({ status: 9 }), { field: 'property.status', code: 'enum' }],
    ['max_len, in characters', upsert({ name: '東'.repeat(121) }), { field: 'property.name', code: 'max_length' }],
    ['min_len of a present optional field', upsert({}, { region: '' }), { field: 'property.address.region', code: 'min_length' }],
    ['pattern', upsert({ propertyType: 'Loft' }), { field: 'property.property_type', code: 'pattern' }],
    ['string in a list', upsert({}, { country: 'ZZ' }), { field: 'property.address.country', code: 'enum' }],
    ['uuid', { ...upsert(), workspaceId: 'not-a-uuid' }, { field: 'workspace_id', code: 'format' }],
    ['uuid, empty', { ...upsert(), workspaceId: '' }, { field: 'workspace_id', code: 'required' }],
    ['range, below', upsert({ occupancy: { maxGuests: 0 } }), { field: 'property.occupancy.max_guests', code: 'minimum' }],
    ['range, above', upsert({ occupancy: { maxGuests: 101 } }), { field: 'property.occupancy.max_guests', code: 'maximum' }],
    ['double range, below', upsert({}, { longitude: -180.5 }), { field: 'property.address.longitude', code: 'minimum' }],
    ['one-sided minimum', upsert({ photos: [{ url: 'https://img.example/a.jpg', position: -1 }] }), { field: 'property.photos[0].position', code: 'minimum' }],
    ['not finite', upsert({}, { latitude: Number.POSITIVE_INFINITY }), { field: 'property.address.latitude', code: 'type' }],
    ['NaN', upsert({}, { latitude: Number.NaN }), { field: 'property.address.latitude', code: 'type' }],
    ['max_items', upsert({ amenities: Array.from({ length: 61 }, (_, i) => `a${i}`) }), { field: 'property.amenities', code: 'max_items' }],
    ['a list item rule', upsert({ amenities: ['wifi', 'Hot Tub'] }), { field: 'property.amenities[1]', code: 'pattern' }],
    ['a field CEL rule names its code in its id', upsert({ baseRate: { value: '-5', currency: 'EUR' } }), { field: 'property.base_rate', code: 'pattern' }],
    ['a predefined rule (time of day)', upsert({ checkInTime: '24:00' }), { field: 'property.check_in_time', code: 'pattern' }],
  ])('%s', (_label, init, expected) => {
    expect(violations(UpsertPropertyRequestSchema, init)).toEqual([expected]);
  });

  test('a message CEL rule is reported on the message', () => {
    const bounds = { minLatitude: 10, maxLatitude: 5, minLongitude: 0, maxLongitude: 1 };
    expect(violations(SearchPublicListingsRequestSchema, { bounds })).toEqual([{ field: 'bounds', code: 'invalid' }]);
  });

  test('a required oneof with no member set is reported by its own name', () => {
    expect(violations(PutBlockRequestSchema, { workspaceId: WS, externalUid: 'b', checkIn: '2031-01-01', checkOut: '2031-01-02' })).toEqual([
      { field: 'target', code: 'required' },
    ]);
    expect(violations(ReplayDeliveriesRequestSchema, { workspaceId: WS })).toEqual([{ field: 'selection', code: 'required' }]);
  });

  test('an enum restricted to some values', () => {
    expect(violations(CancelBookingRequestSchema, { bookingReference: 'BK1' })).toEqual([{ field: 'initiated_by', code: 'enum' }]);
    expect(violations(PutEndpointRequestSchema, { workspaceId: WS, url: 'https://x.example/h', events: [2, 1] })).toEqual([{ field: 'events[1]', code: 'enum' }]);
  });

  test.each([
    ['2031-02-28', []],
    ['2032-02-29', []],
    ['2000-02-29', []],
    ['0001-01-01', []],
    ['9999-12-31', []],
    ['2031-02-29', [{ field: 'check_in', code: 'format' }]],
    ['2100-02-29', [{ field: 'check_in', code: 'format' }]],
    ['2031-04-31', [{ field: 'check_in', code: 'format' }]],
    ['0000-01-01', [{ field: 'check_in', code: 'format' }]],
    ['2031-1-1', [{ field: 'check_in', code: 'format' }]],
    ['', [{ field: 'check_in', code: 'required' }]],
  ])('the date rule: %j', (checkIn, expected) => {
    expect(violations(PlaceHoldRequestSchema, { listingId: 'lst_1', checkIn, checkOut: '2031-03-01' })).toEqual(expected);
  });

  test('predefined rules: visible ASCII and not blank', () => {
    const hold = { listingId: 'lst_1', checkIn: '2031-01-01', checkOut: '2031-01-02' };
    expect(violations(PlaceHoldRequestSchema, { ...hold, idempotencyKey: 'has space' })).toEqual([{ field: 'idempotency_key', code: 'pattern' }]);
    expect(violations(PlaceHoldRequestSchema, { ...hold, idempotencyKey: '' })).toEqual([{ field: 'idempotency_key', code: 'min_length' }]);
    expect(violations(CreateWorkspaceRequestSchema, { name: ' \t ', environment: 1 })).toEqual([{ field: 'name', code: 'required' }]);
  });

  test('a CEL rule may answer its own message', () => {
    const pasted = ruleViolations(RevokeKeyRequestSchema, create(RevokeKeyRequestSchema, { keyId: `psk_${'a'.repeat(16)}_${'b'.repeat(43)}` }));
    expect(pasted.violations).toEqual([{ field: 'key_id', code: 'format' }]);
    expect(pasted.texts).toEqual(['key_id: must be the 16-character key id, not the API key']);
    expect(violations(RevokeKeyRequestSchema, { keyId: 'abcdefghijklmnop' })).toEqual([]);
  });

  test('ignore-if-zero: an empty optional filter passes, a malformed one does not', () => {
    expect(violations(ListDeletionRequestsRequestSchema, { workspaceId: '' })).toEqual([]);
    expect(violations(ListDeletionRequestsRequestSchema, { workspaceId: 'x' })).toEqual([{ field: 'workspace_id', code: 'format' }]);
    expect(violations(ConfirmBookingRequestSchema, { holdId: WS, guestId: 'g', guestName: 'Ada', partySize: 1, amountPaid: { value: '1', currency: 'EUR' } })).toEqual([]);
  });
});

describe("the partners' sandbox tools (the gateway checks the public input the same way first)", () => {
  const trigger = { workspaceId: WS, listingId: 'lst_1', eventType: 2 };

  test('a test event: workspace UUID, listing id, a subscribable kind, a test reference, real dates, a declared initiator', () => {
    expect(violations(TriggerTestEventRequestSchema, { ...trigger, bookingReference: 'TEST-BK0123456789', checkIn: '2032-02-29', initiatedBy: 2 })).toEqual([]);
    expect(violations(TriggerTestEventRequestSchema, { ...trigger, listingId: '東'.repeat(255) })).toEqual([]);
    expect(violations(TriggerTestEventRequestSchema, { workspaceId: 'nope', listingId: '', eventType: 1 })).toEqual([
      { field: 'workspace_id', code: 'format' },
      { field: 'listing_id', code: 'required' },
      { field: 'event_type', code: 'enum' },
    ]);
    expect(
      violations(TriggerTestEventRequestSchema, {
        ...trigger,
        eventType: 0,
        listingId: '東'.repeat(256),
        bookingReference: 'BK0123456789',
        checkIn: '2031-02-29',
        checkOut: '',
        initiatedBy: 9 as CancellationInitiator,
      }),
    ).toEqual([
      { field: 'listing_id', code: 'max_length' },
      { field: 'event_type', code: 'enum' },
      { field: 'booking_reference', code: 'pattern' },
      { field: 'check_in', code: 'format' },
      { field: 'check_out', code: 'format' },
      { field: 'initiated_by', code: 'enum' },
    ]);
  });

  test('the delivery log: workspace UUID, paging from 0 (the default) to PAGE_SIZE_MAX, filters of declared values', () => {
    expect(violations(ListDeliveryLogRequestSchema, { workspaceId: WS })).toEqual([]);
    expect(violations(ListDeliveryLogRequestSchema, { workspaceId: WS, page: 3, pageSize: PAGE_SIZE_MAX, state: 3, eventType: 4 })).toEqual([]);
    expect(violations(ListDeliveryLogRequestSchema, { workspaceId: 'nope', page: -1, pageSize: PAGE_SIZE_MAX + 1, state: 0, eventType: 1 })).toEqual([
      { field: 'workspace_id', code: 'format' },
      { field: 'page', code: 'minimum' },
      { field: 'page_size', code: 'maximum' },
      { field: 'state', code: 'enum' },
      { field: 'event_type', code: 'enum' },
    ]);
    expect(violations(ListDeliveryLogRequestSchema, { workspaceId: WS, pageSize: -1, state: 7 as DeliveryState, eventType: 0 })).toEqual([
      { field: 'page_size', code: 'minimum' },
      { field: 'state', code: 'enum' },
      { field: 'event_type', code: 'enum' },
    ]);
  });

  test('a delivery read or resent: the workspace is a UUID; a malformed event_id is left to NOT_FOUND', () => {
    for (const desc of [GetDeliveryRequestSchema, ResendDeliveryRequestSchema]) {
      expect(violations(desc, { workspaceId: WS, eventId: 'not-a-uuid' })).toEqual([]);
      expect(violations(desc, { workspaceId: '', eventId: WS })).toEqual([{ field: 'workspace_id', code: 'required' }]);
    }
  });
});

describe('reports', () => {
  test('every field once, in field order, with the first rule it broke', () => {
    const init = upsert({ name: '', checkInTime: 'noon', amenities: ['', 'ok'] }, { country: 'zz-secret' });
    expect(violations(UpsertPropertyRequestSchema, init)).toEqual([
      { field: 'property.name', code: 'required' },
      { field: 'property.address.country', code: 'pattern' },
      { field: 'property.amenities[0]', code: 'min_length' },
      { field: 'property.check_in_time', code: 'pattern' },
    ]);
  });

  test('the text names fields and rules, never the submitted value', () => {
    const { texts } = ruleViolations(
      UpsertPropertyRequestSchema,
      create(UpsertPropertyRequestSchema, upsert({ propertyType: 'Secret Value' }, { postalCode: 'SECRET-POSTAL-CODE-123' })),
    );
    expect(texts).toHaveLength(2);
    expect(texts.join(' ')).not.toMatch(/Secret Value|SECRET-POSTAL/);
    expect(texts[0]).toMatch(/^property\.property_type: /);
  });

  test('absent optional fields and absent optional messages are not checked', () => {
    expect(violations(UpsertPropertyRequestSchema, upsert({ baseRate: undefined, description: undefined, photos: [] }))).toEqual([]);
    expect(violations(ListBlocksRequestSchema, { workspaceId: WS })).toEqual([]);
  });
});

describe('hasRules', () => {
  test('true for annotated requests and for those holding an annotated message; false otherwise', () => {
    expect(hasRules(UpsertPropertyRequestSchema)).toBe(true);
    expect(hasRules(AddressSchema)).toBe(true);
    expect(hasRules(ListAmenitiesRequestSchema)).toBe(false);
    expect(hasRules(AuthorizeRequestSchema)).toBe(false);
    expect(hasRules(WatchEventsRequestSchema)).toBe(false);
  });
});

describe('the interceptor', () => {
  let handled = 0;
  const transport = createRouterTransport(
    (router) => {
      router.service(CatalogService, {
        async upsertProperty(req) {
          handled++;
          return { providerId: req.providerId };
        },
        async listAmenities() {
          handled++;
          return { amenities: [] };
        },
      });
    },
    { router: { interceptors: [validationInterceptor] } },
  );
  const catalog = createClient(CatalogService, transport);

  beforeEach(() => (handled = 0));

  test('a request breaking a rule never reaches its handler: INVALID_ARGUMENT, VALIDATION_FAILED, every field', async () => {
    const err = await catalog.upsertProperty(upsert({ name: '' }, { country: 'fr' })).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.InvalidArgument);
    expect(err?.findDetails(ErrorDetailSchema)[0]?.reason).toBe(ErrorReason.VALIDATION_FAILED);
    expect(err?.findDetails(ValidationDetailSchema)[0]?.violations.map((v) => ({ field: v.field, code: v.code }))).toEqual([
      { field: 'property.name', code: 'required' },
      { field: 'property.address.country', code: 'pattern' },
    ]);
    expect(err?.rawMessage).toMatch(/^invalid request: property\.name: .*; property\.address\.country: /);
    expect(handled).toBe(0);
  });

  test('valid requests, and requests of types without rules, pass', async () => {
    await expect(catalog.upsertProperty(upsert())).resolves.toMatchObject({ providerId: 'villa-1' });
    await expect(catalog.listAmenities({})).resolves.toBeDefined();
    expect(handled).toBe(2);
  });

  test('a streamed request is checked message by message as the handler reads it', async () => {
    async function* messages() {
      yield create(PutBlockRequestSchema, { workspaceId: WS, externalUid: 'b', target: { case: 'listingId', value: 'l' }, checkIn: '2031-01-01', checkOut: '2031-01-02' });
      yield create(PutBlockRequestSchema, { workspaceId: 'nope' });
    }
    const seen: string[] = [];
    const next = async (req: UnaryRequest | StreamRequest) => {
      for await (const m of (req as StreamRequest).message) seen.push((m as unknown as { externalUid: string }).externalUid);
      return undefined as never;
    };
    const req = { stream: true, method: CalendarService.method.putBlock, message: messages() } as unknown as StreamRequest;
    const err = await validationInterceptor(next)(req).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(seen).toEqual(['b']);
    expect(err?.code).toBe(Code.InvalidArgument);
  });
});

describe('the protos agree with the rest of the code', () => {
  test('page_size bounds are PAGE_SIZE_MAX (services/kit/base/limits.ts)', () => {
    for (const desc of [ListBlocksRequestSchema, SearchPublicListingsRequestSchema, ListDeliveryLogRequestSchema]) {
      const rules = getOption(desc.field.pageSize, fieldRules);
      expect([desc.typeName, rules.type.case === 'int32' ? rules.type.value.lessThan : undefined]).toEqual([desc.typeName, { case: 'lte', value: PAGE_SIZE_MAX }]);
    }
  });
});
