/**
 * The sandbox console's pages (gateway/console.ts serves the files):
 *
 *   GET /console                → 308 to /console/ (the query kept)
 *   GET /console/               → index.html
 *   GET /console/assets/:file   → a hashed script or stylesheet of the build
 *
 * Routes of the one router (contract-router.ts): HEAD is answered as GET, another
 * method is 405 with `Allow`, any other path under /console is the router's 404. The
 * console navigates with the URL's fragment (`#/calendar`), so no other path needs
 * index.html. No token is read, nothing is counted against a quota (the responses
 * carry the error mapper's default RateLimit-* headers, like GET /v1/openapi.json),
 * and nothing is recorded in the request log (no workspace is known).
 */
import type { Route } from '../contract-router';
import { CONSOLE_SECURITY_HEADERS, type ConsoleFiles } from '../console';

export const CONSOLE_ROOT = '/console/';

export function consoleRoutes(files: ConsoleFiles): Route[] {
  return [
    {
      method: 'GET',
      path: '/console',
      async handle(ctx) {
        ctx.set(CONSOLE_SECURITY_HEADERS);
        ctx.redirect(ctx.querystring ? `${CONSOLE_ROOT}?${ctx.querystring}` : CONSOLE_ROOT);
        ctx.status = 308;
      },
    },
    {
      method: 'GET',
      path: CONSOLE_ROOT,
      async handle(ctx) {
        files.sendIndex(ctx);
      },
    },
    {
      method: 'GET',
      path: `${CONSOLE_ROOT}assets/:file`,
      async handle(ctx, raw) {
        files.sendAsset(ctx, raw.file ?? '');
      },
    },
  ];
}
