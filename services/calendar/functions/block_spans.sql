-- version: 1
-- The block length classes of ListBlocks' `from` scan (docs/calendar.md "Listing blocks by
-- date"; the index blocks_span_page_idx and the reasoning are in
-- services/calendar/migrations/0006_blocks_span_index.sql). block_span_class is an index
-- expression: a new version that changes what it answers must come with a migration
-- that rebuilds blocks_span_page_idx. A block of class k has at most
-- block_span_max_nights(k) nights (test/calendar/blocks-list-sql.test.ts checks every
-- length).

create or replace function block_span_class(p_check_in date, p_check_out date) returns integer
language sql immutable strict parallel safe
return width_bucket(p_check_out - p_check_in, '{2,3,5,9,17,33,65,129,257}'::integer[]);


create or replace function block_span_max_nights(p_class integer) returns integer
language sql immutable strict parallel unsafe
return case when p_class >= 9 then max_nights() else 1 << p_class end;
