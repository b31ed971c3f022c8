/**
 * Connect clients for calls between internal services (gRPC over h2c).
 *
 * One Http2SessionManager per base URL is shared by every client of that URL and
 * aborted at shutdown — an open HTTP/2 session would otherwise keep the process
 * alive (stack-notes.md).
 *
 * A service hosted by this same process (its base URL is this process's own internal
 * server) is called in process instead (in-process-transport.ts): same interceptors,
 * same errors, no sockets. Services in other processes are always called over h2c.
 */
import { createClient, type Client, type Interceptor, type Transport } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import type { DescService } from '@bufbuild/protobuf';
import { SpanKind } from '@opentelemetry/api';
import { currentTraceHeaders, inSpan } from './telemetry';
import { createInProcessTransport, type InProcessServices } from './in-process-transport';

/** A CLIENT span per call; its trace context travels in the request headers (`traceparent`). */
export const clientTracingInterceptor: Interceptor = (next) => (req) => {
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
  private readonly clients = new Map<string, Client<DescService>>();
  private local?: { url: string; services: InProcessServices; serverInterceptors: Interceptor[] };

  constructor(private readonly interceptors: Interceptor[] = [], private readonly timeoutMs = 10000) {}

  /**
   * From now on, clients of a service registered in `services` whose base URL is
   * `url` (this process's internal server) call it in process. `serverInterceptors`
   * are the internal server's, so a local call is traced like a network one.
   */
  useInProcess(url: string, services: InProcessServices, serverInterceptors: Interceptor[]): void {
    this.local = { url, services, serverInterceptors };
    this.clients.clear();
  }

  /** A typed client of `service` at `baseUrl` (e.g. http://identity:8081); one per pair, reused. */
  client<T extends DescService>(service: T, baseUrl: string): Client<T> {
    const key = `${service.typeName} ${baseUrl}`;
    let client = this.clients.get(key);
    if (!client) {
      client = createClient(service, this.transport(service, baseUrl)) as unknown as Client<DescService>;
      this.clients.set(key, client);
    }
    return client as unknown as Client<T>;
  }

  private transport(service: DescService, baseUrl: string): Transport {
    let sm = this.sessions.get(baseUrl);
    if (!sm) {
      sm = new Http2SessionManager(baseUrl, { pingIntervalMs: 30000, idleConnectionTimeoutMs: 60000 });
      this.sessions.set(baseUrl, sm);
    }
    const clientInterceptors = [clientTracingInterceptor, ...this.interceptors];
    const network = createGrpcTransport({ baseUrl, sessionManager: sm, interceptors: clientInterceptors, defaultTimeoutMs: this.timeoutMs });
    const local = this.local;
    if (!local || local.url !== baseUrl || !local.services.has(service)) return network;
    return createInProcessTransport({
      services: local.services,
      clientInterceptors,
      serverInterceptors: local.serverInterceptors,
      fallback: network,
      defaultTimeoutMs: this.timeoutMs,
    });
  }

  /** Closes every HTTP/2 session. */
  close(): void {
    for (const sm of this.sessions.values()) sm.abort();
    this.sessions.clear();
    this.clients.clear();
  }
}
