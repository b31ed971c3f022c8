/**
 * The page parameters the contract's lists share: `page` and `page_size` (GET /blocks,
 * GET /properties, the delivery log) and `limit` (the events feed, the request log).
 */
import { Type } from '@sinclair/typebox';
import { PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX } from '../../services/kit/base';
import { filled } from '../contract-schema';

/** 1-based page number, default 1. */
export const Page = filled(Type.Integer({ minimum: 1, default: 1 }));

/** Rows per page, 1 to PAGE_SIZE_MAX, default PAGE_SIZE_DEFAULT. */
export const PageSize = filled(Type.Integer({ minimum: 1, maximum: PAGE_SIZE_MAX, default: PAGE_SIZE_DEFAULT }));

/** Rows of a cursor page, with the same bounds as `page_size`. */
export const Limit = PageSize;
