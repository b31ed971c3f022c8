/**
 * The span and the duration metric of one internal RPC, for the kit's client and server
 * interceptors (internal-client.ts, internal-server.ts), as the RPC semantic conventions
 * name them: the span `package.Service/Method` with `rpc.system.name` `connectrpc` and
 * `rpc.method`, the metric `rpc.client.call.duration` or `rpc.server.call.duration` with
 * `rpc.response.status_code` the Connect code (`ok` on success) — and the same code as the
 * span's `rpc.response.status_code` and, on failure, `error.type`.
 */
import { ConnectError, type UnaryRequest, type StreamRequest } from '@connectrpc/connect';
import { codeToString } from '@connectrpc/connect/protocol-connect';
import { SpanKind, type Context, type Span } from '@opentelemetry/api';
import { inSpan } from '../telemetry';
import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions';
import { ATTR_RPC_RESPONSE_STATUS_CODE, recordRpcCall, rpcSpanAttributes } from '../telemetry';

/** Runs `fn` (the rest of the interceptor chain) as one traced and measured RPC. */
export function inRpcSpan<T>(side: 'client' | 'server', req: UnaryRequest | StreamRequest, parent: Context | undefined, fn: (span: Span) => Promise<T>): Promise<T> {
  const service = req.service.typeName;
  const method = `${service}/${req.method.name}`;
  const started = performance.now();
  return inSpan(method, { kind: side === 'server' ? SpanKind.SERVER : SpanKind.CLIENT, parent, attributes: rpcSpanAttributes(service, req.method.name) }, async (span) => {
    let code = 'ok';
    try {
      return await fn(span);
    } catch (err) {
      code = codeToString(ConnectError.from(err).code);
      span.setAttribute(ATTR_ERROR_TYPE, code);
      throw err;
    } finally {
      span.setAttribute(ATTR_RPC_RESPONSE_STATUS_CODE, code);
      recordRpcCall(side, method, code, (performance.now() - started) / 1000);
    }
  });
}
