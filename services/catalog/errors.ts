/**
 * The catalog's own named errors, built from the kit's `failure` (services/kit/rpc/errors.ts
 * holds the shared constructors, `validationFailed` among them, and the one interceptor
 * mapping failures nobody mapped on purpose). Never the submitted value.
 */
import { Code, type ConnectError } from '@connectrpc/connect';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { failure } from '../kit/rpc';

/** NOT_FOUND / PROPERTY_NOT_FOUND: unknown and foreign are indistinguishable (spec "Errors"). */
export const propertyNotFound = (): ConnectError => failure(Code.NotFound, ErrorReason.PROPERTY_NOT_FOUND, 'property not found');

/** NOT_FOUND / LISTING_NOT_FOUND: marketplace-side lookups and public surfaces. */
export const listingNotFound = (): ConnectError => failure(Code.NotFound, ErrorReason.LISTING_NOT_FOUND, 'listing not found');

/** NOT_FOUND / WORKSPACE_NOT_FOUND: operator and marketplace calls naming an unknown workspace. */
export const workspaceNotFound = (): ConnectError => failure(Code.NotFound, ErrorReason.WORKSPACE_NOT_FOUND, 'workspace not found');
