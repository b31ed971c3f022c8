/** The operations of the Properties tag of the OpenAPI document (openapi.ts), with their examples (properties-examples.ts). */
import { type TagOperations, answer, curl, otherMethods, parameterRef, problem, problems, schemaRef, withExamples } from './operation';
import { VALIDATION_FAILED_PARAMETERS, VALIDATION_FAILED_REQUEST } from './components-responses';
import { getPropertyExamples, listPropertiesExamples, upsertPropertyExamples } from './properties-examples';

export const PROPERTIES_OPERATIONS: TagOperations = {
  paths: {
    '/properties': {
      'x-other-methods': otherMethods('GET, HEAD'),
      get: withExamples(
        {
          operationId: 'listProperties',
          summary: 'List the properties',
          description:
            'Every property of the workspace, a page at a time, ordered by `provider_id` (byte order), each as `GET /properties/{provider_id}` reads it. A page past the end is `200` with `items: []` and `has_more: false`.',
          tags: ['Properties'],
          'x-codeSamples': curl('GET', '/properties?page=1&page_size=50'),
          responses: { '200': answer('One page of properties.', 'StoredPropertyList'), ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_PARAMETERS) }) },
          parameters: [parameterRef('page'), parameterRef('page_size')],
        },
        listPropertiesExamples,
      ),
    },
    '/properties/{provider_id}': {
      'x-other-methods': otherMethods('PUT, GET, HEAD'),
      parameters: [parameterRef('provider_id')],
      get: withExamples(
        {
          operationId: 'getProperty',
          summary: 'Read a property back',
          description: [
            "The property as last accepted by `PUT /properties/{provider_id}` (`property`, exactly as sent), with the upsert answer's `listing_id`, `publishable`, `missing` and `unknown_amenities` as they stand now, and each photo's state: `processing`, `ready`, or `rejected` with its `reason`. Poll it after a push to see `photos_processing` clear without pushing again.",
            '',
            "A `provider_id` this workspace never pushed (or another partner's) is `404 property_not_found`, indistinguishably.",
          ].join('\n'),
          tags: ['Properties'],
          'x-codeSamples': curl('GET', '/properties/villa-42'),
          responses: {
            '200': answer("The property as last accepted, its publishability and each photo's state.", 'StoredProperty'),
            ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_PARAMETERS), '404': 'property_not_found' }),
          },
        },
        getPropertyExamples,
      ),
      put: withExamples(
        {
          operationId: 'upsertProperty',
          summary: 'Create or replace a property',
          description:
            'The body is the complete property: anything omitted is removed (replace, not merge). A property with no price, photos or amenities is accepted and held incomplete; the first push of a complete property answers `publishable: false` with `photos_processing`.',
          tags: ['Properties'],
          'x-codeSamples': curl('PUT', '/properties/villa-42'),
          requestBody: { required: true, description: 'The complete property.', content: { 'application/json': { schema: schemaRef('Property') } } },
          responses: { '200': answer('Created or updated.', 'PropertyUpsert'), ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_REQUEST) }) },
        },
        upsertPropertyExamples,
      ),
    },
  },
};
