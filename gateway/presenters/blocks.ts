/**
 * Calendar blocks: the public JSON of PUT/DELETE/GET /v1/blocks ↔ calendar protobuf
 * (spec "Calendar block", "GET /blocks"; docs/contract-gaps.md "block list item",
 * "block `reason`").
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { Block, ListBlocksRequestSchema, ListBlocksResponse, PutBlockRequestSchema, PutBlockResponse } from '../../gen/psync/calendar/v1/calendar_pb';
import type { BlockInput as BlockBody, BlocksQueryInput as BlocksQuery } from '../contract/blocks';
import { blockReasons, upsertResults } from '../public-enums';
import { PAGE_SIZE_DEFAULT } from '../../services/kit/base';
import type { BlockItemJson, BlockListJson, BlockPutJson } from '../contract/blocks';

export { blockReasons } from '../public-enums';

/** The largest page number passed on (the internal field is an int32); any page that far is past the end. */
const MAX_PAGE = 2_147_483_647;

/** The validated body as a PutBlock request (exactly one target; reason defaulted to reserved). */
export function putBlockRequest(workspaceId: string, externalUid: string, body: BlockBody): MessageInitShape<typeof PutBlockRequestSchema> {
  return {
    workspaceId,
    externalUid,
    target: body.listing_id !== undefined ? { case: 'listingId', value: body.listing_id } : { case: 'providerId', value: body.provider_id ?? '' },
    checkIn: body.check_in,
    checkOut: body.check_out,
    reason: blockReasons.value(body.reason ?? 'reserved'),
  };
}

export function presentBlockPut(res: PutBlockResponse): BlockPutJson {
  return { result: upsertResults.name(res.result), nights: res.nights, listing_id: res.listingId };
}

/** A validated `page`/`page_size` as the internal fields (int32 page, capped; defaults already filled by validation). */
export function pageRequest(q: { page?: number; page_size?: number }): { page: number; pageSize: number } {
  return { page: Math.min(q.page ?? 1, MAX_PAGE), pageSize: q.page_size ?? PAGE_SIZE_DEFAULT };
}

/** The validated query as a ListBlocks request (defaults already filled by validation). */
export function listBlocksRequest(workspaceId: string, q: BlocksQuery): MessageInitShape<typeof ListBlocksRequestSchema> {
  return { workspaceId, from: q.from, to: q.to, ...pageRequest(q) };
}

export function presentBlockItem(b: Block): BlockItemJson {
  return {
    external_uid: b.externalUid,
    listing_id: b.listingId,
    check_in: b.checkIn,
    check_out: b.checkOut,
    reason: blockReasons.name(b.reason),
    nights: b.nights,
  };
}

export function presentBlockList(res: ListBlocksResponse): BlockListJson {
  return { items: res.items.map(presentBlockItem), has_more: res.hasMore };
}
