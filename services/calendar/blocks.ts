/**
 * Partner blocks (spec: "Calendar block", PUT/DELETE/GET /blocks).
 *
 * State table, as implemented by `putBlock`:
 *   absent  + PUT, no collision           → created, nights held            (`created`)
 *   held    + PUT identical, no collision → nothing written                 (`updated`)
 *   held    + PUT other dates/listing     → old nights released and new held
 *                                           in one transaction              (`updated`)
 *   any     + PUT, a night has a booking or live hold → CONFLICT with every colliding
 *             night, nothing written (a moved block keeps its old dates)
 * The conflict scan runs on every PUT, identical retries included. A partner's own
 * blocks may overlap each other (and the nights of a host-cancelled booking).
 * The whole table is one SQL function, `calendar.put_block` (services/calendar/functions/put_block.sql);
 * DeleteBlock is `calendar.delete_block` (docs/calendar.md "One style for writes").
 */
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  BlockReasonSchema,
  BlockSchema,
  type BlockReason,
  type Block,
  type DeleteBlockRequest,
  type DeleteBlockResponseSchema,
  type ListBlocksRequest,
  type ListBlocksResponseSchema,
  type PutBlockRequest,
  type PutBlockResponseSchema,
} from '../../gen/psync/calendar/v1/calendar_pb';
import { UpsertResult } from '../../gen/psync/common/v1/upsert_result_pb';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { checkRange } from '../domain';
import { EnumNames } from '../kit/base';
import { invalidArgument, notEnabled } from './errors';
import { calendarChanged } from './event-log';
import { blockPageQuery, type BlockRow } from './blocks-list';
import { refuseConflicts, scanConflicts, withRetries } from './claims';
import type { CalendarDeps } from './calendar-deps';
import { currentTraceHeaders } from '../kit/telemetry';
import { PAGE_SIZE_DEFAULT } from '../kit/base';
import { canonicalUuid } from '../kit/base';
import { serviceUnavailable } from '../kit/rpc';

/** Block reasons as stored (`reserved`, `owner_stay`, …) ↔ BlockReason. */
const reasons = new EnumNames<BlockReason, 'reserved' | 'maintenance' | 'owner_stay' | 'other'>(BlockReasonSchema);

/**
 * What `calendar.put_block` answers: the outcome (`unchanged` is the identical no-op,
 * `conflict` lists every colliding night in `conflicts`), how many events it wrote
 * (hold expiries included) and the block as stored (absent on a conflict).
 */
interface PutBlockRow extends BlockRow {
  outcome: 'created' | 'updated' | 'unchanged' | 'conflict';
  conflicts: string[];
  events: number;
}

function toBlock(r: BlockRow): Block {
  return create(BlockSchema, {
    externalUid: r.external_uid,
    listingId: r.listing_id,
    checkIn: r.check_in,
    checkOut: r.check_out,
    reason: reasons.value(r.reason),
    nights: r.nights,
    createdAt: timestampFromDate(r.created_at),
    updatedAt: timestampFromDate(r.updated_at),
  });
}

/**
 * PutBlock: creates, re-confirms or moves a block (see the state table above). The
 * request's fields were checked against calendar.proto's rules before this runs
 * (services/kit/rpc/validation.ts); the range rule (1 to MAX_NIGHTS nights) is the calendar's.
 */
