-- GET /blocks?from=… without reading the workspace's history (issue 14 item 4;
-- docs/calendar.md "Listing blocks by date").
--
-- `from` keeps blocks with check_out > from, but blocks_page_idx (migration 0002) leads
-- with check_in, the decided order: the scan for a `from` page started at the
-- workspace's first block and skipped every block that ended before `from`, so its
-- cost grew with the history (~7,800 buffers, 33–36 ms at 1,000,000 blocks).
--
-- A block of at most N nights that holds a night after `from` starts after from - N.
-- N = 730 (blocks_nights) bounds the scan to two years before `from`, still ~50 times
-- what a page needs when blocks are 1–30 nights. So blocks are split by length into
-- classes, each with its own bound, and ListBlocks reads one check_in range per class,
-- merged in the decided order (a Merge Append of 10 index-only scans of the index
-- below, services/calendar/blocks-list.ts):
--
--   class k (0..8): 2^(k-1) < nights <= 2^k   (1; 2; 3–4; 5–8; …; 129–256)
--   class 9:        257 <= nights <= 730      (blocks_nights caps every block at 730)
--
--   scan of class k: check_in in (from - block_span_max_nights(k), to],
--                    keeping check_out > from
--
-- Within its range a class skips only blocks that started at most twice their own
-- length before `from`, so what a page reads is about the blocks holding a night at
-- `from`, whatever the length of the history.
--
-- Exactness: a block of class k has nights <= block_span_max_nights(k) (checked for
-- every length 1–730 by test/calendar/blocks-list-sql.test.ts), so no block with
-- check_out > from falls outside its class's range. Only calendar.blocks is read:
-- marketplace holds and bookings live in their own tables. Raising the 730 limit of
-- blocks_nights means raising block_span_max_nights(9) in a new migration.

create function block_span_class(p_check_in date, p_check_out date) returns integer
language sql immutable strict parallel safe
return width_bucket(p_check_out - p_check_in, '{2,3,5,9,17,33,65,129,257}'::integer[]);

-- PARALLEL UNSAFE on purpose: ListBlocks calls it in every class's range (where it
-- folds to a constant), which keeps that statement out of parallel plans. The planner
-- underestimates how many blocks a class range holds (check_in and check_out are
-- correlated), and for a deep page it then preferred a parallel Sort of every match
-- (Gather Merge over a Parallel Append: 58 ms for page 1000 of a `from` listing at
-- 1,000,000 blocks, three processes busy) to merging the ordered ranges (8–14 ms, one).
create function block_span_max_nights(p_class integer) returns integer
language sql immutable strict parallel unsafe
return case when p_class >= 9 then 730 else 1 << p_class end;

-- The class, then the decided order; `id` included so a page's ids come from the
-- index alone, as with blocks_page_idx (which stays for pages without `from`).
create index blocks_span_page_idx on blocks
  (workspace_id, block_span_class(check_in, check_out), check_in, check_out, external_uid) include (id);
