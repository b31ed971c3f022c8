/**
 * Properties (GET /v1/properties → CatalogService.ListProperties, 200 `{items, has_more}`
 * of the same items, ordered by provider_id, paged like GET /v1/blocks):
 *
 * - PUT /v1/properties/{provider_id} → CatalogService.UpsertProperty (spec "PUT
 *   /properties/{provider_id}"; 200 with the upsert response);
 * - GET /v1/properties/{provider_id} → CatalogService.GetProperty, 200 with the property
 *   as last accepted, its publishability and each photo's state (presenters/property-read.ts);
 *   an unknown or another workspace's provider_id is the same 404 property_not_found.
 */
import { contractRoute } from '../contract-route';
import type { Route } from '../contract-router';
import { presentPropertyUpsert, upsertPropertyRequest } from '../presenters/properties';
import { presentPropertyList, presentStoredProperty } from '../presenters/property-read';
import { pageRequest } from '../presenters/blocks';
import { sameNames } from '../internal-fields';
import { sendJson } from '../respond';
import { validator } from '../validate';
import type { RouteDeps } from './deps';
import { PropertiesQuery, PropertyBody, PropertyPath } from '../contract/properties';
import { noPath, noQuery } from './shared-parameters';

const propertyBody = validator(PropertyBody);
const propertyPath = validator(PropertyPath, 'path');
const propertiesQuery = validator(PropertiesQuery, 'query');

/** UpsertPropertyRequest's fields in the contract's names: `property` is the body, `property.photos[0].url` is `photos[0].url`. */
export const PROPERTY_INTERNAL_FIELDS = { provider_id: 'provider_id', property: '' } as const;

export function propertyRoutes(deps: RouteDeps): Route[] {
  return [
    contractRoute(
      {
        method: 'PUT',
        path: '/v1/properties/:provider_id',
        params: propertyPath,
        query: noQuery,
        body: { schema: propertyBody, empty: 'required' },
        internalFields: PROPERTY_INTERNAL_FIELDS,
        async call(ctx, { params, body }, caller) {
          const res = await deps.upstreams.catalog.upsertProperty(upsertPropertyRequest(caller.workspaceId, params.provider_id, body));
          sendJson(ctx, 200, presentPropertyUpsert(res));
        },
      },
      deps.contract,
    ),
    contractRoute(
      {
        method: 'GET',
        path: '/v1/properties/:provider_id',
        params: propertyPath,
        query: noQuery,
        internalFields: sameNames('provider_id'),
        async call(ctx, { params }, caller) {
          const res = await deps.upstreams.catalog.getProperty({ workspaceId: caller.workspaceId, providerId: params.provider_id });
          sendJson(ctx, 200, presentStoredProperty(res));
        },
      },
      deps.contract,
    ),
    contractRoute(
      {
        method: 'GET',
        path: '/v1/properties',
        params: noPath,
        query: propertiesQuery,
        internalFields: sameNames('page', 'page_size'),
        async call(ctx, { query }, caller) {
          const res = await deps.upstreams.catalog.listProperties({ workspaceId: caller.workspaceId, ...pageRequest(query) });
          sendJson(ctx, 200, presentPropertyList(res));
        },
      },
      deps.contract,
    ),
  ];
}
