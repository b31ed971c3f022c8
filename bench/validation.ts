/**
 * Cost of the proto-rules interceptor (services/kit/rpc/validation.ts) per request, next to
 * the request guard it runs after (docs/decisions.md "One validation source per
 * boundary"):
 *
 *   npm run bench:validation
 *
 * Times, for a few request types, the interceptor's own work on a valid request (the
 * path every call takes): a type without rules (Authorize, only the look-up that says
 * so), small ones (PutBlock, PlaceHold) and the largest (UpsertProperty with 30 photos, 30
 * amenities and a 3 KB description). Prints a Markdown table: median µs per request
 * over BENCH_ROUNDS rounds of BENCH_ITERATIONS calls.
 */
import { create, type DescMessage, type Message } from '@bufbuild/protobuf';
import { PlaceHoldRequestSchema, PutBlockRequestSchema } from '../gen/psync/calendar/v1/calendar_pb';
import { UpsertPropertyRequestSchema } from '../gen/psync/catalog/v1/catalog_pb';
import { AuthorizeRequestSchema } from '../gen/psync/identity/v1/identity_pb';
import { requestViolations } from '../services/kit/rpc';
import { hasRules, ruleViolations } from '../services/kit/rpc';
import { benchName } from './support/results';

benchName('validation');

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 20_000);

const cases: [string, DescMessage, Message][] = [
  ['Authorize (no rules)', AuthorizeRequestSchema, create(AuthorizeRequestSchema, { accessToken: 'pst_x.y', countRequest: true })],
  [
    'PutBlock',
    PutBlockRequestSchema,
    create(PutBlockRequestSchema, {
      workspaceId: '8a5e2c61-1f3b-4d7e-9c0a-6b2d4e8f1a37',
      externalUid: 'airbnb-4711',
      target: { case: 'listingId', value: 'lst_0123456789abcdef' },
      checkIn: '2031-02-28',
      checkOut: '2031-03-04',
      reason: 2,
    }),
  ],
  [
    'PlaceHold',
    PlaceHoldRequestSchema,
    create(PlaceHoldRequestSchema, { listingId: 'lst_0123456789abcdef', checkIn: '2031-02-28', checkOut: '2031-03-04', idempotencyKey: '8a5e2c61-1f3b-4d7e-9c0a-6b2d4e8f1a37' }),
  ],
  [
    'UpsertProperty (30 photos, 30 amenities, 3 KB description)',
    UpsertPropertyRequestSchema,
    create(UpsertPropertyRequestSchema, {
      workspaceId: '8a5e2c61-1f3b-4d7e-9c0a-6b2d4e8f1a37',
      providerId: 'villa-1',
      property: {
        name: 'Harbour loft',
        description: 'Sea view. '.repeat(300),
        propertyType: 'apartment',
        address: { line1: '1 Quay', city: 'Brest', region: 'Bretagne', postalCode: '29200', country: 'FR', latitude: 48.4, longitude: -4.5 },
        occupancy: { maxGuests: 4, bedrooms: 2, beds: 2, bathrooms: 1 },
        baseRate: { value: '120.00', currency: 'EUR' },
        amenities: Array.from({ length: 30 }, (_, i) => `amenity_${i}`),
        photos: Array.from({ length: 30 }, (_, i) => ({ url: `https://img.example/p/${i}.jpg`, position: i })),
        checkInTime: '15:00',
        checkOutTime: '11:00',
        status: 1,
      },
    }),
  ],
];

/** Median µs per call of `fn` over ROUNDS rounds of ITERATIONS calls. */
function microseconds(fn: () => void): number {
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < ITERATIONS; i++) fn();
    rounds.push(Number(process.hrtime.bigint() - start) / 1000 / ITERATIONS);
  }
  rounds.sort((a, b) => a - b);
  return rounds[Math.floor(rounds.length / 2)]!;
}

console.log(`| request | proto rules (µs) | request guard (µs) |\n| --- | ---: | ---: |`);
for (const [label, desc, msg] of cases) {
  // What the interceptor does per call: the cached look-up, then the validator when the type has rules.
  const rules = microseconds(() => {
    if (hasRules(desc) && ruleViolations(desc, msg).violations.length > 0) throw new Error(`${label}: not valid`);
  });
  const guard = microseconds(() => {
    if (requestViolations(desc, msg).length > 0) throw new Error(`${label}: refused by the guard`);
  });
  console.log(`| ${label} | ${rules.toFixed(2)} | ${guard.toFixed(2)} |`);
}
