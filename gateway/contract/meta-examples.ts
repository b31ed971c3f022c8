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
