/** What the calendar block routes accept (routes/blocks.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { MAX_NIGHTS, PAGE_SIZE_MAX } from '../../services/kit/base';
import { lengthOf } from '../proto-rules';
import { blockReasons, upsertResults } from '../public-enums';
import { closed, componentRef, filled, oneOfNames, present, requestBody, type Validated } from '../contract-schema';
import { PutBlockRequestSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import { Page, PageSize } from './paging';

/** The body of PUT /v1/blocks/{external_uid}. */
export const BlockBody = requestBody(
  'block',
  'Calendar block',
  `Body of PUT /v1/blocks/{external_uid}. Exactly one of provider_id and listing_id (a violation is reported as field listing_id, code one_of). check_out must be after check_in and at most ${MAX_NIGHTS} nights later (checked after the schema, field check_out). reason is optional, default reserved.`,
  {
    provider_id: Type.Optional(Type.String(lengthOf(PutBlockRequestSchema, 'provider_id'))),
    listing_id: Type.Optional(Type.String(lengthOf(PutBlockRequestSchema, 'listing_id'))),
    check_in: Type.String({ format: 'date' }),
    check_out: Type.String({ format: 'date' }),
    reason: filled(oneOfNames(blockReasons.names, { default: 'reserved' })),
  },
  {
    oneOf: [
      { properties: { provider_id: true }, required: ['provider_id'] },
      { properties: { listing_id: true }, required: ['listing_id'] },
    ],
    'x-error-field': 'listing_id',
  },
);

/** The path of a block: `external_uid`, the partner's own id. */
export const BlockPath = closed({ external_uid: Type.String(lengthOf(PutBlockRequestSchema, 'external_uid')) });

/** GET /v1/blocks: an optional night range and a page. */
export const BlocksQuery = closed({
  from: Type.Optional(Type.String({ format: 'date' })),
  to: Type.Optional(Type.String({ format: 'date' })),
  page: Page,
  page_size: PageSize,
});

export type BlockInput = Validated<typeof BlockBody>;

export type BlocksQueryInput = Validated<typeof BlocksQuery>;

export const BlockPut = Type.Object({
  result: oneOfNames(upsertResults.names),
  nights: Type.Integer({ minimum: 1, maximum: MAX_NIGHTS, description: 'The nights held, restated so the partner can check the count.' }),
  listing_id: Type.String({ ...lengthOf(PutBlockRequestSchema, 'listing_id'), description: 'The listing the block landed on.' }),
});
export type BlockPutJson = Static<typeof BlockPut>;

export const BlockItem = Type.Object({
  external_uid: BlockPath.properties.external_uid,
  listing_id: present(BlockBody.properties.listing_id),
  check_in: BlockBody.properties.check_in,
  check_out: BlockBody.properties.check_out,
  reason: oneOfNames(blockReasons.names),
  nights: Type.Integer({ minimum: 1, maximum: MAX_NIGHTS }),
});
export type BlockItemJson = Static<typeof BlockItem>;

export const BlockList = Type.Object(
  { items: Type.Array(componentRef('BlockItem', BlockItem), { maxItems: PAGE_SIZE_MAX }), has_more: Type.Boolean({ description: 'Whether a later page has rows.' }) },
  { description: "One page of the calling partner's blocks, ordered by `check_in`, `check_out`, `external_uid`. There is no total." },
);
export type BlockListJson = Static<typeof BlockList>;
