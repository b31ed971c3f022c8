/**
 * The Example Objects of the Meta operations (meta-operations.ts). A request example and the response example of the same name
 * belong together; a problem example gives its request and violations, and its document is rendered for its response's code (operation.ts).
 */
import { API_VERSION, SPEC_DATE } from './document-values';
import type { OperationExamples } from './operation';

/** GET /openapi.json */
export const getOpenApiDocumentExamples: OperationExamples = {
  responses: {
    '200': {
      document: { summary: 'This document (abridged)', value: { openapi: '3.1.0', info: { title: 'Partner Synchronisation API', version: `${API_VERSION} (${SPEC_DATE})` } } },
    },
  },
};
