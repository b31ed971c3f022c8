/**
 * The request guard's walk (request-guard.ts) over every shape a request can take:
 * singular, nested, repeated, map keys and values, oneof members, recursive types,
 * Timestamps; and the interceptor around unary and server-streaming handlers.
 */
import { create, type DescMessage } from '@bufbuild/protobuf';
import { ListValueSchema, StructSchema, timestampFromMs, ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient, createRouterTransport } from '@connectrpc/connect';
import { CatalogService, UpsertPropertyRequestSchema } from '../../../gen/psync/catalog/v1/catalog_pb';
import { CalendarService, PutBlockRequestSchema, WatchEventsRequestSchema } from '../../../gen/psync/calendar/v1/calendar_pb';
import { ErrorDetailSchema, ErrorReason, ValidationDetailSchema } from '../../../gen/psync/common/v1/errors_pb';
import { RecordedRequestSchema, RecordRequestsRequestSchema } from '../../../gen/psync/identity/v1/identity_pb';
import { AcknowledgeDeletionRequestSchema } from '../../../gen/psync/notifications/v1/notifications_pb';
import { planOf, requestGuardInterceptor, requestViolations } from './request-guard';
import { isStorableInstantMs, isUnstorableText, MAX_INSTANT_MS, MIN_INSTANT_MS } from '../base';

const NUL = 'a\u0000b';
const LONE_HIGH = 'a\ud800b';
const LONE_LOW = 'a\udc00b';

describe('the text rule', () => {
  test.each([
    ['plain ASCII', false, 'Harbour loft'],
    ['empty', false, ''],
    ['accents and CJK', false, 'Ça fait 東京'],
    ['a surrogate pair (emoji)', false, 'pool 🏊 view'],
    ['U+0000', true, NUL],
    ['U+0000 alone', true, '\u0000'],
    ['a lone high surrogate', true, LONE_HIGH],
    ['a lone high surrogate at the end', true, 'x\ud83c'],
    ['a lone low surrogate', true, LONE_LOW],
    ['a lone low surrogate at the start', true, '\udfca x'],
    ['a pair written backwards', true, '\udfca\ud83c'],
  ])('%s → unstorable: %s', (_, bad, text) => {
    expect(isUnstorableText(text)).toBe(bad);
  });

  test('the instant range is 0001-01-01T00:00:00Z … 9999-12-31T23:59:59.999Z', () => {
    expect(new Date(MIN_INSTANT_MS).toISOString()).toBe('0001-01-01T00:00:00.000Z');
    expect(new Date(MAX_INSTANT_MS).toISOString()).toBe('9999-12-31T23:59:59.999Z');
    expect(isStorableInstantMs(MIN_INSTANT_MS - 1)).toBe(false);
    expect(isStorableInstantMs(MAX_INSTANT_MS + 1)).toBe(false);
    expect(isStorableInstantMs(Number.NaN)).toBe(false);
  });
});

const violations = <D extends DescMessage>(desc: D, msg: object) => requestViolations(desc, msg);

function upsert(change: (p: Record<string, any>) => void) {
  const msg = create(UpsertPropertyRequestSchema, {
    workspaceId: 'ws',
    providerId: 'p-1',
    property: {
      name: 'Harbour loft',
      address: { line1: '1 Quay Street', city: 'Lisbon', country: 'PT' },
      amenities: ['wifi', 'kitchen'],
      photos: [{ url: 'https://images.example.com/a.jpg' }, { url: 'https://images.example.com/b.jpg', position: 1 }],
    },
  });
  change(msg.property as unknown as Record<string, any>);
  return msg;
}

