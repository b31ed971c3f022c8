/**
 * Connect clients for calls between internal services (gRPC over h2c).
 *
 * One Http2SessionManager per base URL is shared by every client of that URL and
 * aborted at shutdown — an open HTTP/2 session would otherwise keep the process
 * alive.
 *
 * A service hosted by this same process (its base URL is this process's own internal
 * server) is called in process instead (in-process-transport.ts): same interceptors,
 * same errors, no sockets. Services in other processes are always called over h2c.
 */
import { createClient, type Client, type Interceptor, type Transport } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import type { DescService } from '@bufbuild/protobuf';
import { currentTraceHeaders } from '../telemetry';
import { inRpcSpan } from './rpc-telemetry';
import { createInProcessTransport, type InProcessServices } from './in-process-transport';
import { currentRequestId, REQUEST_ID_HEADER } from '../base';
import type { Role } from './access-policy';
import { bearerInterceptor } from './internal-auth';

/**
 * A CLIENT span and an `rpc.client.call.duration` sample per call (rpc-telemetry.ts); its trace context travels in the request headers (`traceparent`),
 * and the public request being served, if any, as `x-request-id` (request-id.ts).
 */
export const clientTracingInterceptor: Interceptor = (next) => (req) => {
  if (req.service.typeName === 'grpc.health.v1.Health') return next(req);
  return inRpcSpan('client', req, undefined, async () => {
    for (const [k, v] of Object.entries(currentTraceHeaders())) req.header.set(k, v);
    const requestId = currentRequestId();
    if (requestId !== undefined && !req.header.has(REQUEST_ID_HEADER)) req.header.set(REQUEST_ID_HEADER, requestId);
    return next(req);
  });
};

/** TLS material for https:// base URLs (PEM). */
export interface InternalTls {
  /** CA bundle trusted for the servers' certificates (Node's own trust store otherwise). */
  ca?: Buffer;
  /** Client certificate and key, presented when the server asks (mutual TLS). */
  cert?: Buffer;
  key?: Buffer;
}

export interface InternalClientOptions {
  /** This process's credential, sent as `authorization: Bearer` on network calls (INTERNAL_TOKEN). */
  token?: string;
  tls?: InternalTls;
}

/** What every view of one InternalClients shares: the HTTP/2 sessions and the in-process registry. */
interface SharedState {
  readonly sessions: Map<string, Http2SessionManager>;
  local?: { url: string; services: InProcessServices; serverInterceptors: Interceptor[] };
  /** Bumped by useInProcess: views drop the clients they built before. */
  generation: number;
}

/**
 * The internal clients of a process. `as(role)` gives the view one component uses
 * (the gateway, a service): its in-process calls carry that role (internal-auth.ts),
 * its network calls the process's credential. Views share the HTTP/2 sessions.
 */
export class InternalClients {
  private readonly clients = new Map<string, Client<DescService>>();
  private generation = 0;
  private readonly shared: SharedState;

  constructor(
    private readonly interceptors: Interceptor[] = [],
    private readonly timeoutMs = 10000,
    private readonly options: InternalClientOptions = {},
    private readonly role?: Role,
    shared?: SharedState,
  ) {
    this.shared = shared ?? { sessions: new Map(), generation: 0 };
  }

  /** The view of component `role`: same sessions and credential, calls in process carry `role`. */
  as(role: Role): InternalClients {
    return new InternalClients(this.interceptors, this.timeoutMs, this.options, role, this.shared);
  }

  /**
   * From now on, clients of a service registered in `services` whose base URL is
   * `url` (this process's internal server) call it in process. `serverInterceptors`
   * are the internal server's, so a local call is traced and authorised like a network one.
   */
  useInProcess(url: string, services: InProcessServices, serverInterceptors: Interceptor[]): void {
    this.shared.local = { url, services, serverInterceptors };
    this.shared.generation++;
  }

  /** A typed client of `service` at `baseUrl` (e.g. http://identity:8081); one per pair, reused. */
  client<T extends DescService>(service: T, baseUrl: string): Client<T> {
    if (this.generation !== this.shared.generation) {
      this.clients.clear();
      this.generation = this.shared.generation;
    }
    const key = `${service.typeName} ${baseUrl}`;
    let client = this.clients.get(key);
    if (!client) {
      client = createClient(service, this.transport(service, baseUrl));
      this.clients.set(key, client);
    }
    return client as unknown as Client<T>;
  }

  private transport(service: DescService, baseUrl: string): Transport {
    let sm = this.shared.sessions.get(baseUrl);
    if (!sm) {
      const tls = this.options.tls;
      sm = new Http2SessionManager(
        baseUrl,
        { pingIntervalMs: 30000, idleConnectionTimeoutMs: 60000 },
        baseUrl.startsWith('https:') && tls ? { ca: tls.ca, cert: tls.cert, key: tls.key } : undefined,
      );
      this.shared.sessions.set(baseUrl, sm);
    }
    const clientInterceptors = [clientTracingInterceptor, ...this.interceptors];
    const networkInterceptors = this.options.token ? [...clientInterceptors, bearerInterceptor(this.options.token)] : clientInterceptors;
    const network = createGrpcTransport({ baseUrl, sessionManager: sm, interceptors: networkInterceptors, defaultTimeoutMs: this.timeoutMs });
    const local = this.shared.local;
    if (!local || local.url !== baseUrl || !local.services.has(service)) return network;
    return createInProcessTransport({
      services: local.services,
      clientInterceptors,
      serverInterceptors: local.serverInterceptors,
      fallback: network,
      defaultTimeoutMs: this.timeoutMs,
      callerRole: this.role,
    });
  }

  /** Closes every HTTP/2 session (of every view). */
  close(): void {
    for (const sm of this.shared.sessions.values()) sm.abort();
    this.shared.sessions.clear();
    this.clients.clear();
  }
}
