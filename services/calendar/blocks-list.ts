/**
 * The statement behind ListBlocks (GET /v1/blocks): one page of a workspace's blocks
 * holding a night in [from, to] (both optional), ordered by check_in, check_out,
 * external_uid (docs/contract-gaps.md "`GET /blocks`"), `limit` rows from `offset`.
 *
 * Two steps, as since migration 0002: the page's ids from an index alone (a deep page
 * skips index entries, not table rows), then only those rows.
 *
 * - Without `from`: one range of blocks_page_idx (workspace_id, check_in, …), from the
 *   workspace's first block (`to` ends the range).
 * - With `from`: `check_out > from` is not a range of a check_in-leading index, and
 *   scanning from the first block skipped the whole history. Blocks are split by
 *   length into SPAN_CLASSES classes (migration 0006: `calendar.block_span_class`), and
 *   a block of class k that holds a night after `from` starts after
 *   from - block_span_max_nights(k). So the ids come from one bounded range of
 *   blocks_span_page_idx (workspace_id, class, check_in, …) per class, each in the
 *   decided order, merged by PostgreSQL (Merge Append) in that order: the cost follows
 *   the blocks around `from` and the page, not the history.
 *
 * Each class's subquery keeps its own ORDER BY: it is what lets the planner merge the
 * ordered index scans instead of sorting every match (a UNION ALL member with a WHERE
 * clause is planned as its own subquery, whose ordering is otherwise dropped). The
 * outer ORDER BY alone decides the result's order, whatever the plan.
 */
import type { Sql } from '../kit/db';

/** Number of length classes of `calendar.block_span_class` (0..9, migration 0006). */
export const SPAN_CLASSES = 10;

export interface BlockPageRequest {
  /** Canonical (lower-case) workspace id. */
  workspaceId: string;
  /** "YYYY-MM-DD": only blocks with check_out > from. */
  from: string | null;
  /** "YYYY-MM-DD": only blocks with check_in <= to. */
  to: string | null;
  limit: number;
  offset: number;
}

/** A block row as stored: what the page statement and `calendar.put_block` read back. */
export interface BlockRow {
  id: string;
  external_uid: string;
  listing_id: string;
  check_in: string;
  check_out: string;
  reason: string;
  nights: number;
  created_at: Date;
  updated_at: Date;
}

/** The page's ids (with their sort keys), in the decided order. */
function pageIds(sql: Sql, q: BlockPageRequest) {
  // A new fragment per use: each occurrence carries its own parameter.
  const toCond = () => (q.to === null ? sql`` : sql`and p.check_in <= ${q.to}::date`);
  if (q.from === null) {
    return sql`
      select p.id, p.check_in, p.check_out, p.external_uid
      from calendar.blocks p
      where p.workspace_id = ${q.workspaceId} ${toCond()}
      order by p.check_in, p.check_out, p.external_uid
      limit ${q.limit} offset ${q.offset}`;
  }
  const from = q.from;
  const legs = Array.from({ length: SPAN_CLASSES }, (_, k) => {
    // A literal, not a parameter: the planner matches it to the index's class column
    // and folds block_span_max_nights(k) to a constant.
    const cls = sql.unsafe(String(k));
    return sql`(
      select p.id, p.check_in, p.check_out, p.external_uid
      from calendar.blocks p
      where p.workspace_id = ${q.workspaceId}
        and calendar.block_span_class(p.check_in, p.check_out) = ${cls}
        and p.check_in > ${from}::date - calendar.block_span_max_nights(${cls})
        and p.check_out > ${from}::date
        ${toCond()}
      order by p.check_in, p.check_out, p.external_uid)`;
  });
  const union = legs.reduce((all, leg) => sql`${all} union all ${leg}`);
  return sql`
    select u.id, u.check_in, u.check_out, u.external_uid
    from (${union}) u
    order by u.check_in, u.check_out, u.external_uid
    limit ${q.limit} offset ${q.offset}`;
}

/** The page statement (not yet run: await it, or nest it, e.g. in an EXPLAIN). */
export function blockPageQuery(sql: Sql, q: BlockPageRequest) {
  return sql<BlockRow[]>`
    with page as (${pageIds(sql, q)})
    select b.id, b.external_uid, b.listing_id, b.check_in::text, b.check_out::text, b.reason,
           b.check_out - b.check_in as nights, b.created_at, b.updated_at
    from page join calendar.blocks b on b.id = page.id
    order by page.check_in, page.check_out, page.external_uid
  `;
}