describe('the walk', () => {
  test('a request with nothing wrong has no violation', () => {
    expect(
      violations(
        UpsertPropertyRequestSchema,
        upsert(() => undefined),
      ),
    ).toEqual([]);
  });

  test('a top-level string', () => {
    const msg = upsert(() => undefined);
    msg.providerId = NUL;
    expect(violations(UpsertPropertyRequestSchema, msg)).toEqual([{ field: 'provider_id', code: 'invalid' }]);
  });

  test('nested messages, by proto path', () => {
    expect(
      violations(
        UpsertPropertyRequestSchema,
        upsert((p) => (p.address.city = LONE_HIGH)),
      ),
    ).toEqual([{ field: 'property.address.city', code: 'invalid' }]);
  });

  test('repeated strings and repeated messages carry the index', () => {
    expect(
      violations(
        UpsertPropertyRequestSchema,
        upsert((p) => {
          p.amenities[1] = NUL;
          p.photos[1].url = LONE_LOW;
        }),
      ),
    ).toEqual([
      { field: 'property.amenities[1]', code: 'invalid' },
      { field: 'property.photos[1].url', code: 'invalid' },
    ]);
  });

  test('every bad field is reported, in field order', () => {
    const msg = upsert((p) => {
      p.name = NUL;
      p.address.line1 = NUL;
    });
    msg.workspaceId = NUL;
    expect(violations(UpsertPropertyRequestSchema, msg)).toEqual([
      { field: 'workspace_id', code: 'invalid' },
      { field: 'property.name', code: 'invalid' },
      { field: 'property.address.line1', code: 'invalid' },
    ]);
  });

  test('the selected member of a oneof', () => {
    const byListing = create(PutBlockRequestSchema, { workspaceId: 'ws', externalUid: 'u', target: { case: 'listingId', value: NUL } });
    const byProvider = create(PutBlockRequestSchema, { workspaceId: 'ws', externalUid: 'u', target: { case: 'providerId', value: LONE_HIGH } });
    const none = create(PutBlockRequestSchema, { workspaceId: 'ws', externalUid: 'u' });
    expect(violations(PutBlockRequestSchema, byListing)).toEqual([{ field: 'listing_id', code: 'invalid' }]);
    expect(violations(PutBlockRequestSchema, byProvider)).toEqual([{ field: 'provider_id', code: 'invalid' }]);
    expect(violations(PutBlockRequestSchema, none)).toEqual([]);
  });

  test('proto3 optional strings, set or not', () => {
    expect(violations(WatchEventsRequestSchema, create(WatchEventsRequestSchema, {}))).toEqual([]);
    expect(violations(WatchEventsRequestSchema, create(WatchEventsRequestSchema, { cursor: NUL }))).toEqual([{ field: 'cursor', code: 'invalid' }]);
  });

  test('maps (keys and values, reported on the map field), oneofs and recursion in google.protobuf.Struct', () => {
    const str = (s: string): Value => create(ValueSchema, { kind: { case: 'stringValue', value: s } });
    const fine = create(StructSchema, {
      fields: {
        a: str('x'),
        nested: create(ValueSchema, { kind: { case: 'structValue', value: create(StructSchema, { fields: { b: str('y') } }) } }),
        list: create(ValueSchema, {
          kind: { case: 'listValue', value: create(ListValueSchema, { values: [str('z'), create(ValueSchema, { kind: { case: 'numberValue', value: 1 } })] }) },
        }),
      },
    });
    expect(violations(StructSchema, fine)).toEqual([]);

    const badKey = create(StructSchema, { fields: { [NUL]: str('x') } });
    expect(violations(StructSchema, badKey)).toEqual([{ field: 'fields', code: 'invalid' }]);

    const deepValue = create(StructSchema, {
      fields: { nested: create(ValueSchema, { kind: { case: 'structValue', value: create(StructSchema, { fields: { b: str(LONE_HIGH), c: str(NUL) } }) } }) },
    });
    // A message value of a map is walked into, under the map field's path (the key is never named); two bad entries report one path.
    expect(violations(StructSchema, deepValue)).toEqual([{ field: 'fields.struct_value.fields.string_value', code: 'invalid' }]);

    const inList = create(StructSchema, {
      fields: { list: create(ValueSchema, { kind: { case: 'listValue', value: create(ListValueSchema, { values: [str('ok'), str(NUL)] }) } }) },
    });
    expect(violations(StructSchema, inList)).toEqual([{ field: 'fields.list_value.values[1].string_value', code: 'invalid' }]);
  });

  test('Timestamps: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999499999Z (the last that stays in year 9999 as a millisecond Date), nanos 0…999999999', () => {
    const ack = (seconds: bigint, nanos = 0) => create(AcknowledgeDeletionRequestSchema, { workspaceId: 'ws', eventId: 'e', completedAt: { seconds, nanos } });
    expect(violations(AcknowledgeDeletionRequestSchema, ack(-62_135_596_800n))).toEqual([]);
    expect(violations(AcknowledgeDeletionRequestSchema, ack(253_402_300_799n, 999_499_999))).toEqual([]);
    // Rounded to a millisecond this is 10000-01-01: found by the internal fuzz test (SearchPublicListings updated_after).
    expect(violations(AcknowledgeDeletionRequestSchema, ack(253_402_300_799n, 999_500_000))).toEqual([{ field: 'completed_at', code: 'maximum' }]);
    expect(violations(AcknowledgeDeletionRequestSchema, ack(253_402_300_799n, 999_999_999))).toEqual([{ field: 'completed_at', code: 'maximum' }]);
    expect(violations(AcknowledgeDeletionRequestSchema, create(AcknowledgeDeletionRequestSchema, {}))).toEqual([]);
    expect(violations(AcknowledgeDeletionRequestSchema, ack(-62_135_596_801n))).toEqual([{ field: 'completed_at', code: 'minimum' }]);
    expect(violations(AcknowledgeDeletionRequestSchema, ack(253_402_300_800n))).toEqual([{ field: 'completed_at', code: 'maximum' }]);
    expect(violations(AcknowledgeDeletionRequestSchema, ack(0n, -1))).toEqual([{ field: 'completed_at', code: 'invalid' }]);
    expect(violations(AcknowledgeDeletionRequestSchema, ack(0n, 1_000_000_000))).toEqual([{ field: 'completed_at', code: 'invalid' }]);
  });

  test('the three completed_at instants found by fuzzing, as Timestamps, are out of range', () => {
    for (const [ms, code] of [
      [-62_167_219_200_000, 'minimum'], // 0000-01-01T00:00:00Z
      [-62_135_598_600_000, 'minimum'], // 0001-01-01T00:30:00+01:00
      [253_402_387_139_000, 'maximum'], // 9999-12-31T23:59:59-23:59
    ] as const) {
      const msg = create(AcknowledgeDeletionRequestSchema, { workspaceId: 'ws', eventId: 'e', completedAt: timestampFromMs(ms) });
      expect(violations(AcknowledgeDeletionRequestSchema, msg)).toEqual([{ field: 'completed_at', code }]);
    }
  });

  test('a message type with nothing to check compiles to an empty plan', () => {
    expect(planOf(ValueSchema).checks.length).toBeGreaterThan(0);
    const empty = planOf(ErrorDetailSchema);
    expect(empty.checks).toEqual([]);
    expect(empty.timestamp).toBe(false);
  });

  test('items the .proto leaves to the handler (repeated.items.ignore = IGNORE_ALWAYS) are not walked: RecordRequests checks each record itself', () => {
    const batch = create(RecordRequestsRequestSchema, { requests: [{ route: NUL, errors: [{ field: NUL }] }] });
    expect(requestViolations(RecordRequestsRequestSchema, batch)).toEqual([]);
    // The record alone is walked as any message is.
    expect(requestViolations(RecordedRequestSchema, batch.requests[0]!)).toEqual([
      { field: 'route', code: 'invalid' },
      { field: 'errors[0].field', code: 'invalid' },
    ]);
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
      });
      router.service(CalendarService, {
        async *watchEvents(req) {
          handled++;
          yield { cursor: req.cursor ?? '' };
        },
      });
    },
    { router: { interceptors: [requestGuardInterceptor] } },
  );
  const catalog = createClient(CatalogService, transport);
  const calendar = createClient(CalendarService, transport);

  async function refusal(call: () => Promise<unknown>): Promise<ConnectError> {
    try {
      await call();
    } catch (e) {
      return ConnectError.from(e);
    }
    throw new Error('the call was not refused');
  }

  beforeEach(() => (handled = 0));

  test('a unary request with a bad string never reaches its handler: INVALID_ARGUMENT + ValidationDetail', async () => {
    const err = await refusal(() => catalog.upsertProperty({ workspaceId: 'ws', providerId: 'p', property: { name: NUL } }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.findDetails(ErrorDetailSchema)[0]?.reason).toBe(ErrorReason.VALIDATION_FAILED);
    expect(err.findDetails(ValidationDetailSchema)[0]?.violations.map((v) => ({ field: v.field, code: v.code }))).toEqual([{ field: 'property.name', code: 'invalid' }]);
    expect(err.rawMessage).not.toContain('\u0000');
    expect(handled).toBe(0);
  });

  test('a good unary request goes through', async () => {
    expect((await catalog.upsertProperty({ workspaceId: 'ws', providerId: 'p', property: { name: 'ok' } })).providerId).toBe('p');
    expect(handled).toBe(1);
  });

  test('a server-streaming request is checked as well', async () => {
    const err = await refusal(async () => {
      for await (const _ of calendar.watchEvents({ cursor: NUL })) void _;
    });
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.findDetails(ValidationDetailSchema)[0]?.violations.map((v) => v.field)).toEqual(['cursor']);
    expect(handled).toBe(0);
    const ok: string[] = [];
    for await (const m of calendar.watchEvents({ cursor: 'c1' })) ok.push(m.cursor);
    expect(ok).toEqual(['c1']);
  });
});
