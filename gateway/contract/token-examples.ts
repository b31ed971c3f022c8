/**
 * The Example Objects of the Authentication operations (token-operations.ts). A request example and the response example of the same name
 * belong together; a problem example gives its request and violations, and its document is rendered for its response's code (operation.ts).
 */
import { TOKEN_TTL_SECONDS } from './document-values';
import type { OperationExamples } from './operation';

/** POST /token */
export const exchangeTokenExamples: OperationExamples = {
  request: { token: { summary: 'Any body is ignored: this one, another or none gets the same token', value: { grant_type: 'client_credentials' } } },
  responses: {
    '200': {
      token: {
        summary: "A sandbox workspace's token",
        value: {
          access_token: 'pst_eyJ3IjoiOGE1ZTJjNjEiLCJlIjoxOTI0OTkxODAwfQ.q3V9bX2mYc7Kf0aLr8sT1wE4uJ6nP5hZ',
          token_type: 'Bearer',
          expires_in: TOKEN_TTL_SECONDS,
          workspace_id: '8a5e2c61-1f3b-4d7e-9c0a-6b2d4e8f1a37',
          sandbox: true,
        },
      },
    },
  },
};
