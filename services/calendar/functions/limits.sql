-- version: 1
-- The night limit (spec "Limits"): services/kit/limits.ts MAX_NIGHTS is the same number
-- for TypeScript; test/kit/limits-agree.test.ts compares them. The tables' night-range
-- constraints call it: raising it needs no constraint change, lowering it needs a
-- migration that re-checks the rows.

-- ---------------------------------------------------------------------------------------
-- The night limit (spec "Limits"): services/kit/limits.ts MAX_NIGHTS is the same number
-- for TypeScript; test/kit/limits-agree.test.ts compares them.
create or replace function max_nights() returns integer
language sql immutable parallel safe
return 730;
