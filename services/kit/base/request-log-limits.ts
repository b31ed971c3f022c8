/**
 * The request log's limits on one record (docs/operations.md "Request log"), named once
 * for TypeScript: the gateway bounds what it records to them
 * (gateway/request-log-sanitiser.ts), so that identity, which refuses a record beyond
 * them (services/identity/request-log-intake.ts), never has to.
 *
 * Identity enforces them as the .proto rules of RecordedRequest and RecordedViolation
 * (identity.proto; the protovalidate rules are where internal requests' shapes are
 * declared), and identity.request_log checks some again (identity migration 0006);
 * test/identity/request-log-limits.test.ts fails when either disagrees with these.
 */
export const REQUEST_LOG_LIMITS = {
  /** Characters of a violation's `field` path (RecordedViolation.field). */
  fieldPath: 512,
  /** Characters of a problem or violation code. */
  code: 64,
  /** Violations kept of one answer (RecordedRequest.errors). */
  violations: 100,
  /** Path parameters of one route (RecordedRequest.path_params pairs). */
  pathParams: 8,
  /** Characters of a path parameter's name. */
  pathParamName: 64,
  /** Characters of a path parameter's value. */
  pathParamValue: 1024,
  /** Characters of a route template (`/v1/blocks/{external_uid}`). */
  route: 200,
  /** Characters of an HTTP method. */
  method: 16,
  /** Characters of a key id. */
  keyId: 64,
} as const;
