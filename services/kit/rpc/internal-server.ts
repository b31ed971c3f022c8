/**
 * The internal Connect/gRPC server (h2c, or HTTP/2 over TLS when INTERNAL_TLS_* are set): one per process, hosting every internal
 * service the process runs plus grpc.health.v1.Health and gRPC server reflection
 * (reflection.ts: grpc.reflection.v1 and v1alpha, describing exactly the services
 * hosted). Speaks gRPC, gRPC-Web and the Connect protocol, so stock @grpc/grpc-js
 * clients, grpcurl and `buf curl` work as well as Connect ones.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { ConnectRouter, Interceptor } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { logEvent, type Logger } from '../base';
import { HealthState, registerHealth } from './health';
import { contextFromHeaders } from '../telemetry';
import { inRpcSpan } from './rpc-telemetry';
import { registerReflection } from './reflection';
import { withSpecGrpcMessage } from './grpc-message';

/**
 * A SERVER span and an `rpc.server.call.duration` sample per RPC (rpc-telemetry.ts), continuing the caller's `traceparent` (the kit's client
 * interceptor sends it); the handler runs inside it, so its outbox appends and
 * outgoing calls join the trace. Health checks are not traced (probes every few seconds).
 */
export const serverTracingInterceptor: Interceptor = (next) => (req) => {
  if (req.service.typeName === 'grpc.health.v1.Health') return next(req);
  const headers: Record<string, string> = {};
  req.header.forEach((v, k) => (headers[k] = v));
  return inRpcSpan('server', req, contextFromHeaders(headers), () => next(req));
};

export interface InternalServer {
  /** The bound port (useful when configured as 0). */
  readonly port: number;
  /** Base URL for clients in the same process, e.g. http://127.0.0.1:8081. */
  readonly url: string;
  /** Stops accepting new streams, lets in-flight ones finish within `graceMs`, then closes sessions. */
  close(graceMs: number): Promise<void>;
}

export interface InternalServerOptions {
  host: string;
  port: number;
  log: Logger;
  health: HealthState;
  /** Registers the hosted services' RPC implementations. */
  routes: (router: ConnectRouter) => void;
  interceptors?: Interceptor[];
  /** Serve TLS (HTTP/2 over TLS, ALPN h2) instead of h2c. */
  tls?: InternalServerTls;
  /** Overrides of DEFAULT_INTERNAL_SERVER_LIMITS (tests use small ones). */
  limits?: Partial<InternalServerLimits>;
  /**
   * 'health': a listener serving only grpc.health.v1.Health (HEALTH_PORT); named so in
   * the log. It has no authentication, so it serves no reflection either.
   */
  purpose?: 'internal' | 'health';
}

/** The internal listener's TLS material (PEM) and client-certificate policy. */
export interface InternalServerTls {
  cert: Buffer;
  key: Buffer;
  /** CA bundle client certificates must chain to (mutual TLS). */
  ca?: Buffer;
  /** Refuse connections without a client certificate signed by `ca`. */
  requireClientCert: boolean;
}

/**
 * Resource limits of the internal listener: what one connection or one call may hold.
 * Sized from the largest legitimate message (an UpsertProperty request made from a
 * public body of at most 256 KiB; gateway/body.ts) with room to spare, and well below
 * what would hurt the process.
 */
export interface InternalServerLimits {
  /** Largest request message accepted (RESOURCE_EXHAUSTED above it). */
  readMaxBytes: number;
  /** Largest response message sent (a public photo derivative is the largest). */
  writeMaxBytes: number;
  /** HTTP/2 streams one connection may have open at once (more are refused, REFUSED_STREAM). */
  maxConcurrentStreams: number;
  /** Largest header block of one request. */
  maxHeaderListSize: number;
  /** A call must have sent its whole request within this long, or it is cancelled. */
  requestReadTimeoutMs: number;
  /** A connection with no activity (frames, pings) for this long is closed. */
  sessionIdleTimeoutMs: number;
}

export const DEFAULT_INTERNAL_SERVER_LIMITS: InternalServerLimits = {
  readMaxBytes: 1024 * 1024,
  writeMaxBytes: 32 * 1024 * 1024,
  maxConcurrentStreams: 1000,
  maxHeaderListSize: 16 * 1024,
  requestReadTimeoutMs: 10_000,
  sessionIdleTimeoutMs: 5 * 60_000,
};

/** Starts the h2c server and resolves once it listens. */
export async function startInternalServer(opts: InternalServerOptions): Promise<InternalServer> {
  const limits = { ...DEFAULT_INTERNAL_SERVER_LIMITS, ...opts.limits };
  // grpc-message spelled as the gRPC spec does, so grpc-js clients read it verbatim (grpc-message.ts).
  const handler = withSpecGrpcMessage(
    connectNodeAdapter({
      readMaxBytes: limits.readMaxBytes,
      writeMaxBytes: limits.writeMaxBytes,
      interceptors: [serverTracingInterceptor, ...(opts.interceptors ?? [])],
      routes(router) {
        registerHealth(router, opts.health);
        opts.routes(router);
        // Last: reflection describes every service registered above (and itself).
        if (opts.purpose !== 'health') registerReflection(router, new Set(router.handlers.map((h) => h.service)));
      },
    }),
  );
  const tls = opts.tls;
  const http2Options: http2.ServerOptions = {
    settings: { maxConcurrentStreams: limits.maxConcurrentStreams, maxHeaderListSize: limits.maxHeaderListSize },
    maxSessionMemory: 32,
  };
  const server: http2.Http2Server | http2.Http2SecureServer = tls
    ? http2.createSecureServer(
        {
          ...http2Options,
          cert: tls.cert,
          key: tls.key,
          ca: tls.ca,
          requestCert: tls.requireClientCert,
          rejectUnauthorized: tls.requireClientCert,
          minVersion: 'TLSv1.2',
        },
        handler,
      )
    : http2.createServer(http2Options, handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
    // Idle connections are closed (GOAWAY); clients keep theirs alive with pings.
    s.setTimeout(limits.sessionIdleTimeoutMs, () => s.close());
  });
  // A request that does not finish arriving in time (a trickled or stalled body) is
  // cancelled: it would otherwise hold a stream and its buffers for ever.
  server.on('stream', (stream) => {
    const timer = setTimeout(() => {
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
    }, limits.requestReadTimeoutMs);
    const clear = () => clearTimeout(timer);
    stream.once('end', clear);
    stream.once('close', clear);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  if (opts.purpose === 'health') {
    opts.log.info({ port, host: opts.host }, 'health-only gRPC server bound (h2c, grpc.health.v1.Health only)');
  } else {
    opts.log.info(
      { event: logEvent('rpc.server.bound'), port, host: opts.host, tls: Boolean(tls), client_certificates: tls?.requireClientCert ? 'required' : 'not requested' },
      `internal Connect/gRPC server bound (${tls ? 'TLS' : 'h2c'})`,
    );
  }
  return {
    port,
    url,
    async close(graceMs: number) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // GOAWAY: clients open no new streams here; in-flight streams run to completion.
      for (const s of sessions) s.close();
      const timer = setTimeout(() => {
        for (const s of sessions) s.destroy();
      }, graceMs);
      await closed;
      clearTimeout(timer);
    },
  };
}
