/**
 * Writing success responses: JSON serialised here (so the content type is exactly
 * what the spec says), and 204 with no body.
 */
import type { GatewayContext } from './request-context';

/** `status` with a JSON body (`application/json; charset=utf-8`). */
export function sendJson(ctx: GatewayContext, status: number, body: unknown): void {
  ctx.status = status;
  ctx.type = 'application/json; charset=utf-8';
  ctx.body = JSON.stringify(body);
}

/** `204 No Content`. */
export function sendNoContent(ctx: GatewayContext): void {
  ctx.status = 204;
  ctx.body = null;
}
