/**
 * GET /v1/openapi.json: the OpenAPI 3.1 document of the public contract
 * (gateway/openapi.ts), assembled once per process from the declarations of
 * gateway/contract/, whose schemas are the ones the gateway validates with. The same document is committed as docs/openapi.json
 * (`npm run openapi:write`); it does not vary with the server's configuration.
 *
 * No authentication and nothing counted: no token is read and identity is never
 * asked. Like every response under /v1 it carries the RateLimit-* headers (the error
 * mapper's defaults: the full contract quota). HEAD is answered as GET by the contract
 * router; other methods are 405 with `Allow: GET, HEAD`.
 */
import type { Route } from '../contract-router';
import { OPENAPI_PATH, openApiDocument } from '../openapi';

export function openApiRoutes(): Route[] {
  return [
    {
      method: 'GET',
      path: OPENAPI_PATH,
      async handle(ctx) {
        const { text } = openApiDocument();
        ctx.status = 200;
        ctx.type = 'application/json; charset=utf-8';
        ctx.set('Cache-Control', 'public, max-age=300');
        ctx.body = text;
      },
    },
  ];
}
