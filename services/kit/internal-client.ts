/**
 * Connect clients for calls between internal services (gRPC over h2c).
 *
 * One Http2SessionManager per base URL is shared by every client of that URL and
 * aborted at shutdown — an open HTTP/2 session would otherwise keep the process
 * alive (stack-notes.md).
 */
import { createClient, type Client, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import type { DescService } from '@bufbuild/protobuf';
import { SpanKind } from '@opentelemetry/api';
import { currentTraceHeaders, inSpan } from './telemetry';

/** A CLIENT span per call; its trace context travels in the request headers (`traceparent`). */
export const clientTracingInterceptor: Interceptor = (next) => async (req) => {
  if (req.service.typeName === 'grpc.health.v1.Health') return next(req);
  return inSpan(
    `${req.service.typeName}/${req.method.name}`,
    {
      kind: SpanKind.CLIENT,
      attributes: { 'rpc.system': 'connect_rpc', 'rpc.service': req.service.typeName, 'rpc.method': req.method.name },
    },
    async () => {
      for (const [k, v] of Object.entries(currentTraceHeaders())) req.header.set(k, v);
      return next(req);
    },
  );
};

export class InternalClients {
  private readonly sessions = new Map<string, Http2SessionManager>();

  constructor(private readonly interceptors: Interceptor[] = [], private readonly timeoutMs = 10000) {}

  /** A typed client of `service` at `baseUrl` (e.g. http://identity:8081). */
  client<T extends DescService>(service: T, baseUrl: string): Client<T> {
    let sm = this.sessions.get(baseUrl);
    if (!sm) {
      sm = new Http2SessionManager(baseUrl, { pingIntervalMs: 30000, idleConnectionTimeoutMs: 60000 });
      this.sessions.set(baseUrl, sm);
    }
    const transport = createGrpcTransport({
      baseUrl,
      sessionManager: sm,
      interceptors: [clientTracingInterceptor, ...this.interceptors],
      defaultTimeoutMs: this.timeoutMs,
    });
    return createClient(service, transport);
  }

  /** Closes every HTTP/2 session. */
  close(): void {
    for (const sm of this.sessions.values()) sm.abort();
    this.sessions.clear();
  }
}
