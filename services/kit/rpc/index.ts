/**
 * The internal Connect/gRPC API: server and clients (in process or over the network),
 * authentication against the access policy, the interceptors (errors, request guard,
 * validation, tracing), health and reflection.
 *
 * This file is the module's whole public surface: code outside services/kit/rpc/ imports
 * from here, never from a file inside (eslint.config.mjs, docs/architecture.md "Modules").
 */
export { type AcceptedCaller, ACCESS_POLICY, isAllowed, isRole, type Role, ROLES, SERVICE_ROLES, UNAUTHENTICATED_SERVICES } from './access-policy';
export { errorInterceptor, failure, isUnavailableFailure, notFound, serviceUnavailable, sqlState, SqlState, validationFailed, type Violation } from './errors';
export { encodeGrpcMessage, respellGrpcMessage } from './grpc-message';
export { HealthState } from './health';
export { InProcessServices } from './in-process-transport';
export { authInterceptor, type Caller, CALLER, CLIENT_TOKEN_PREFIX, CLIENT_TOKEN_SHAPE, ClientVerifier, CredentialRegistry, tokenSha256 } from './internal-auth';
export { InternalClients, type InternalTls } from './internal-client';
export { DEFAULT_INTERNAL_SERVER_LIMITS, type InternalServer, type InternalServerTls, serverTracingInterceptor, startInternalServer } from './internal-server';
export { answer, ReflectionIndex } from './reflection';
export { invalidRequest, requestGuardInterceptor, requestViolations } from './request-guard';
export { hasRules, ruleViolations, validationInterceptor } from './validation';
