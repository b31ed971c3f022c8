/** The operations of the Blocks tag of the OpenAPI document (openapi.ts), with their examples (blocks-examples.ts). */
import { type TagOperations, answer, curl, headers, otherMethods, parameterRef, problem, problems, schemaRef, withExamples } from './operation';
import { NOT_ENABLED_DESCRIPTION, VALIDATION_FAILED_REQUEST } from './components-responses';
import { deleteBlockExamples, listBlocksExamples, listListingNightsExamples, putBlockExamples } from './blocks-examples';
import { MAX_NIGHTS, MAX_NIGHTS_READ } from '../../services/kit/base';

export const BLOCKS_OPERATIONS: TagOperations = {
  paths: {
    '/blocks': {
      'x-other-methods': otherMethods('GET, HEAD'),
      get: withExamples(
        {
          operationId: 'listBlocks',
          summary: "List the partner's blocks",
          description: "Only the calling partner's blocks in the key's workspace. A page past the end is `200` with `items: []` and `has_more: false`.",
          tags: ['Blocks'],
          parameters: [parameterRef('from'), parameterRef('to'), parameterRef('page'), parameterRef('page_size')],
          'x-codeSamples': curl('GET', '/blocks?from=2030-07-01&to=2030-07-31&page=1&page_size=50'),
          responses: { '200': answer('One page of blocks.', 'BlockList'), ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_REQUEST) }) },
        },
        listBlocksExamples,
      ),
    },
    '/blocks/{external_uid}': {
      'x-other-methods': otherMethods('PUT, DELETE'),
      parameters: [parameterRef('external_uid')],
      put: withExamples(
        {
          operationId: 'putBlock',
          summary: 'Create, re-confirm or move a block',
          description: `Exactly one of \`provider_id\` and \`listing_id\` (addressing by \`provider_id\` answers \`501\` in every environment: use \`listing_id\`). At most ${MAX_NIGHTS} nights; the departure day stays sellable. An identical retry is a no-op (\`updated\`); other dates move the block in one step. The conflict scan runs on every push.`,
          tags: ['Blocks'],
          'x-codeSamples': curl('PUT', '/blocks/resv-100234'),
          requestBody: { required: true, description: 'The block.', content: { 'application/json': { schema: schemaRef('Block') } } },
          responses: {
            '200': answer('Created (`created`) or re-confirmed or moved (`updated`).', 'BlockPut'),
            ...problems({
              '400': problem('validation_failed', VALIDATION_FAILED_REQUEST),
              '404': 'property_not_found',
              '409': 'conflict',
              '501': problem('not_enabled', NOT_ENABLED_DESCRIPTION),
            }),
          },
        },
        putBlockExamples,
      ),
      delete: withExamples(
        {
          operationId: 'deleteBlock',
          summary: 'Release a block',
          description:
            'Frees only the nights the block still holds; a night unavailable for another reason stays unavailable. `204` whether or not the block existed. To shorten a stay, `PUT` the shorter range.',
          tags: ['Blocks'],
          'x-codeSamples': curl('DELETE', '/blocks/resv-100234'),
          responses: {
            '204': { description: 'Released (or there was nothing to release).', headers: headers() },
            ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_REQUEST) }),
          },
        },
        deleteBlockExamples,
      ),
    },
    '/listings/{listing_id}/nights': {
      'x-other-methods': otherMethods('GET, HEAD'),
      parameters: [parameterRef('listing_id')],
      get: withExamples(
        {
          operationId: 'listListingNights',
          summary: "Read a listing's nights",
          description: [
            `What holds each night of one of the workspace's listings, one item per night of [\`from\`, \`to\`) (at most ${MAX_NIGHTS_READ}): \`free\`, \`blocked\` by one of your blocks, \`booked\` by the marketplace, or \`held\` by a live marketplace hold (the nights of a booking you cancelled as the host read \`booked\`, \`withdrawn: true\`). Nothing about guests.`,
            '',
            "An unknown listing, or another partner's, is `404 property_not_found`, indistinguishably.",
          ].join('\n'),
          tags: ['Blocks'],
          parameters: [parameterRef('nights_from'), parameterRef('nights_to')],
          'x-codeSamples': curl('GET', '/listings/lst_7k2mq4xw6c3rbt5nhd6pvf3j/nights?from=2030-07-01&to=2030-07-08'),
          responses: {
            '200': answer('One item per night of the range.', 'ListingNights'),
            ...problems({
              '400': problem(
                'validation_failed',
                `\`validation_failed\`: the request does not match the schema — path and query parameters checked together, unknown query parameters included; \`to\` not after \`from\` (\`invalid\`) or more than ${MAX_NIGHTS_READ} nights after it (\`maximum\`), reported on \`to\`. \`errors\` names every violation, never a submitted value.`,
              ),
              '404': 'property_not_found',
            }),
          },
        },
        listListingNightsExamples,
      ),
    },
  },
};
