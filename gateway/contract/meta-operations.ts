/** The operations of the Meta tag of the OpenAPI document (openapi.ts), with their examples (meta-examples.ts). */
import { type TagOperations, curl, headerRef, headers, otherMethods, problemRef, withExamples } from './operation';
import { getOpenApiDocumentExamples } from './meta-examples';

export const META_OPERATIONS: TagOperations = {
  paths: {
    '/openapi.json': {
      'x-other-methods': otherMethods('GET, HEAD'),
      get: withExamples(
        {
          operationId: 'getOpenApiDocument',
          summary: 'This document',
          description: 'The OpenAPI 3.1 document of this contract. No authentication; not counted toward any quota.',
          tags: ['Meta'],
          security: [],
          'x-codeSamples': curl('GET', '/openapi.json', null),
          responses: {
            '200': {
              description: 'The OpenAPI document.',
              headers: headers({ 'Cache-Control': headerRef('Cache-Control-Document') }),
              content: { 'application/json': { schema: { type: 'object', required: ['openapi', 'info'], properties: { openapi: { type: 'string' }, info: { type: 'object' } } } } },
            },
            '500': problemRef('internal_error'),
          },
        },
        getOpenApiDocumentExamples,
      ),
    },
  },
};
