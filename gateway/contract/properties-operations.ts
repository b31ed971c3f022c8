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
          'x-codeSamples': curl('curl -X GET "$BASE_URL/properties?page=1&page_size=50" \\\n  -H "Authorization: Bearer $ACCESS_TOKEN"'),
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
          'x-codeSamples': curl('curl -X GET "$BASE_URL/properties/villa-42" \\\n  -H "Authorization: Bearer $ACCESS_TOKEN"'),
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
          'x-codeSamples': curl(
            'curl -X PUT "$BASE_URL/properties/villa-42" \\\n  -H "Authorization: Bearer $ACCESS_TOKEN" \\\n  -H \'Content-Type: application/json\' \\\n  --data \'{"name":"Villa Azure","description":"A quiet two-bedroom villa with a garden, ten minutes on foot from the beach.","property_type":"villa","address":{"line1":"12 Chemin des Pins","city":"Antibes","region":"Provence-Alpes-Côte d\'\\\'\'Azur","postal_code":"06600","country":"FR","latitude":43.5804,"longitude":7.1251},"occupancy":{"max_guests":4,"bedrooms":2,"beds":3,"bathrooms":1},"base_rate":{"value":"180.00","currency":"EUR"},"amenities":["wifi","kitchen","pool","air_conditioning","parking"],"photos":[{"url":"https://images.partner.example/villa-42/living-room.jpg","position":0},{"url":"https://images.partner.example/villa-42/terrace.jpg","position":1}],"check_in_time":"15:00","check_out_time":"11:00","status":"listed"}\'',
          ),
          requestBody: { required: true, description: 'The complete property.', content: { 'application/json': { schema: schemaRef('Property') } } },
          responses: { '200': answer('Created or updated.', 'PropertyUpsert'), ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_REQUEST) }) },
        },
        upsertPropertyExamples,
      ),
    },
  },
};
