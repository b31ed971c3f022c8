/** The operations of the Authentication tag of the OpenAPI document (openapi.ts), with their examples (token-examples.ts). */
import { type TagOperations, answer, curl, otherMethods, problemRef, responseRef, withExamples } from './operation';
import { TOKEN_QUOTA } from './document-values';
import { exchangeTokenExamples } from './token-examples';

export const TOKEN_OPERATIONS: TagOperations = {
  paths: {
    '/token': {
      'x-other-methods': otherMethods('POST'),
      post: withExamples(
        {
          operationId: 'exchangeToken',
          summary: 'Exchange an API key for an access token',
          description: `The API key is read only from \`Authorization: Bearer <API_KEY>\`; the body is ignored. An unknown key, a revoked key, a wrong secret and a missing header all get the one identical \`401\`. Its own ceiling per key (by default ${TOKEN_QUOTA} exchanges per hour) is what its \`RateLimit-*\` headers describe; exchanges do not count toward the contract quota.`,
          tags: ['Authentication'],
          security: [{ apiKey: [] }],
          'x-codeSamples': curl('POST', '/token', 'API_KEY'),
          requestBody: {
            required: false,
            description:
              'Ignored: the key is read from the `Authorization` header only. Any body, of any content type, or none at all gets the same answer: it is never read or parsed.',
            content: { '*/*': { schema: { description: 'Anything, or nothing: not read.' } } },
          },
          responses: {
            '200': answer('A fresh access token.', 'Token'),
            '401': responseRef('TokenRefused'),
            '429': responseRef('TokenRateLimited'),
            '500': problemRef('internal_error'),
            '503': responseRef('TokenNotConfigured'),
          },
        },
        exchangeTokenExamples,
      ),
    },
  },
};