export async function putBlock(deps: CalendarDeps, req: PutBlockRequest): Promise<MessageInitShape<typeof PutBlockResponseSchema>> {
  const target = req.target;
  const { span, problems } = checkRange(req.checkIn, req.checkOut);
  if (!span) throw invalidArgument(problems);
  // docs/contract-gaps.md "block `reason`": optional, default `reserved`.
  const reason = reasons.nameOr(req.reason, 'reserved');
  // Spec: "A block addressed by provider_id answers 501 in either environment" — after validation.
  if (target.case !== 'listingId') throw notEnabled('blocks addressed by provider_id are not enabled; use listing_id');

  // Workspace ids are UUIDs; stored in their canonical lower-case form.
  const workspaceId = canonicalUuid(req.workspaceId);
  const listingId = target.value;
  const uid = req.externalUid;
  await deps.listings.assertOwned(workspaceId, listingId);

  // One statement, in its implicit transaction: the lock, hold expiry, the block row,
  // the conflict scan — on every push, identical retries included (spec: "The conflict
  // scan runs on every push") — and the write with its claim and events (migration
  // 0003, `calendar.put_block`). A conflict writes nothing.
  const at = new Date();
  const row = await withRetries(
    async () => {
      const [r] = await deps.sql<PutBlockRow[]>`
        select * from calendar.put_block(${workspaceId}, ${uid}, ${listingId}, ${span.checkIn}::date, ${span.checkOut}::date,
                                         ${reason}, ${at}, ${deps.sql.json(currentTraceHeaders())})
      `;
      return r!;
    },
    () => scanConflicts(deps.sql, listingId, span.checkIn, span.checkOut, 'marketplace'),
  );
  refuseConflicts(row.conflicts);
  if (row.events > 0) deps.eventsCommitted();
  const result = row.outcome === 'created' ? UpsertResult.CREATED : UpsertResult.UPDATED;
  return { result, nights: row.nights, listingId: row.listing_id, block: toBlock(row) };
}

/** DeleteBlock: removes the block and frees only the nights it holds; success either way. */
export async function deleteBlock(deps: CalendarDeps, req: DeleteBlockRequest): Promise<MessageInitShape<typeof DeleteBlockResponseSchema>> {
  const workspaceId = canonicalUuid(req.workspaceId);
  const uid = req.externalUid;

  const at = new Date();
  // The block is read before its listing's lock is taken (outside a transaction, so
  // deleting an absent block costs one statement), and its block_deleted event is built
  // from what was read; a move or a change of its nights committed in between leaves the
  // statement nothing to delete, so the block is read again.
  const sql = deps.sql;
  for (let attempt = 1; ; attempt++) {
    const [found] = await sql<{ listing_id: string; check_in: string; check_out: string }[]>`
      select listing_id, check_in::text, check_out::text from calendar.blocks where workspace_id = ${workspaceId} and external_uid = ${uid}
    `;
    if (!found) return { deleted: false };
    const events = [
      calendarChanged({
        at,
        workspaceId,
        listingId: found.listing_id,
        kind: 'block_deleted',
        holder: { kind: 'block', id: uid },
        released: { checkIn: found.check_in, checkOut: found.check_out },
      }),
    ];
    // One statement: the listing's lock, the block with its claim and event (SQL `calendar.delete_block`).
    const deleted = await withRetries(async () => {
      const [r] = await sql<{ deleted: boolean }[]>`
        select calendar.delete_block(${workspaceId}, ${uid}, ${found.listing_id}, ${found.check_in}::date, ${found.check_out}::date,
                                     ${sql.json(events)}, ${sql.json(currentTraceHeaders())}) as deleted
      `;
      return r!.deleted;
    });
    if (deleted) break;
    if (attempt >= 5) throw serviceUnavailable('the block kept moving between listings; retry');
  }
  deps.eventsCommitted();
  return { deleted: true };
}

/**
 * ListBlocks: the workspace's blocks holding a night in [from, to] (both optional; a
 * block whose check_out equals `from` holds no night on or after it), ordered by
 * check_in, check_out, external_uid; one row more than the page is read for has_more.
 * The statement: blocks-list.ts.
 */
export async function listBlocks(deps: CalendarDeps, req: ListBlocksRequest): Promise<MessageInitShape<typeof ListBlocksResponseSchema>> {
  // Checked against calendar.proto's rules: page >= 0, page_size 0 to PAGE_SIZE_MAX, from/to calendar dates.
  const page = req.page === 0 ? 1 : req.page;
  const pageSize = req.pageSize === 0 ? PAGE_SIZE_DEFAULT : req.pageSize;

  const offset = (page - 1) * pageSize;
  // The page's ids from an index alone, then only those rows; with `from`, one bounded
  // range per length class so the history before `from` is never read (blocks-list.ts,
  // migration 0006).
  const rows = await blockPageQuery(deps.sql, {
    workspaceId: canonicalUuid(req.workspaceId),
    from: req.from ?? null,
    to: req.to ?? null,
    limit: pageSize + 1,
    offset,
  });
  const hasMore = rows.length > pageSize;
  return { items: rows.slice(0, pageSize).map(toBlock), hasMore };
}
