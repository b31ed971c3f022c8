/**
 * The Example Objects of the Blocks operations (blocks-operations.ts). A request example and the response example of the same name
 * belong together; a problem example gives its request and violations, and its document is rendered for its response's code (operation.ts).
 */
import type { OperationExamples } from './operation';

/** GET /blocks */
export const listBlocksExamples: OperationExamples = {
  responses: {
    '200': {
      page: {
        summary: 'The blocks holding a night in July 2030',
        value: {
          items: [
            { external_uid: 'resv-100234', listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j', check_in: '2030-07-10', check_out: '2030-07-14', reason: 'reserved', nights: 4 },
            { external_uid: 'maint-7', listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j', check_in: '2030-07-20', check_out: '2030-07-22', reason: 'maintenance', nights: 2 },
          ],
          has_more: false,
        },
      },
      past_the_end: { summary: 'A page past the end', 'x-request': { query: { page: '9' } }, value: { items: [], has_more: false } },
    },
    '400': {
      invalid: {
        summary: 'A page size over 200 and a parameter the endpoint does not have',
        'x-request': { query: { page_size: '500', workspace: 'other' } },
        errors: [
          { field: 'workspace', code: 'unknown_field' },
          { field: 'page_size', code: 'maximum' },
        ],
      },
    },
  },
};

/** PUT /blocks/{external_uid} */
export const putBlockExamples: OperationExamples = {
  request: {
    created: {
      summary: "Four nights taken on the partner's platform",
      value: { listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j', check_in: '2030-07-10', check_out: '2030-07-14', reason: 'reserved' },
    },
    moved: {
      summary: 'The same reservation, later: the block moves',
      value: { listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j', check_in: '2030-07-12', check_out: '2030-07-15', reason: 'reserved' },
    },
    unknown_listing: {
      summary: "A listing that does not exist or is another partner's",
      value: { listing_id: 'lst_zzzzzzzzzzzzzzzzzzzzzzzz', check_in: '2030-07-10', check_out: '2030-07-14', reason: 'reserved' },
    },
    colliding: {
      summary: 'A range some of whose nights a marketplace guest holds',
      value: { listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j', check_in: '2030-08-01', check_out: '2030-08-05', reason: 'reserved' },
    },
    by_provider_id: {
      summary: "Addressed by the partner's property id",
      value: { provider_id: 'villa-42', check_in: '2030-07-10', check_out: '2030-07-14', reason: 'owner_stay' },
    },
  },
  responses: {
    '200': {
      created: { summary: 'Created', value: { result: 'created', nights: 4, listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j' } },
      moved: { summary: 'Moved in one step', value: { result: 'updated', nights: 3, listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j' } },
    },
    '400': {
      invalid: {
        summary: 'Both identifiers, a date that is not a date, a reason outside the set and a guest name',
        'x-request': {
          body: { provider_id: 'villa-42', listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j', check_in: '2030-07-32', check_out: '2030-08-02', reason: 'guest', guest_name: 'Ada' },
        },
        errors: [
          { field: 'listing_id', code: 'one_of' },
          { field: 'guest_name', code: 'unknown_field' },
          { field: 'check_in', code: 'format' },
          { field: 'reason', code: 'enum' },
        ],
      },
    },
    '501': {
      by_provider_id: { summary: 'A block addressed by `provider_id` (every environment)' },
      production: { summary: "Any valid request with a production workspace's token" },
    },
  },
};

/** DELETE /blocks/{external_uid} */
export const deleteBlockExamples: OperationExamples = {
  responses: {
    '400': {
      invalid: {
        summary: 'An `external_uid` over 255 characters',
        'x-request': {
          path: {
            external_uid:
              'rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr',
          },
        },
        errors: [{ field: 'external_uid', code: 'max_length' }],
      },
    },
  },
};

/** GET /listings/{listing_id}/nights */
export const listListingNightsExamples: OperationExamples = {
  responses: {
    '200': {
      week: {
        summary: 'A week: a block, a booking, a live hold',
        value: {
          items: [
            { date: '2030-07-01', state: 'free' },
            { date: '2030-07-02', state: 'blocked', external_uid: 'res-2030-0042' },
            { date: '2030-07-03', state: 'blocked', external_uid: 'res-2030-0042' },
            { date: '2030-07-04', state: 'booked', booking_reference: 'BK7Q2M4X6C3R' },
            { date: '2030-07-05', state: 'booked', booking_reference: 'BK7Q2M4X6C3R' },
            { date: '2030-07-06', state: 'held' },
            { date: '2030-07-07', state: 'free' },
          ],
        },
      },
    },
    '400': {
      invalid: {
        summary: '`to` not after `from`, and a parameter the endpoint does not have',
        'x-request': { path: { listing_id: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j' }, query: { from: '2030-07-08', to: '2030-07-01', guest: 'yes' } },
        errors: [
          { field: 'guest', code: 'unknown_field' },
          { field: 'to', code: 'invalid' },
        ],
      },
    },
  },
};
