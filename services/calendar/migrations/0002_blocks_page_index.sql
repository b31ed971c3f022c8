-- GET /blocks pages: an index-only scan finds the page's ids (page 2000 of 50 skips
-- 99,950 index entries without touching the table), then only that page's rows are
-- read (ListBlocks in services/calendar/blocks.ts). Replaces blocks_list_idx.
create index blocks_page_idx on blocks (workspace_id, check_in, check_out, external_uid) include (id);
drop index blocks_list_idx;
